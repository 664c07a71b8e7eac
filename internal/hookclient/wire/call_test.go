package wire

import (
	"bytes"
	"encoding/base64"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/hookclient/sockettest"
)

func httpAnswer(status, body string) string {
	return "HTTP/1.1 " + status + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
}

func TestCall(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 300<<10) // many reads, past any first buffer
	cases := []struct {
		name    string
		answer  func(c net.Conn, req []byte)
		timeout time.Duration
		want    string // stdout, or the error's text
		wantErr bool
	}{
		{"an answer", func(c net.Conn, req []byte) {
			if !bytes.HasPrefix(req, []byte("POST /v1/hook/judge HTTP/1.1\r\n")) {
				io.WriteString(c, httpAnswer("400 Bad Request", "bad"))
				return
			}
			io.WriteString(c, httpAnswer("200 OK", `{"exit":0,"stdout":"`+base64.StdEncoding.EncodeToString([]byte("ok"))+`","stderr":null}`))
		}, time.Second, "ok", false},
		{"a large answer", func(c net.Conn, req []byte) {
			io.WriteString(c, httpAnswer("200 OK", `{"exit":0,"stdout":"`+base64.StdEncoding.EncodeToString(big)+`","stderr":null}`))
		}, 5 * time.Second, string(big), false},
		{"no answer", func(c net.Conn, req []byte) {
			time.Sleep(2 * time.Second)
		}, 200 * time.Millisecond, "no answer within 200ms", true},
		{"half an answer, then silence", func(c net.Conn, req []byte) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\n")
			time.Sleep(2 * time.Second)
		}, 200 * time.Millisecond, "no answer within 200ms", true},
		{"closed at once", func(c net.Conn, req []byte) {}, time.Second, "malformed answer", true},
		{"an error status", func(c net.Conn, req []byte) {
			io.WriteString(c, httpAnswer("403 Forbidden", "caller unknown"))
		}, time.Second, "daemon answered HTTP/1.1 403 Forbidden: caller unknown", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := sockettest.Serve(t, tc.answer)
			start := time.Now()
			resp, err := Call(sock, RouteJudge, Request{Args: []string{"a"}, Stdin: []byte("{}")}, tc.timeout)
			if took := time.Since(start); took > tc.timeout+time.Second {
				t.Fatalf("took %v with a %v deadline", took, tc.timeout)
			}
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || string(resp.Stdout) != tc.want {
				t.Fatalf("resp = %v, %v", resp != nil, err)
			}
		})
	}
}

func TestCallNoDaemon(t *testing.T) {
	_, err := Call(filepath.Join(t.TempDir(), "none.sock"), RouteGate, Request{}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
}
