package testscripts

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
)

// TestServeScripts runs the scripts in serve/: the real `docket serve`
// started on 127.0.0.1:0 and driven over HTTP. Commands besides the
// standard ones:
//
//	serve [ARGS...]      start `docket serve --addr 127.0.0.1:0 ARGS`, set $URL
//	serve-stop           SIGTERM it; fail unless it drains and exits 0
//	api [-status N] METHOD PATH TOKENVAR|- [BODYFILE]
//	                     request with the bearer token in $TOKENVAR; the
//	                     response body is stdout; fail unless the status is
//	                     N (default: any 2xx). BODYFILE's $VARs are expanded.
//	setjson VAR PATH     set $VAR to the gjson PATH of the last stdout
//	stdoutvar VAR        set $VAR to the last stdout, trimmed
//	waitapproval VAR TOKENVAR
//	                     wait (10s) for a pending approval, set $VAR to its id
//	sse TOKENVAR N [AFTER]
//	                     read N events from /v1/events (after seq AFTER);
//	                     stdout gets "ID TYPE DATA" lines
func TestServeScripts(t *testing.T) {
	payloads, err := filepath.Abs("../testdata/realdata/payloads")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "serve",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("DOCKET_HOME", filepath.Join(env.WorkDir, ".docket"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("XDG_STATE_HOME", "")
			env.Setenv("DOCKET_STORE_DSN", "")
			env.Setenv("PAYLOADS", payloads)
			return os.MkdirAll(filepath.Join(env.WorkDir, "home"), 0o700)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"serve":        cmdServe,
			"serve-stop":   cmdServeStop,
			"api":          cmdAPI,
			"setjson":      cmdSetJSON,
			"stdoutvar":    cmdStdoutVar,
			"waitapproval": cmdWaitApproval,
			"sse":          cmdSSE,
		},
	})
}

type served struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	mu     *sync.Mutex
	done   chan struct{}
}

var (
	servers   = map[*testscript.TestScript]*served{}
	serversMu sync.Mutex
)

func cmdServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! serve")
	}
	cmd := exec.Command(filepath.Join(binDir, "docket"), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = ts.Getenv("WORK")
	var env []string
	for _, k := range []string{"PATH", "DOCKET_HOME", "HOME", "DOCKET_STORE_DSN", "TMPDIR"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	cmd.Env = env
	pipe, err := cmd.StderrPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	s := &served{cmd: cmd, stderr: &strings.Builder{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stderr.WriteString(line + "\n")
			s.mu.Unlock()
			if u, ok := strings.CutPrefix(line, "docket: serving "); ok {
				url <- u
			}
		}
		close(s.done)
	}()
	serversMu.Lock()
	servers[ts] = s
	serversMu.Unlock()
	ts.Defer(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	select {
	case u := <-url:
		ts.Setenv("URL", u)
	case <-s.done:
		cmd.Wait()
		ts.Fatalf("docket serve exited: %s", s.stderr.String())
	case <-time.After(20 * time.Second):
		ts.Fatalf("docket serve did not start: %s", s.stderr.String())
	}
}

func cmdServeStop(ts *testscript.TestScript, neg bool, args []string) {
	serversMu.Lock()
	s := servers[ts]
	serversMu.Unlock()
	if s == nil {
		ts.Fatalf("no server")
	}
	ts.Check(s.cmd.Process.Signal(syscall.SIGTERM))
	<-s.done
	err := s.cmd.Wait()
	s.mu.Lock()
	fmt.Fprint(ts.Stderr(), s.stderr.String())
	s.mu.Unlock()
	if err != nil && !neg {
		ts.Fatalf("docket serve: %v", err)
	}
}

func token(ts *testscript.TestScript, v string) string {
	if v == "-" {
		return ""
	}
	return ts.Getenv(v)
}

func cmdAPI(ts *testscript.TestScript, neg bool, args []string) {
	want := 0
	if len(args) > 1 && args[0] == "-status" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		want, args = n, args[2:]
	}
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: api [-status N] METHOD PATH TOKENVAR|- [BODYFILE]")
	}
	var body io.Reader
	if len(args) == 4 {
		body = strings.NewReader(os.Expand(ts.ReadFile(args[3]), ts.Getenv))
	}
	req, err := http.NewRequest(args[0], ts.Getenv("URL")+args[1], body)
	ts.Check(err)
	if tok := token(ts, args[2]); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	ts.Stdout().Write(b)
	if (want == 0 && resp.StatusCode/100 != 2) || (want != 0 && resp.StatusCode != want) {
		ts.Fatalf("%s %s: status %d, want %v: %s", args[0], args[1], resp.StatusCode, nonZero(want), b)
	}
}

func nonZero(n int) any {
	if n == 0 {
		return "2xx"
	}
	return n
}

func cmdSetJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: setjson VAR PATH")
	}
	r := gjson.Get(ts.ReadFile("stdout"), args[1])
	if !r.Exists() {
		ts.Fatalf("no %s in stdout", args[1])
	}
	ts.Setenv(args[0], r.String())
}

func cmdStdoutVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdoutvar VAR")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

func cmdWaitApproval(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitapproval VAR TOKENVAR")
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", ts.Getenv("URL")+"/v1/approvals?status=pending", nil)
		req.Header.Set("Authorization", "Bearer "+token(ts, args[1]))
		resp, err := http.DefaultClient.Do(req)
		ts.Check(err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if id := gjson.GetBytes(b, "approvals.0.id").Str; id != "" {
			ts.Setenv(args[0], id)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("no pending approval within 10s")
}

func cmdSSE(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: sse TOKENVAR N [AFTER]")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.Getenv("URL")+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token(ts, args[0]))
	if len(args) == 3 {
		req.Header.Set("Last-Event-ID", args[2])
	}
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		ts.Fatalf("events: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	got := 0
	var id, typ, data string
	for got < n && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && data != "":
			fmt.Fprintf(ts.Stdout(), "%s %s %s\n", id, typ, data)
			got++
			data = ""
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	if got < n {
		ts.Fatalf("read %d events, want %d", got, n)
	}
}

var _ = testing.Short
