// Package sealedtest proves sealed mode end to end, as root: a daemon
// running as the system user "docket" on a state root only it can read,
// and hooks run as an unprivileged agent user against its socket.
package sealedtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docket/docket/internal/testbin"
)

var (
	buildOnce sync.Once
	buildErr  error
	builtDir  string
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "docket-sealed-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builtDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

const (
	daemonUser = "docket"
	agentUser  = "docketagent"
)

// env is one sealed installation under a temporary directory.
type env struct {
	t       *testing.T
	dir     string // 0755, holds bin/, state/ (docket, 0700), run/, proj/
	bin     string
	state   string
	sock    string
	proj    string
	agentID int
	daemon  *exec.Cmd
	log     *bytes.Buffer
}

func requireRoot(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "sealed-mode tests need root (they create users and run a daemon as one)"
	} else {
		for _, tool := range []string{"useradd", "runuser", "setpriv"} {
			if _, err := exec.LookPath(tool); err != nil {
				why = tool + " not found"
			}
		}
	}
	if why == "" {
		return
	}
	testbin.Unavailable(t, why)
}

func ensureUser(t *testing.T, name string, system bool) int {
	t.Helper()
	if u, err := user.Lookup(name); err == nil {
		id, _ := strconv.Atoi(u.Uid)
		return id
	}
	args := []string{"--no-create-home", "--shell", "/usr/sbin/nologin"}
	if system {
		args = append(args, "--system")
	}
	if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.Atoi(u.Uid)
	return id
}

