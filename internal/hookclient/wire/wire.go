// Package wire is the client side of the hook socket and nothing else:
// it links neither encoding/json nor fmt nor any of docket's hook code,
// so docket-hook, which is built on it alone, starts about as fast as an
// empty Go program. The daemon's side decodes with encoding/json
// (hookclient.Request and Response are this package's types); this
// package writes that JSON by hand and reads the daemon's answer, whose
// shape the daemon fixes: {"exit":N,"stdout":B64|null,"stderr":B64|null}.
package wire

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The routes of the hook socket: POST one Request, get one Response.
const (
	RouteJudge    = "/v1/hook/judge"
	RouteLedger   = "/v1/hook/ledger"
	RouteGate     = "/v1/hook/gate"
	RouteValidate = "/v1/hook/validate"
	RoutePolicy   = "/v1/hook/policy"
)

// EnvSocket names the socket in a hook's environment.
const EnvSocket = "DOCKET_SOCKET"

// EnvSocketDown, set to a reason, makes Run answer as if the daemon had
// not: docket-hook hands a fail-closed answer to the full hook binary
// this way, without linking the code that writes it.
const EnvSocketDown = "DOCKET_SOCKET_DOWN"

// ForwardedEnv are the only environment variables a thin client sends:
// they change how a hook answers, never where its state is (the daemon's
// DOCKET_HOME and secrets are its own).
var ForwardedEnv = []string{"DOCKET_HEADLESS", "DOCKET_JUDGE_TRACE"}

// MaxStdin bounds what a thin client forwards (and the daemon reads).
const MaxStdin = 64 << 20

// Request is one hook invocation: its command-line arguments (without
// --socket), its stdin, and the forwarded environment.
type Request struct {
	Args  []string          `json:"args"`
	Stdin []byte            `json:"stdin"`
	Env   map[string]string `json:"env,omitempty"`
}

// Response is what the in-process hook would have produced.
type Response struct {
	Exit   int    `json:"exit"`
	Stdout []byte `json:"stdout"`
	Stderr []byte `json:"stderr"`
}

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
	if reason := os.Getenv(EnvSocketDown); reason != "" {
		return unreachable(args, payload, reason, stdout, stderr)
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
		return unreachable(args, payload, "the docket daemon on "+sock+" did not answer ("+err.Error()+"); failing closed. Start it: 'sudo systemctl start docket', or 'docket serve --socket "+sock+"' as the docket user", stdout, stderr)
	}
	stdout.Write(resp.Stdout)
	stderr.Write(resp.Stderr)
	return resp.Exit
}

// Call sends req to route on the daemon listening on sock and returns
// its response, all within timeout. It speaks just enough HTTP/1.1 for
// the daemon's answers (Content-Length bodies, Connection: close).
func Call(sock, route string, req Request, timeout time.Duration) (*Response, error) {
	c, err := dial(sock, time.Now().Add(timeout))
	if err != nil {
		return nil, err
	}
	defer c.close()
	body := Encode(req)
	head := "POST " + route + " HTTP/1.1\r\nHost: docket\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if err := c.write(append([]byte(head), body...)); err != nil {
		return nil, errors.New("send: " + err.Error())
	}
	raw, err := c.readAll(4 * MaxStdin)
	if err != nil {
		if err == errTimeout {
			return nil, errors.New("no answer within " + timeout.String())
		}
		return nil, errors.New("receive: " + err.Error())
	}
	hdr, rb, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		return nil, errors.New("malformed answer")
	}
	status, _, _ := bytes.Cut(hdr, []byte("\r\n"))
	if f := strings.Fields(string(status)); len(f) < 2 || f[1] != "200" {
		return nil, errors.New("daemon answered " + strings.TrimSpace(string(status)) + ": " + strings.TrimSpace(string(rb[:min(len(rb), 300)])))
	}
	return Decode(rb)
}

// Encode writes req as the JSON encoding/json would read back into a
// Request: strings escaped, stdin in base64.
func Encode(req Request) []byte {
	b := make([]byte, 0, 64+base64.StdEncoding.EncodedLen(len(req.Stdin)))
	b = append(b, `{"args":[`...)
	for i, a := range req.Args {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, a)
	}
	b = append(b, `],"stdin":"`...)
	b = base64.StdEncoding.AppendEncode(b, req.Stdin)
	b = append(b, '"')
	if len(req.Env) > 0 {
		b = append(b, `,"env":{`...)
		keys := make([]string, 0, len(req.Env))
		for k := range req.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, req.Env[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. Invalid UTF-8 is passed
// through; encoding/json reads it as U+FFFD, as it would have anyway.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

var errAnswer = errors.New("decode answer: not the daemon's response")

// Decode reads the daemon's response: {"exit":N,"stdout":…,"stderr":…}
// with each output base64 or null, members in any order.
func Decode(b []byte) (*Response, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, errAnswer
	}
	var r Response
	seen := 0
	for rest := b[1 : len(b)-1]; len(bytes.TrimSpace(rest)) > 0; {
		rest = bytes.TrimSpace(rest)
		if rest[0] == ',' {
			rest = bytes.TrimSpace(rest[1:])
		}
		if len(rest) == 0 || rest[0] != '"' {
			return nil, errAnswer
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return nil, errAnswer
		}
		key := string(rest[1 : 1+end])
		rest = bytes.TrimSpace(rest[2+end:])
		if len(rest) == 0 || rest[0] != ':' {
			return nil, errAnswer
		}
		rest = bytes.TrimSpace(rest[1:])
		// a value: a number, null or a base64 string (no escapes)
		var val []byte
		if len(rest) > 0 && rest[0] == '"' {
			e := bytes.IndexByte(rest[1:], '"')
			if e < 0 {
				return nil, errAnswer
			}
			val, rest = rest[:e+2], rest[e+2:]
		} else {
			e := bytes.IndexAny(rest, ", \t\r\n")
			if e < 0 {
				e = len(rest)
			}
			val, rest = rest[:e], rest[e:]
		}
		switch key {
		case "exit":
			n, err := strconv.Atoi(string(val))
			if err != nil {
				return nil, errAnswer
			}
			r.Exit = n
			seen++
		case "stdout", "stderr":
			var out []byte
			if string(val) != "null" {
				if len(val) < 2 || val[0] != '"' {
					return nil, errAnswer
				}
				d, err := base64.StdEncoding.AppendDecode(nil, val[1:len(val)-1])
				if err != nil {
					return nil, errAnswer
				}
				out = d
			}
			if key == "stdout" {
				r.Stdout = out
			} else {
				r.Stderr = out
			}
		default:
			return nil, errAnswer
		}
	}
	if seen != 1 {
		return nil, errAnswer
	}
	return &r, nil
}
