package hookclient

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/hookclient/sockettest"
)

func TestSocket(t *testing.T) {
	tests := []struct {
		name, env string
		args      []string
		sock      string
		rest      []string
	}{
		{"none", "", []string{"-runtime", "claude"}, "", []string{"-runtime", "claude"}},
		{"env", "/e.sock", []string{"-headless"}, "/e.sock", []string{"-headless"}},
		{"flag beats env", "/e.sock", []string{"--socket", "/f.sock", "-headless"}, "/f.sock", []string{"-headless"}},
		{"flag=", "", []string{"-runtime=codex", "-socket=/f.sock"}, "/f.sock", []string{"-runtime=codex"}},
		{"timeout stripped", "", []string{"--socket-timeout", "2s", "--socket", "/f.sock", "--timeout", "12s"}, "/f.sock", []string{"--timeout", "12s"}},
		{"after --", "", []string{"--", "--socket", "/f.sock"}, "", []string{"--", "--socket", "/f.sock"}},
		{"a value named socket", "", []string{"--args", "--socket"}, "", []string{"--args", "--socket"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvSocket, tt.env)
			t.Setenv("DOCKET_SOCKET_TIMEOUT", "")
			sock, rest, ok := Socket(tt.args, "args", "runtime", "timeout")
			if sock != tt.sock || ok != (tt.sock != "") || !reflect.DeepEqual(rest, tt.rest) {
				t.Fatalf("Socket(%q) = %q, %q, %v; want %q, %q", tt.args, sock, rest, ok, tt.sock, tt.rest)
			}
		})
	}
}

// serve answers each connection with answer(request), or, when that is
// empty, with nothing for 5 s (a hung daemon).
func serve(t *testing.T, answer func(req string) string) string {
	return sockettest.Serve(t, func(c net.Conn, req []byte) {
		if a := answer(string(req)); a != "" {
			io.WriteString(c, a)
		} else {
			time.Sleep(5 * time.Second)
		}
	})
}

func failClosed(_ []string, _ []byte, reason string, _, stderr io.Writer) int {
	io.WriteString(stderr, "CLOSED: "+reason)
	return 42
}

func TestRun(t *testing.T) {
	ok := `HTTP/1.1 200 OK` + "\r\nContent-Length: 45\r\n\r\n" + `{"exit":3,"stdout":"eyJhIjoxfQ==","stderr":""}`
	tests := []struct {
		name    string
		answer  string
		timeout string
		code    int
		stdout  string
		stderr  string
	}{
		{"answer printed as is", ok, "", 3, `{"a":1}`, ""},
		{"hung daemon", "", "300ms", 42, "", "no answer within 300ms"},
		{"error status", "HTTP/1.1 500 Internal Server Error\r\n\r\nboom", "", 42, "", "500"},
		{"garbage", "nonsense", "", 42, "", "malformed"},
		{"bad body", "HTTP/1.1 200 OK\r\n\r\n{", "", 42, "", "decode answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DOCKET_SOCKET_TIMEOUT", tt.timeout)
			t.Setenv("DOCKET_HEADLESS", "1")
			t.Setenv("DOCKET_HOME", "/caller/home")
			var got string
			sock := serve(t, func(req string) string { got = req; return tt.answer })
			var out, errb bytes.Buffer
			start := time.Now()
			code := Run(RouteJudge, sock, []string{"-runtime", "claude"}, strings.NewReader(`{"x":1}`), &out, &errb, failClosed)
			if code != tt.code || out.String() != tt.stdout || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("code %d stdout %q stderr %q; want %d %q %q", code, out.String(), errb.String(), tt.code, tt.stdout, tt.stderr)
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			if tt.name == "answer printed as is" {
				if !strings.HasPrefix(got, "POST "+RouteJudge+" HTTP/1.1\r\n") || !strings.Contains(got, `"DOCKET_HEADLESS":"1"`) || strings.Contains(got, "/caller/home") {
					t.Fatalf("request sent: %q", got)
				}
			}
		})
	}
}

func TestRunDaemonDown(t *testing.T) {
	var out, errb bytes.Buffer
	sock := filepath.Join(t.TempDir(), "none.sock")
	if code := Run(RouteLedger, sock, nil, strings.NewReader("{}"), &out, &errb, LedgerUnreachable); code != 2 || !strings.Contains(errb.String(), "not recorded") || !strings.Contains(errb.String(), "docket serve --socket "+sock) {
		t.Fatalf("code %d stderr %q", code, errb.String())
	}
	// a prompt is not erased (exit 2 would): exit 1
	errb.Reset()
	prompt := `{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}`
	if code := Run(RouteLedger, sock, []string{"--runtime", "claude"}, strings.NewReader(prompt), &out, &errb, LedgerUnreachable); code != 1 || !strings.Contains(errb.String(), "not recorded") {
		t.Fatalf("prompt: code %d stderr %q", code, errb.String())
	}
}

func TestJudgeUnreachable(t *testing.T) {
	call := func(tool, input string) (string, int) {
		var out, errb bytes.Buffer
		p := `{"session_id":"s","transcript_path":"/dev/null","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `}`
		code := JudgeUnreachable(nil, []byte(p), "down", &out, &errb)
		return out.String(), code
	}
	for _, tc := range []struct{ tool, input string }{
		{"Bash", `{"command":"rm -rf /"}`}, {"Write", `{"file_path":"/tmp/x","content":"y"}`}, {"Bash", `{"command":"cat x"}`},
		{"mcp__github__create_issue", `{}`}, {"WebFetch", `{"url":"https://example.com"}`},
	} {
		if out, code := call(tc.tool, tc.input); code != 0 || !strings.Contains(out, `"deny"`) {
			t.Errorf("%s %s: code %d out %q, want deny", tc.tool, tc.input, code, out)
		}
	}
	for _, tc := range []struct{ tool, input string }{{"Read", `{"file_path":"/etc/hosts"}`}, {"Grep", `{"pattern":"x"}`}} {
		if out, code := call(tc.tool, tc.input); code != 0 || out != "" {
			t.Errorf("%s: code %d out %q, want no answer", tc.tool, code, out)
		}
	}
	var out, errb bytes.Buffer
	if code := JudgeUnreachable(nil, []byte("not json"), "down", &out, &errb); code != 2 || out.Len() != 0 {
		t.Errorf("unreadable payload: code %d out %q, want exit 2", code, out.String())
	}
}

func TestMain(m *testing.M) {
	os.Unsetenv(EnvSocket)
	os.Exit(m.Run())
}