func setup(t *testing.T) *env {
	requireRoot(t)
	ensureUser(t, daemonUser, true)
	agent := ensureUser(t, agentUser, false)
	dir, err := os.MkdirTemp("", "docket-sealed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{t: t, dir: dir, bin: filepath.Join(dir, "bin"), state: filepath.Join(dir, "state"),
		sock: filepath.Join(dir, "run", "docket.sock"), proj: filepath.Join(dir, "proj"), agentID: agent}
	buildOnce.Do(func() {
		build := exec.Command("go", "build", "-o", builtDir+"/", "./cmd/docket", "./cmd/docket-judge", "./cmd/docket-ledger", "./cmd/docket-gate", "./cmd/docket-hook")
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if err := os.CopyFS(e.bin, os.DirFS(builtDir)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{e.state, filepath.Dir(e.sock), filepath.Join(e.proj, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chmod(e.bin, 0o755))
	must(t, os.WriteFile(filepath.Join(e.proj, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.proj, "go.mod"), []byte("module example.com/p\n\ngo 1.22\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.proj, "Makefile"), []byte("test:\n\tid -u > uid.txt\n"), 0o644))
	docket := lookupID(t, daemonUser)
	must(t, chownR(e.proj, agent))
	must(t, os.Chown(e.state, docket, -1))
	must(t, os.Chmod(e.state, 0o700))
	must(t, os.Chown(filepath.Dir(e.sock), docket, -1))
	if out, err := e.asDaemon("init").CombinedOutput(); err != nil {
		t.Fatalf("docket init as %s: %v\n%s", daemonUser, err, out)
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func lookupID(t *testing.T, name string) int {
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.Atoi(u.Uid)
	return id
}

func chownR(root string, uid int) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// asDaemon is `docket ARGS` as the docket user on the state root.
func (e *env) asDaemon(args ...string) *exec.Cmd {
	return exec.Command("runuser", append([]string{"-u", daemonUser, "--", "env", "DOCKET_HOME=" + e.state, filepath.Join(e.bin, "docket")}, args...)...)
}

// asAgent runs bin (a file in bin/) with args as the agent user in the
// project, with DOCKET_SOCKET set and extra environment.
func (e *env) asAgent(stdin []byte, extraEnv []string, bin string, args ...string) (stdout, stderr string, code int, took time.Duration) {
	full := []string{"-u", agentUser, "--", "env", "DOCKET_SOCKET=" + e.sock}
	full = append(append(full, extraEnv...), filepath.Join(e.bin, bin))
	cmd := exec.Command("runuser", append(full, args...)...)
	cmd.Dir = e.proj
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run %s as %s: %v", bin, agentUser, err)
	}
	return out.String(), errb.String(), code, took
}

// start runs `docket serve --socket` as the docket user (with the
// capabilities to run validators as their callers when caps is set).
func (e *env) start(caps bool) {
	e.t.Helper()
	args := []string{"--reuid", daemonUser, "--regid", daemonUser, "--init-groups"}
	if caps {
		args = append(args, "--inh-caps", "+setuid,+setgid,+chown", "--ambient-caps", "+setuid,+setgid,+chown")
	}
	args = append(args, "env", "DOCKET_HOME="+e.state, filepath.Join(e.bin, "docket"), "serve", "--addr", "", "--socket", e.sock)
	cmd := exec.Command("setpriv", args...)
	e.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = e.log, e.log
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon = cmd
	e.t.Cleanup(func() { e.kill(syscall.SIGKILL) })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("unix", e.sock); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("daemon did not listen on %s:\n%s", e.sock, e.log)
}

func (e *env) kill(sig syscall.Signal) {
	if e.daemon == nil || e.daemon.Process == nil {
		return
	}
	e.daemon.Process.Signal(sig)
	e.daemon.Wait()
	e.daemon = nil
}

func (e *env) payload(event, session string, fields string) []byte {
	return []byte(fmt.Sprintf(`{"session_id":%q,"transcript_path":"/dev/null","cwd":%q,"hook_event_name":%q,%s}`, session, e.proj, event, fields))
}

func (e *env) judgeBash(session, command string) []byte {
	return e.payload("PreToolUse", session, fmt.Sprintf(`"tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":"toolu_%d"`, command, time.Now().UnixNano()))
}

func (e *env) ledgerBash(session string, n int) []byte {
	return e.payload("PostToolUse", session, fmt.Sprintf(`"tool_name":"Bash","tool_input":{"command":"echo %d"},"tool_response":{"stdout":"%d","stderr":"","interrupted":false},"tool_use_id":"toolu_l%d"`, n, n, n))
}

func (e *env) stop(session, msg string) []byte {
	return e.payload("Stop", session, fmt.Sprintf(`"stop_hook_active":false,"last_assistant_message":%q`, msg))
}

// entries reads a session's ledger lines (as root).
func (e *env) entries(session string) []map[string]any {
	f, err := os.Open(filepath.Join(e.state, "ledger", session+".jsonl"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // a torn last line is verify's business
		}
		out = append(out, m)
	}
	return out
}

func (e *env) verify(session string, flags ...string) string {
	e.t.Helper()
	out, err := e.asDaemon(append([]string{"verify", "--session", session}, flags...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("docket verify --session %s as %s: %v\n%s", session, daemonUser, err, out)
	}
	return string(out)
}

// The agent user can neither read nor write a byte of the state root, and
// a round trip through the socket records the agent's uid.
func TestSealedRoundTripAndIsolation(t *testing.T) {
	e := setup(t)
	e.start(false)

	// judge: a routine call is judged (no answer = the runtime's own rules)
	if out, errb, code, _ := e.asAgent(e.judgeBash("s1", "go test ./..."), nil, "docket-judge"); code != 0 || strings.Contains(out, "deny") {
		t.Fatalf("judge: exit %d, stdout %q, stderr %q\n%s", code, out, errb, e.log)
	}
	// judge: a policy deny comes back through the socket
	creds := e.payload("PreToolUse", "s1", fmt.Sprintf(`"tool_name":"Read","tool_input":{"file_path":%q},"tool_use_id":"toolu_c"`, filepath.Join(e.proj, ".aws", "credentials")))
	if out, _, code, _ := e.asAgent(creds, nil, "docket-judge"); code != 0 || !strings.Contains(out, `"deny"`) || !strings.Contains(out, "cloud credentials") {
		t.Fatalf("judge of a credentials read: exit %d, stdout %q", code, out)
	}
	if _, errb, code, _ := e.asAgent(e.ledgerBash("s1", 1), nil, "docket-ledger"); code != 0 {
		t.Fatalf("ledger: exit %d, stderr %q\n%s", code, errb, e.log)
	}
	if _, errb, code, _ := e.asAgent(e.ledgerBash("s1", 3), nil, "docket-hook", "ledger"); code != 0 {
		t.Fatalf("docket-hook ledger: exit %d, stderr %q\n%s", code, errb, e.log)
	}
	out, _, code, _ := e.asAgent(e.stop("s1", "All done — tests pass."), nil, "docket-gate", "--timeout", "10s")
	if code != 0 || !strings.Contains(out, `"decision":"block"`) || !strings.Contains(out, "claim done") {
		t.Fatalf("gate: exit %d, stdout %q", code, out)
	}
	// the caller's DOCKET_HOME is not forwarded: the entry lands in the
	// daemon's state root, not in one the agent controls
	fake := filepath.Join(e.proj, "fakehome")
	if _, errb, code, _ := e.asAgent(e.ledgerBash("s1", 2), []string{"DOCKET_HOME=" + fake}, "docket-ledger"); code != 0 {
		t.Fatalf("ledger with DOCKET_HOME: exit %d, stderr %q", code, errb)
	}
	if _, err := os.Stat(fake); err == nil {
		t.Fatal("the daemon wrote into the caller's DOCKET_HOME")
	}
	// --args-file is read by the caller, so a key file is not readable
	// through the daemon
	key := filepath.Join(e.state, "keys", "checkpoint.key")
	if _, err := os.Stat(key); err != nil {
		t.Fatal(err)
	}
	if out, errb, code, _ := e.asAgent(nil, nil, "docket", "validate", "--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args-file", key); code != 1 || !strings.Contains(errb, "permission denied") {
		t.Fatalf("validate --args-file KEY: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	// nor does the daemon read a transcript for a caller who cannot
	stolen := e.payload("Stop", "s1", fmt.Sprintf(`"stop_hook_active":false,"transcript_path":%q`, filepath.Join(e.state, "ledger", "s1.jsonl")))
	stolen = bytes.Replace(stolen, []byte(`"transcript_path":"/dev/null",`), nil, 1)
	// (the gate blocks, unchecked, and says why)
	if out, errb, code, _ := e.asAgent(stolen, nil, "docket-gate"); code != 0 || !strings.Contains(out, `"block"`) || !strings.Contains(errb, "not readable by the caller") {
		t.Fatalf("gate with the ledger as transcript: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	// ... not even named first of two transcript_path keys, where the
	// hook's decoder reads the first and a JSON decode the last
	twice := e.payload("Stop", "s1", fmt.Sprintf(`"stop_hook_active":false,"transcript_path":%q,"transcript_path":"/dev/null"`, filepath.Join(e.state, "ledger", "s1.jsonl")))
	twice = bytes.Replace(twice, []byte(`"transcript_path":"/dev/null",`), nil, 1)
	if out, errb, code, _ := e.asAgent(twice, nil, "docket-gate"); code != 0 || !strings.Contains(out, `"block"`) || !strings.Contains(errb, "not readable by the caller") {
		t.Fatalf("gate with the ledger as the first of two transcripts: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	// nor does it look into a project the caller cannot enter (the
	// daemon's state root, named as the call's cwd): the call is refused
	closed := bytes.Replace(e.judgeBash("s1", "ls"), []byte(fmt.Sprintf(`"cwd":%q`, e.proj)), []byte(fmt.Sprintf(`"cwd":%q`, e.state)), 1)
	if out, errb, code, _ := e.asAgent(closed, nil, "docket-judge"); code != 2 || !strings.Contains(errb, "not open to the caller") {
		t.Fatalf("judge with the state root as cwd: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if v := e.verify("s1"); !strings.HasPrefix(v, "ok") {
		t.Fatalf("verify: %s", v)
	}
	// the peer uid is recorded in what the daemon wrote for the agent
	peers := 0
	for _, en := range e.entries("s1") {
		body, _ := en["body"].(map[string]any)
		if p, ok := body["peer"].(map[string]any); ok {
			if int(p["uid"].(float64)) != e.agentID || p["pid"].(float64) <= 0 {
				t.Fatalf("entry %v: peer %v, want uid %d", en["kind"], p, e.agentID)
			}
			peers++
		}
	}
	if peers < 5 { // two judge decisions and three tool calls
		t.Fatalf("%d entries record the peer, want >= 3", peers)
	}

	// no byte of the state root is readable or writable by the agent
	var files, dirs []string
	filepath.WalkDir(e.state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		} else if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var keys, ledgers int
	for _, f := range files {
		switch filepath.Base(filepath.Dir(f)) {
		case "keys":
			keys++
		case "ledger":
			ledgers++
		}
	}
	if keys == 0 || ledgers == 0 {
		t.Fatalf("state root has %d key and %d ledger files; the check would prove nothing", keys, ledgers)
	}
	script := `for f in "$@"; do if cat -- "$f" >/dev/null 2>"$TMPDIR_ERR"; then echo "READ $f"; fi; if ( : >> "$f" ) 2>/dev/null; then echo "WROTE $f"; fi; done`
	check := func(paths []string) string {
		errf := filepath.Join(e.dir, "err.txt")
		cmd := exec.Command("runuser", append([]string{"-u", agentUser, "--", "env", "TMPDIR_ERR=/dev/null", "sh", "-c", script, "sh"}, paths...)...)
		out, _ := cmd.CombinedOutput()
		os.Remove(errf)
		return string(out)
	}
	if got := check(files); got != "" {
		t.Fatalf("the agent user got at state files:\n%s", got)
	}
	// EACCES, not some other failure, for a key and a ledger
	for _, f := range files {
		if b := filepath.Base(filepath.Dir(f)); b != "keys" && b != "ledger" {
			continue
		}
		out, _ := exec.Command("runuser", "-u", agentUser, "--", "cat", f).CombinedOutput()
		if !strings.Contains(string(out), "Permission denied") {
			t.Fatalf("cat %s as %s: %q, want Permission denied", f, agentUser, out)
		}
	}
	// nor can it create a file anywhere in the state root
	for _, d := range dirs {
		out, _ := exec.Command("runuser", "-u", agentUser, "--", "sh", "-c", `: > "$1/forged" 2>/dev/null && echo CREATED`, "sh", d).CombinedOutput()
		if strings.Contains(string(out), "CREATED") {
			t.Fatalf("the agent user created a file in %s", d)
		}
	}
	// the in-process path with the daemon's state root is no way around:
	// without the keys a hook cannot sign, so it says so and records nothing
	cmd := exec.Command("runuser", "-u", agentUser, "--", "env", "DOCKET_HOME="+e.state, filepath.Join(e.bin, "docket-ledger"))
	cmd.Stdin = bytes.NewReader(e.ledgerBash("s1", 99))
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("in-process docket-ledger on the sealed state root succeeded as the agent: %s", out)
	}
}

// The agent's own escalation waits for a human it cannot impersonate: it
// has no token and no access to the store, so it cannot approve it.
func TestSealedEscalationNotSelfApproved(t *testing.T) {
	e := setup(t)
	e.start(false)
	out, _, code, took := e.asAgent(e.judgeBash("s3", "git commit --no-verify -m x"),
		[]string{"DOCKET_HEADLESS=1", "DOCKET_SOCKET_TIMEOUT=3s"}, "docket-judge")
	if code != 0 || !strings.Contains(out, `"deny"`) || took > 8*time.Second {
		t.Fatalf("headless escalation: exit %d in %v, stdout %q", code, took, out)
	}
	list, err := e.asDaemon("approvals", "list", "--status", "pending", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("approvals list as %s: %v\n%s", daemonUser, err, list)
	}
	var items []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(list, &items); err != nil || len(items) == 0 {
		// some versions print an object
		var obj map[string]json.RawMessage
		if json.Unmarshal(list, &obj) != nil {
			t.Fatalf("no pending approval after a headless escalation: %s", list)
		}
	}
	id := ""
	if len(items) > 0 {
		id = items[0].ID
	} else if i := strings.Index(string(list), `"id":"`); i >= 0 {
		id = strings.SplitN(string(list)[i+6:], `"`, 2)[0]
	}
	if id == "" {
		t.Fatalf("no approval id in %s", list)
	}
	// as the agent, pointed at the sealed state root: refused by the kernel
	cmd := exec.Command("runuser", "-u", agentUser, "--", "env", "DOCKET_HOME="+e.state, filepath.Join(e.bin, "docket"), "approvals", "approve", id, "--note", "self")
	cmd.Dir = e.proj
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the agent approved its own escalation: %s", out)
	} else if !strings.Contains(string(out), "permission denied") && !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("approve as agent failed, but not with EACCES: %s", out)
	}
	// and it is still pending
	again, _ := e.asDaemon("approvals", "show", id, "--json").CombinedOutput()
	if !strings.Contains(string(again), "pending") {
		t.Fatalf("approval %s after the agent's attempt: %s", id, again)
	}
}

// With the daemon down or hung, every hook fails closed within its
// deadline.
func TestSealedDaemonDownFailsClosed(t *testing.T) {
	e := setup(t)
	check := func(t *testing.T, extra []string, limit time.Duration) {
		out, errb, code, took := e.asAgent(e.judgeBash("s4", "rm -rf build"), extra, "docket-judge")
		if code != 0 || !strings.Contains(out, `"deny"`) || !strings.Contains(out, "docket serve --socket") || took > limit {
			t.Errorf("judge, side-effecting: exit %d in %v, stdout %q, stderr %q", code, took, out, errb)
		}
		read := e.payload("PreToolUse", "s4", `"tool_name":"Read","tool_input":{"file_path":"/etc/hostname"},"tool_use_id":"toolu_r"`)
		if out, _, code, took := e.asAgent(read, extra, "docket-judge"); code != 0 || out != "" || took > limit {
			t.Errorf("judge, read-only: exit %d in %v, stdout %q (want no answer)", code, took, out)
		}
		if out, _, code, took := e.asAgent(e.judgeBash("s4", "rm -rf build"), extra, "docket-hook", "judge"); code != 0 || !strings.Contains(out, `"deny"`) || took > limit {
			t.Errorf("docket-hook judge: exit %d in %v, stdout %q", code, took, out)
		}
		if out, _, code, took := e.asAgent(e.stop("s4", "All done."), extra, "docket-hook", "gate", "--timeout", "2s"); code != 0 || !strings.Contains(out, `"decision":"block"`) || took > limit {
			t.Errorf("docket-hook gate: exit %d in %v, stdout %q", code, took, out)
		}
		if out, _, code, took := e.asAgent(e.stop("s4", "All done."), extra, "docket-gate", "--timeout", "2s"); code != 0 || !strings.Contains(out, `"decision":"block"`) || took > limit {
			t.Errorf("gate: exit %d in %v, stdout %q", code, took, out)
		}
		if _, errb, code, took := e.asAgent(e.ledgerBash("s4", 1), extra, "docket-ledger"); code != 2 || !strings.Contains(errb, "not recorded") || took > limit {
			t.Errorf("ledger: exit %d in %v, stderr %q", code, took, errb)
		}
		if _, errb, code, took := e.asAgent(e.ledgerBash("s4", 2), extra, "docket-hook", "ledger"); code != 2 || !strings.Contains(errb, "not recorded") || !strings.Contains(errb, "did not answer") || took > limit {
			t.Errorf("docket-hook ledger: exit %d in %v, stderr %q", code, took, errb)
		}
		if _, errb, code, took := e.asAgent(nil, extra, "docket", "validate", "--session", "s4", "--claim", "done", "--validator", "command_zero_exit", "--args", `{"command":["make","test"]}`); code != 1 || !strings.Contains(errb, "nothing recorded") || took > limit {
			t.Errorf("validate: exit %d in %v, stderr %q", code, took, errb)
		}
	}
	t.Run("down", func(t *testing.T) { check(t, nil, 5*time.Second) })
	t.Run("hung", func(t *testing.T) {
		// a socket that accepts and never answers
		ln, err := net.Listen("unix", e.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		os.Chmod(e.sock, 0o666)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		check(t, []string{"DOCKET_SOCKET_TIMEOUT=1s"}, 4*time.Second)
	})
}

// Validators run as the caller: with the capabilities to switch users the
// daemon runs them as the agent's uid; without, it refuses rather than
// run them as itself.
func TestSealedValidatorRunsAsCaller(t *testing.T) {
	e := setup(t)
	args := []string{"--session", "s5", "--claim", "done", "--validator", "command_zero_exit", "--args", `{"command":["make","test"]}`}
	// the hooks must have seen the session in this project first
	e.start(false)
	if _, errb, code, _ := e.asAgent(e.ledgerBash("s5", 1), nil, "docket-ledger"); code != 0 {
		t.Fatalf("ledger: %d %s", code, errb)
	}
	if _, errb, code, _ := e.asAgent(nil, nil, "docket", append([]string{"validate"}, args...)...); code != 1 || !strings.Contains(errb, "cannot run the validator as the caller") {
		t.Fatalf("validate without capabilities: exit %d, stderr %q", code, errb)
	}
	if _, err := os.Stat(filepath.Join(e.proj, "uid.txt")); err == nil {
		t.Fatal("the validator ran although the daemon could not switch to the caller")
	}
	e.kill(syscall.SIGTERM)
	e.start(true)
	out, errb, code, _ := e.asAgent(nil, nil, "docket", append([]string{"validate"}, args...)...)
	if code != 0 || !strings.HasPrefix(out, "PASS") {
		t.Fatalf("validate with capabilities: exit %d, stdout %q, stderr %q\n%s", code, out, errb, e.log)
	}
	b, err := os.ReadFile(filepath.Join(e.proj, "uid.txt"))
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(e.agentID) {
		t.Fatalf("validator ran as uid %q (%v), want the caller's %d", b, err, e.agentID)
	}
	if v := e.verify("s5"); !strings.HasPrefix(v, "ok") {
		t.Fatalf("verify: %s", v)
	}
}

// kill -9 of the daemon while thin clients append loses no acknowledged
// entry, and the ledger still verifies.
func TestSealedKill9MidAppend(t *testing.T) {
	e := setup(t)
	e.start(false)
	acked := 0
	for i := 0; i < 20; i++ {
		if _, errb, code, _ := e.asAgent(e.ledgerBash("s6", i), nil, "docket-ledger"); code != 0 {
			t.Fatalf("append %d: exit %d %s", i, code, errb)
		}
		acked++
	}
	// appends in flight while the daemon dies
	done := make(chan int, 8)
	for w := 0; w < 8; w++ {
		go func(w int) {
			ok := 0
			for i := 0; i < 10; i++ {
				if _, _, code, _ := e.asAgent(e.ledgerBash("s6", 1000+w*100+i), nil, "docket-ledger"); code == 0 {
					ok++
				}
			}
			done <- ok
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	e.kill(syscall.SIGKILL)
	for w := 0; w < 8; w++ {
		acked += <-done
	}
	out, err := e.asDaemon("verify", "--session", "s6").CombinedOutput()
	if err != nil {
		// the crash window between an entry and its signed head: verify
		// says so until the restarted daemon settles the ledger
		t.Logf("verify right after kill -9: %v\n%s", err, out)
	}
	n := len(e.entries("s6"))
	if n < acked {
		t.Fatalf("%d entries in the ledger, %d appends were acknowledged", n, acked)
	}
	e.start(false)
	// the restarted daemon settled what the killed one left past the
	// head: the ledger verifies before anything is appended
	if v := e.verify("s6", "--accept-sealed"); !strings.HasPrefix(v, "ok") {
		t.Fatalf("verify right after the restart: %s\n%s", v, e.log)
	}
	if got := len(e.entries("s6")); got < acked {
		t.Fatalf("%d entries after the restart, %d appends were acknowledged", got, acked)
	}
	if _, errb, code, _ := e.asAgent(e.ledgerBash("s6", 9999), nil, "docket-ledger"); code != 0 {
		t.Fatalf("append after restart: exit %d %s\n%s", code, errb, e.log)
	}
	// a kill amid writing an entry leaves a torn tail, which the next
	// append seals (a seal entry keeps its bytes); that is the ledger's
	// record of the crash, not a loss
	if v := e.verify("s6", "--accept-sealed"); !strings.HasPrefix(v, "ok") {
		t.Fatalf("verify after restart: %s", v)
	}
	if got := len(e.entries("s6")); got < acked+1 {
		t.Fatalf("%d entries after restart, %d appends were acknowledged", got, acked+1)
	}
}
