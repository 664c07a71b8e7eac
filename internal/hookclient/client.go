package hookclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxStdin bounds what a thin client forwards (and the daemon reads).
const MaxStdin = 64 << 20

// Default deadlines of a thin client, inside the hook timeouts docket
// install configures (judge ≥ 10 s, ledger 5 s, gate 15 s): a daemon that
// is down or hung gets the fail-closed answer before the runtime kills
// the hook (which would fail open). --socket-timeout D (or
// DOCKET_SOCKET_TIMEOUT) overrides it; a headless judge that waits on
// escalations needs its hook's timeout less 5 s.
var defaultTimeout = map[string]time.Duration{
	RouteJudge:    9 * time.Second,
	RouteLedger:   4 * time.Second,
	RouteGate:     12 * time.Second,
	RouteValidate: 30 * time.Minute,
	RoutePolicy:   time.Minute,
}

// Unreachable answers when the daemon does not: it gets the hook's
// arguments, the payload read from stdin and why, and returns the exit
// code after writing the fail-closed answer.
type Unreachable func(args []string, payload []byte, reason string, stdout, stderr io.Writer) int

// Socket reports the socket configured by --socket PATH (or
// --socket=PATH, -socket) in args, else by $DOCKET_SOCKET, and returns
// args without the --socket and --socket-timeout flags. valueFlags are
// the command's flags that take a value, whose value is never read as a
// flag.
func Socket(args []string, valueFlags ...string) (sock string, rest []string, ok bool) {
	sock = os.Getenv(EnvSocket)
	rest = make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "socket" && name != "socket-timeout") {
			rest = append(rest, a)
			if strings.HasPrefix(a, "-") && !hasVal && slices.Contains(valueFlags, name) && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
			continue
		}
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		if name == "socket" {
			sock = val
		} else {
			os.Setenv("DOCKET_SOCKET_TIMEOUT", val)
		}
	}
	return sock, rest, sock != ""
}

// Flag returns the value of --name V or --name=V in args ("" if absent).
func Flag(args []string, name string) string {
	for i, a := range args {
		n, v, has := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			continue
		}
		if has {
			return v
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// Run forwards one invocation to the daemon on sock and prints its
// answer; if the daemon cannot be reached or does not answer in time,
// unreachable answers instead. It returns the exit code.
func Run(route, sock string, args []string, stdin io.Reader, stdout, stderr io.Writer, unreachable Unreachable) int {
	payload, err := io.ReadAll(io.LimitReader(stdin, MaxStdin+1))
	if err != nil {
		return unreachable(args, payload, "cannot read stdin: "+err.Error(), stdout, stderr)
	}
	timeout := defaultTimeout[route]
	if v := os.Getenv("DOCKET_SOCKET_TIMEOUT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			timeout = d
		}
	}
	if route == RouteGate {
		if d, err := time.ParseDuration(Flag(args, "timeout")); err == nil && d > 0 {
			timeout = d
		}
	}
	req := Request{Args: args, Stdin: payload}
	for _, k := range ForwardedEnv {
		if v, ok := os.LookupEnv(k); ok {
			if req.Env == nil {
				req.Env = map[string]string{}
			}
			req.Env[k] = v
		}
	}
	resp, err := Call(sock, route, req, timeout)
	if err != nil {
		return unreachable(args, payload, fmt.Sprintf("the docket daemon on %s did not answer (%v); failing closed. Start it: 'sudo systemctl start docket', or 'docket serve --socket %s' as the docket user", sock, err, sock), stdout, stderr)
	}
	stdout.Write(resp.Stdout)
	stderr.Write(resp.Stderr)
	return resp.Exit
}

// Call sends req to route on the daemon listening on sock and returns
// its response, all within timeout. It speaks just enough HTTP/1.1 for
// the daemon's answers (Content-Length bodies, Connection: close), so a
// thin client does not link net/http.
func Call(sock, route string, req Request, timeout time.Duration) (*Response, error) {
	deadline := time.Now().Add(timeout)
	c, err := net.DialTimeout("unix", sock, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(deadline)
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	head := "POST " + route + " HTTP/1.1\r\nHost: docket\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if _, err := c.Write(append([]byte(head), body...)); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(c, 4*MaxStdin))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("no answer within %v", timeout)
		}
		return nil, fmt.Errorf("receive: %w", err)
	}
	hdr, rb, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		return nil, errors.New("malformed answer")
	}
	status, _, _ := bytes.Cut(hdr, []byte("\r\n"))
	if f := strings.Fields(string(status)); len(f) < 2 || f[1] != "200" {
		return nil, fmt.Errorf("daemon answered %s: %s", strings.TrimSpace(string(status)), strings.TrimSpace(string(truncate(rb, 300))))
	}
	var resp Response
	if err := json.Unmarshal(rb, &resp); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	return &resp, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
