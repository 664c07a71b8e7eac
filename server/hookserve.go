package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/internal/hookclient"
)

// The hook socket's own HTTP/1.1 server. A hook call is one POST with a
// Content-Length body, answered with a Content-Length body and the
// connection closed (what hookclient/wire sends and reads); net/http's
// general machinery (keep-alive, chunking, the mux, per-request header
// maps) costs a noticeable share of a round trip that is otherwise
// little more than the hook's work. Anything else is answered with the
// status net/http would give and the connection closed.

// maxHeaderBytes bounds a request's line and headers.
const maxHeaderBytes = 64 << 10

func serveRaw(ctx context.Context, ln net.Listener, h *hookHandler) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		close(stopped)
		ln.Close()
	}()
	var serveErr error
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-stopped:
			default:
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				serveErr = fmt.Errorf("serve hooks: %w", err)
				ln.Close()
			}
			break
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.serveConn(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
	// drain: requests in flight finish, up to DrainTimeout
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(DrainTimeout):
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		if serveErr == nil {
			serveErr = fmt.Errorf("drain hooks: %w", context.DeadlineExceeded)
		}
	}
	return serveErr
}

// serveConn answers one request on c and closes it.
func (h *hookHandler) serveConn(c net.Conn) {
	defer c.Close()
	peer, perr := connPeer(c)
	c.SetReadDeadline(time.Now().Add(ReadHeaderTimeout))
	br := bufio.NewReaderSize(c, 4096)
	method, path, length, status, msg := readRequestHead(br)
	if status != 0 {
		writeText(c, status, msg)
		return
	}
	if length > 2*hookclient.MaxStdin {
		writeText(c, http.StatusRequestEntityTooLarge, "http: request body too large")
		return
	}
	c.SetReadDeadline(time.Now().Add(ReadTimeout))
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		writeText(c, http.StatusBadRequest, "bad hook request: "+err.Error())
		return
	}
	// the hook's context ends when the caller hangs up, as net/http's
	// request context does: a background read sees the close
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.SetReadDeadline(time.Time{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		var one [1]byte
		_, err := c.Read(one[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return // stopped below, before the answer is written
		}
		cancel() // EOF, an error, or a byte past the request: the caller is done
	}()
	st, ctype, out := h.serve(ctx, method, path, body, peer, perr == nil)
	c.SetReadDeadline(time.Now()) // stop the watcher
	<-watching
	c.SetWriteDeadline(time.Now().Add(HookTimeout))
	writeAnswer(c, st, ctype, out)
}

// readRequestHead reads the request line and headers (at most
// maxHeaderBytes); a status other than 0 is the error to answer with.
func readRequestHead(br *bufio.Reader) (method, path string, length int, status int, msg string) {
	read := 0
	line := func() (string, bool) {
		b, err := br.ReadSlice('\n')
		read += len(b)
		if err != nil || read > maxHeaderBytes {
			return "", false
		}
		return strings.TrimRight(string(b), "\r\n"), true
	}
	first, ok := line()
	f := strings.Fields(first)
	if !ok || len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/1.") {
		return "", "", 0, http.StatusBadRequest, "malformed request line"
	}
	method, path = f[0], f[1]
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	seenLength := false
	for {
		l, ok := line()
		if !ok {
			return "", "", 0, http.StatusBadRequest, "malformed headers"
		}
		if l == "" {
			break
		}
		name, val, ok := strings.Cut(l, ":")
		if !ok {
			return "", "", 0, http.StatusBadRequest, "malformed headers"
		}
		val = strings.TrimSpace(val)
		switch {
		case strings.EqualFold(name, "Transfer-Encoding"):
			return "", "", 0, http.StatusNotImplemented, "unsupported transfer encoding"
		case strings.EqualFold(name, "Content-Length"):
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || seenLength {
				return "", "", 0, http.StatusBadRequest, "bad Content-Length"
			}
			length, seenLength = n, true
		}
	}
	return method, path, length, 0, ""
}

func writeText(c net.Conn, status int, msg string) {
	st, ctype, body := textAnswer(status, msg)
	writeAnswer(c, st, ctype, body)
}

func writeAnswer(c net.Conn, status int, ctype string, body []byte) {
	head := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\nContent-Type: " + ctype +
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n"
	c.Write(append([]byte(head), body...))
}
