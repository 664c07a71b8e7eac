package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/server"
)

// A caller that talks to the socket directly cannot make the daemon open
// a file of its choosing through --args-file (a key, say).
func TestHookValidateRefusesArgsFile(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	validate := hookFuncs(nil)[hookclient.RouteValidate]
	for _, args := range [][]string{
		{"--session", "s", "--claim", "done", "--validator", "command_zero_exit", "--args-file", "/etc/shadow"},
		{"--session", "s", "--claim", "done", "--validator", "command_zero_exit", "-args-file=/etc/shadow"},
	} {
		var out, errb bytes.Buffer
		code := validate(context.Background(), server.HookCall{Args: args, Getenv: func(string) string { return "" }, Peer: hookclient.Peer{UID: uint32(os.Getuid())}}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "--args-file is read by the client") {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

// openDir is a temporary directory any user may search and list, for a
// test's files that a caller of another uid must be able to reach (or
// not, by their own modes); t.TempDir makes its parent 0700.
func openDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCallerCanRead(t *testing.T) {
	dir := openDir(t)
	open := filepath.Join(dir, "open")
	closed := filepath.Join(dir, "closed")
	inner := filepath.Join(dir, "private")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(open, []byte("{}"), 0o644))
	must(os.WriteFile(closed, []byte("{}"), 0o600))
	must(os.Mkdir(inner, 0o700))
	must(os.WriteFile(filepath.Join(inner, "t.jsonl"), []byte("{}"), 0o644))
	must(os.Symlink(closed, filepath.Join(dir, "link")))
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242}
	self := hookclient.Peer{UID: uint32(os.Geteuid())}
	tests := []struct {
		name string
		path string
		peer hookclient.Peer
		ok   bool
	}{
		{"world-readable", open, other, true},
		{"owner only", closed, other, false},
		{"symlink to owner only", filepath.Join(dir, "link"), other, false},
		{"readable file in a private dir", filepath.Join(inner, "t.jsonl"), other, false},
		{"agent transcript", closed, other, false},
		{"the daemon's own user", closed, self, true},
		{"missing", filepath.Join(dir, "nope"), other, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "transcript_path"
			if tt.name == "agent transcript" {
				key = "agent_transcript_path"
			}
			ev := &hooks.Event{TranscriptPath: tt.path}
			if key == "agent_transcript_path" {
				ev = &hooks.Event{AgentTranscriptPath: tt.path}
			}
			err := callerCanRead(ev, tt.peer)
			if (err == nil) != tt.ok {
				t.Fatalf("callerCanRead(%s) = %v, want ok=%v", tt.path, err, tt.ok)
			}
		})
	}
}

// TestCallerEnters: the judge and the gate read the project in the
// payload's cwd with the daemon's rights, so a caller may name only a
// directory it could list and enter itself (by owner, primary group or
// world permission, and search permission on every directory above).
// The ledger hook reads nothing there and is not refused.
func TestCallerEnters(t *testing.T) {
	dir := openDir(t)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		must(os.MkdirAll(p, 0o700))
		must(os.Chmod(p, mode))
		return p
	}
	open := mkdir("open", 0o755)
	private := mkdir("private", 0o700)
	shared := mkdir("shared", 0o750) // the group of the daemon's files
	listOnly := mkdir("listonly", 0o744)
	under := mkdir("private2/proj", 0o755)
	must(os.Chmod(filepath.Join(dir, "private2"), 0o700))
	must(os.Symlink(private, filepath.Join(dir, "link")))
	var st syscall.Stat_t
	must(syscall.Stat(shared, &st))
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242, GID: st.Gid + 4242}
	member := hookclient.Peer{UID: other.UID, GID: st.Gid}
	for _, tc := range []struct {
		name, cwd, event string
		peer             hookclient.Peer
		ok               bool
	}{
		{"world-open", open, hooks.PreToolUse, other, true},
		{"owner only", private, hooks.PreToolUse, other, false},
		{"owner only, at a stop", private, hooks.Stop, other, false},
		{"a link to it", filepath.Join(dir, "link"), hooks.PreToolUse, other, false},
		{"open, under a private directory", under, hooks.Stop, other, false},
		{"readable, not enterable", listOnly, hooks.PreToolUse, other, false},
		{"the group's, for a member", shared, hooks.PreToolUse, member, true},
		{"the group's, for another", shared, hooks.PreToolUse, other, false},
		{"the daemon's own user", private, hooks.PreToolUse, hookclient.Peer{UID: uint32(os.Geteuid())}, true},
		{"missing", filepath.Join(dir, "nope"), hooks.PreToolUse, other, true},
		{"the ledger hook reads nothing there", private, hooks.PostToolUse, other, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := callerCanRead(&hooks.Event{Name: tc.event, Cwd: tc.cwd}, tc.peer)
			if (err == nil) != tc.ok {
				t.Fatalf("callerCanRead(cwd %s) = %v, want ok=%v", tc.cwd, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "not open to the caller") {
				t.Errorf("reason %q", err)
			}
		})
	}
}

// TestPermitsAsTheKernel: the daemon's permission check decides as the
// kernel does for the caller's process: the owner's bits for its owner
// (whatever the others' say), else the group's for a member — by its
// primary group or a supplementary one, read from /proc/PID/status of
// the caller's process — else the world's; and, on a file with an
// access ACL, as the ACL decides (its entries written here as the
// xattr, which also sets the mode's bits).
func TestPermitsAsTheKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a caller process of another uid with supplementary groups")
	}
	uid := uint32(os.Geteuid()) + 4242
	const primary, supplementary, other = 5001, 5002, 5003
	// the caller: a process of its own uid and groups, alive while checked
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: primary, Groups: []uint32{supplementary}}}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process as uid %d: %v", uid, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	peer := hookclient.Peer{UID: uid, GID: primary, PID: int32(cmd.Process.Pid)}
	setpriv, _ := exec.LookPath("setpriv") // util-linux: the kernel's own answer, when there
	dir := openDir(t)
	const none = ^uint32(0) // the id of an entry that names no one
	for _, tc := range []struct {
		name      string
		uid, gid  int
		mode      os.FileMode
		acl       []aclEntry
		permitted bool
	}{
		{"world", 0, other, 0o755, nil, true},
		{"the owner's bits", int(uid), other, 0o700, nil, true},
		{"the owner's bits deny, the world's allow", int(uid), other, 0o077, nil, false},
		{"primary group", 0, primary, 0o750, nil, true},
		{"supplementary group", 0, supplementary, 0o750, nil, true},
		{"another group", 0, other, 0o750, nil, false},
		{"the group's bits deny, the world's allow", 0, supplementary, 0o705, nil, false},
		{"ACL: the world's bits allow, the caller's entry denies", 0, other, 0, []aclEntry{
			{aclUserObj, 7, none}, {aclUser, 4, uid}, {aclGroupObj, 5, none}, {aclMask, 5, none}, {aclOther, 5, none},
		}, false},
		{"ACL: the mode's bits deny, the caller's entry grants", 0, other, 0, []aclEntry{
			{aclUserObj, 7, none}, {aclUser, 5, uid}, {aclGroupObj, 0, none}, {aclMask, 5, none}, {aclOther, 0, none},
		}, true},
		{"ACL: the mask takes x from a group's entry", 0, other, 0, []aclEntry{
			{aclUserObj, 7, none}, {aclGroupObj, 0, none}, {aclGroup, 5, supplementary}, {aclMask, 4, none}, {aclOther, 5, none},
		}, false},
		{"ACL: a supplementary group's entry grants", 0, other, 0, []aclEntry{
			{aclUserObj, 7, none}, {aclGroupObj, 0, none}, {aclGroup, 5, supplementary}, {aclMask, 5, none}, {aclOther, 0, none},
		}, true},
		{"ACL: the file's group denies, another of the caller's grants", 0, primary, 0, []aclEntry{
			{aclUserObj, 7, none}, {aclGroupObj, 4, none}, {aclGroup, 5, supplementary}, {aclMask, 5, none}, {aclOther, 0, none},
		}, true},
		{"ACL: a group matched, none grants, the world's would", 0, primary, 0, []aclEntry{
			{aclUserObj, 7, none}, {aclGroupObj, 4, none}, {aclGroup, 4, supplementary}, {aclMask, 7, none}, {aclOther, 5, none},
		}, false},
		{"ACL: an empty mask, the kernel reads the mode's bits", 0, other, 0, []aclEntry{
			{aclUserObj, 7, none}, {aclUser, 7, uid}, {aclGroupObj, 0, none}, {aclMask, 0, none}, {aclOther, 5, none},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.NewReplacer(" ", "_", ":", "", ",", "").Replace(tc.name))
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, tc.uid, tc.gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.acl != nil {
				err := unix.Setxattr(p, aclXattr, aclBytes(tc.acl...), 0)
				if errors.Is(err, unix.ENOTSUP) {
					t.Skipf("the file system of %s has no ACLs: %v", dir, err)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := permits(fileRef{st: st, path: p}, peer, 0o001); got != tc.permitted {
				t.Fatalf("permits(%v %d:%d) = %v, want %v", st.Mode(), tc.uid, tc.gid, got, tc.permitted)
			}
			// the open file's ACL decides as its path's does
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := permits(fileRef{st: st, f: f}, peer, 0o001); got != tc.permitted {
				t.Fatalf("permits(open %v %d:%d) = %v, want %v", st.Mode(), tc.uid, tc.gid, got, tc.permitted)
			}
			if setpriv == "" {
				return
			}
			// the kernel agrees: a process with the caller's credentials tries
			err = exec.Command(setpriv, "--reuid", strconv.Itoa(int(uid)), "--regid", strconv.Itoa(primary),
				"--groups", strconv.Itoa(supplementary), "--", "test", "-x", p).Run()
			if (err == nil) != tc.permitted {
				t.Errorf("the kernel says %v (%v) for the caller, permits %v", err == nil, err, tc.permitted)
			}
		})
	}
}

// aclBytes is an access ACL as its xattr holds it.
func aclBytes(entries ...aclEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// TestPermitsByACL: the ACL decision on the xattr's bytes, without root
// (TestPermitsAsTheKernel asks the kernel the same on real files), and
// the refusal of an xattr the kernel would not have stored, which no
// file system returns to be tested on.
func TestPermitsByACL(t *testing.T) {
	const uid, gid, primary, supplementary, other = 4242, 5000, 5001, 5002, 5003
	const none = ^uint32(0)
	base := func(named ...aclEntry) []byte { // named between USER_OBJ rwx and OTHER r-x
		acl := append([]aclEntry{{aclUserObj, 7, none}}, named...)
		acl = append(acl, aclEntry{aclOther, 5, none})
		slices.SortStableFunc(acl, func(a, b aclEntry) int { return int(a.tag) - int(b.tag) })
		return aclBytes(acl...)
	}
	for _, tc := range []struct {
		name      string
		xattr     []byte
		fileGID   uint32
		permitted bool
	}{
		{"no named entries: OTHER", base(aclEntry{aclGroupObj, 4, none}), other, true},
		{"the file's group: GROUP_OBJ", base(aclEntry{aclGroupObj, 4, none}), primary, false},
		{"the caller's entry denies, OTHER would grant",
			base(aclEntry{aclUser, 4, uid}, aclEntry{aclGroupObj, 5, none}, aclEntry{aclMask, 5, none}), other, false},
		{"the caller's entry grants",
			aclBytes(aclEntry{aclUserObj, 7, none}, aclEntry{aclUser, 5, uid}, aclEntry{aclGroupObj, 0, none}, aclEntry{aclMask, 5, none}, aclEntry{aclOther, 0, none}), other, true},
		{"the mask takes x from the caller's entry",
			base(aclEntry{aclUser, 7, uid}, aclEntry{aclGroupObj, 4, none}, aclEntry{aclMask, 6, none}), other, false},
		{"another user's entry: OTHER",
			base(aclEntry{aclUser, 0, uid + 1}, aclEntry{aclGroupObj, 4, none}, aclEntry{aclMask, 7, none}), other, true},
		{"the mask takes x from a group's entry",
			base(aclEntry{aclGroupObj, 0, none}, aclEntry{aclGroup, 5, supplementary}, aclEntry{aclMask, 4, none}), other, false},
		{"a supplementary group's entry grants",
			aclBytes(aclEntry{aclUserObj, 7, none}, aclEntry{aclGroupObj, 0, none}, aclEntry{aclGroup, 5, supplementary}, aclEntry{aclMask, 5, none}, aclEntry{aclOther, 0, none}), other, true},
		{"the file's group denies, another grants",
			aclBytes(aclEntry{aclUserObj, 7, none}, aclEntry{aclGroupObj, 4, none}, aclEntry{aclGroup, 5, supplementary}, aclEntry{aclMask, 5, none}, aclEntry{aclOther, 0, none}), primary, true},
		{"a group matched, none grants, OTHER would",
			base(aclEntry{aclGroupObj, 4, none}, aclEntry{aclGroup, 4, supplementary}, aclEntry{aclMask, 7, none}), primary, false},
		{"another group's entry: OTHER",
			base(aclEntry{aclGroupObj, 4, none}, aclEntry{aclGroup, 0, other}, aclEntry{aclMask, 7, none}), gid, true},
		{"malformed: empty", nil, other, false},
		{"malformed: version 1", append([]byte{1}, base(aclEntry{aclGroupObj, 5, none})[1:]...), other, false},
		{"malformed: a partial entry", append(base(aclEntry{aclGroupObj, 5, none}), aclOther, 0, 5), other, false},
		{"malformed: no entries", aclBytes(), other, false},
		{"malformed: no OTHER", aclBytes(aclEntry{aclUserObj, 7, none}, aclEntry{aclGroupObj, 5, none}), other, false},
		{"malformed: no USER_OBJ", aclBytes(aclEntry{aclGroupObj, 5, none}, aclEntry{aclOther, 5, none}), other, false},
		{"malformed: no GROUP_OBJ", base(), other, false},
		{"malformed: two OTHERs", aclBytes(aclEntry{aclUserObj, 7, none}, aclEntry{aclGroupObj, 5, none}, aclEntry{aclOther, 5, none}, aclEntry{aclOther, 5, none}), other, false},
		{"malformed: a named entry without a mask", base(aclEntry{aclUser, 5, uid}, aclEntry{aclGroupObj, 5, none}), other, false},
		{"malformed: two masks", base(aclEntry{aclGroupObj, 5, none}, aclEntry{aclMask, 5, none}, aclEntry{aclMask, 5, none}), other, false},
		{"malformed: out of order",
			aclBytes(aclEntry{aclUserObj, 7, none}, aclEntry{aclGroupObj, 5, none}, aclEntry{aclUser, 5, uid}, aclEntry{aclMask, 5, none}, aclEntry{aclOther, 5, none}), other, false},
		{"malformed: an unknown tag", base(aclEntry{aclGroupObj, 5, none}, aclEntry{0x40, 5, none}), other, false},
		{"malformed: a perm beyond rwx", base(aclEntry{aclGroupObj, 5 | 8, none}), other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inGroup := func(g uint32) bool { return g == primary || g == supplementary }
			if got := aclPermits(tc.xattr, uid, tc.fileGID, inGroup, 1); got != tc.permitted {
				t.Fatalf("aclPermits(%x, uid %d, gid %d) = %v, want %v", tc.xattr, uid, tc.fileGID, got, tc.permitted)
			}
		})
	}
	// the caller's own entry decides without asking for its groups (a
	// read of /proc/PID/status)
	acl := base(aclEntry{aclUser, 5, uid}, aclEntry{aclGroupObj, 5, none}, aclEntry{aclMask, 5, none})
	asked := func(uint32) bool { t.Error("the caller's groups were asked for"); return false }
	if !aclPermits(acl, uid, other, asked, 1) {
		t.Error("the caller's entry does not grant")
	}
}

// Each hook of the daemon checks the transcript it will read for a
// caller of another uid, whatever spelling the payload uses to name it:
// a transcript_path given twice (the decoders read the first, a JSON
// decode the last), a runtime named by flag or detected. None of these
// lets the gate or the ledger hook read a file the caller could not.
func TestDaemonHooksAdmitOnlyReadableTranscripts(t *testing.T) {
	_, d, proj := daemonEnv(t)
	dir := openDir(t)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// the project is open to the caller (callerEnters): only the transcript decides
	must(os.Chmod(filepath.Dir(proj), 0o755))
	must(os.Chmod(proj, 0o755))
	open, closed := filepath.Join(dir, "open.jsonl"), filepath.Join(dir, "closed.jsonl")
	must(os.WriteFile(open, []byte("{}\n"), 0o644))
	must(os.WriteFile(closed, []byte("{}\n"), 0o600))
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242, GID: 4242}
	q := strconv.Quote
	for _, pair := range [][2]string{{closed, open}, {open, closed}, {closed, closed}} {
		paths := `"transcript_path":` + q(pair[0]) + `,"transcript_path":` + q(pair[1])
		for _, tc := range []struct {
			route, payload string
			args           []string
		}{
			{hookclient.RouteGate, `{"hook_event_name":"Stop","session_id":"a1","cwd":` + q(proj) + `,"last_assistant_message":"All done.",` + paths + `}`, nil},
			{hookclient.RouteGate, `{"hook_event_name":"Stop","session_id":"a1","turn_id":"t1","cwd":` + q(proj) + `,"last_assistant_message":"All done.",` + paths + `}`, []string{"--runtime", "codex"}},
			{hookclient.RouteLedger, `{"hook_event_name":"PostToolUse","session_id":"a2","turn_id":"t1","cwd":` + q(proj) + `,"tool_name":"Bash","tool_use_id":"call_1","tool_input":{"command":"ls"},"tool_response":"ok",` + paths + `}`, []string{"-runtime=codex"}},
			{hookclient.RouteJudge, `{"hook_event_name":"PreToolUse","session_id":"a3","cwd":` + q(proj) + `,"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"ls"},` + paths + `}`, nil},
		} {
			_, out, errs := hookCall(t, d, tc.route, other, tc.payload, tc.args...)
			wantRefused := pair[0] == closed // the decoders read the first
			if strings.Contains(errs, "not open to the caller") {
				t.Errorf("%s: the project was refused: %s", tc.route, errs)
			}
			if refused := strings.Contains(errs, "not readable by the caller"); refused != wantRefused {
				t.Errorf("%s %q, transcripts %s then %s: refused %v, want %v\nstdout %s\nstderr %s", tc.route, tc.args, filepath.Base(pair[0]), filepath.Base(pair[1]), refused, wantRefused, out, errs)
			}
		}
	}
}

// The daemon's judge and gate refuse a call whose cwd the caller could
// not enter: neither reads a project there on its behalf. The same
// call from the daemon's own user, or in a project open to the caller,
// is judged.
func TestDaemonHooksRefuseAClosedProject(t *testing.T) {
	_, d, proj := daemonEnv(t)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Dir(proj), 0o755))
	must(os.Chmod(proj, 0o700))
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242, GID: 4242}
	self := hookclient.Peer{UID: uint32(os.Geteuid())}
	q := strconv.Quote(proj)
	judgeCall := `{"hook_event_name":"PreToolUse","session_id":"c1","transcript_path":"/dev/null","cwd":` + q + `,"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"ls"}}`
	stopCall := `{"hook_event_name":"Stop","session_id":"c2","transcript_path":"/dev/null","cwd":` + q + `,"last_assistant_message":"Here is the plan."}`
	for _, tc := range []struct{ route, payload string }{{hookclient.RouteJudge, judgeCall}, {hookclient.RouteGate, stopCall}} {
		code, out, errs := hookCall(t, d, tc.route, other, tc.payload)
		if !strings.Contains(errs+out, "not open to the caller") {
			t.Errorf("%s for another uid: exit %d, stdout %s, stderr %s; want the project refused", tc.route, code, out, errs)
		}
		if _, out, errs := hookCall(t, d, tc.route, self, tc.payload); strings.Contains(errs+out, "not open to the caller") {
			t.Errorf("%s for the daemon's user refused: %s %s", tc.route, out, errs)
		}
	}
	must(os.Chmod(proj, 0o755))
	if _, out, errs := hookCall(t, d, hookclient.RouteJudge, other, judgeCall); strings.Contains(errs+out, "not open to the caller") {
		t.Errorf("an open project refused: %s %s", out, errs)
	}
}

// openFixture is a world-searchable directory holding what the opener
// tests need: a world-readable transcript, a secret only its owner may
// read, a private directory with a world-readable file inside, links to
// each, a FIFO and a directory.
type openFixture struct {
	dir, open, secret, private, inPrivate, fifo string
}

func newOpenFixture(t *testing.T) openFixture {
	t.Helper()
	dir := openDir(t)
	f := openFixture{
		dir:       dir,
		open:      filepath.Join(dir, "open.jsonl"),
		secret:    filepath.Join(dir, "secret.jsonl"),
		private:   filepath.Join(dir, "private"),
		inPrivate: filepath.Join(dir, "private", "t.jsonl"),
		fifo:      filepath.Join(dir, "fifo"),
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(f.open, []byte("benign\n"), 0o644))
	must(os.WriteFile(f.secret, []byte("SECRET\n"), 0o600))
	must(os.Mkdir(f.private, 0o700))
	must(os.WriteFile(f.inPrivate, []byte("SECRET\n"), 0o644))
	must(syscall.Mkfifo(f.fifo, 0o666))
	must(os.Chmod(f.fifo, 0o666))
	must(os.Symlink(f.secret, filepath.Join(dir, "to-secret")))
	must(os.Symlink(f.open, filepath.Join(dir, "to-open")))
	must(os.Symlink(f.private, filepath.Join(dir, "to-private")))
	return f
}

// openWithin runs open(path) and fails the test if it does not return
// within a few seconds (a FIFO opened for reading waits for a writer).
func openWithin(t *testing.T, open func(string) (*os.File, error), path string) (*os.File, error) {
	t.Helper()
	type res struct {
		f   *os.File
		err error
	}
	ch := make(chan res, 1)
	go func() {
		f, err := open(path)
		ch <- res{f, err}
	}()
	select {
	case r := <-ch:
		return r.f, r.err
	case <-time.After(5 * time.Second):
		// unblock the open so the goroutine ends
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("open %s did not return within 5s", path)
		return nil, nil
	}
}

// The daemon's opener for a caller of another uid checks the file it
// opened: a regular file the caller may read, under directories it may
// search, whatever links the path went through.
func TestCallerOpener(t *testing.T) {
	fx := newOpenFixture(t)
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242}
	self := hookclient.Peer{UID: uint32(os.Geteuid())}
	tests := []struct {
		name string
		path string
		peer hookclient.Peer
		ok   bool
	}{
		{"world-readable", fx.open, other, true},
		{"link to world-readable", filepath.Join(fx.dir, "to-open"), other, true},
		{"owner only", fx.secret, other, false},
		{"link to owner only", filepath.Join(fx.dir, "to-secret"), other, false},
		{"readable file in a private dir", fx.inPrivate, other, false},
		{"readable file through a link to a private dir", filepath.Join(fx.dir, "to-private", "t.jsonl"), other, false},
		{"fifo", fx.fifo, other, false},
		{"directory", fx.dir, other, false},
		{"character device", os.DevNull, other, false},
		{"missing", filepath.Join(fx.dir, "nope"), other, false},
		{"the daemon's own user", fx.secret, self, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := openWithin(t, callerOpener(tt.peer), tt.path)
			if (err == nil) != tt.ok {
				t.Fatalf("open %s as uid %d: %v, want ok=%v", tt.path, tt.peer.UID, err, tt.ok)
			}
			if err != nil {
				if _, statErr := os.Stat(tt.path); statErr == nil && !strings.Contains(err.Error(), "not readable by the caller (uid "+strconv.Itoa(int(tt.peer.UID))+")") {
					t.Errorf("refusal does not name the caller: %v", err)
				}
				return
			}
			defer f.Close()
			if b, err := io.ReadAll(f); err != nil || len(b) == 0 {
				t.Errorf("read: %q %v", b, err)
			}
		})
	}
}

// A file the caller owns is its own even when no one else may read it.
func TestCallerOpenerOwnFile(t *testing.T) {
	fx := newOpenFixture(t)
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242}
	own := filepath.Join(fx.dir, "own.jsonl")
	if err := os.WriteFile(own, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, int(other.UID), -1); err != nil {
		t.Skipf("cannot give a file to another uid: %v", err)
	}
	f, err := callerOpener(other)(own)
	if err != nil {
		t.Fatalf("own 0600 file refused: %v", err)
	}
	f.Close()
}

// A file opened, then unlinked, has no place in the file system the
// caller could reach it by: refused.
func TestCallerMayReadDeleted(t *testing.T) {
	fx := newOpenFixture(t)
	f, err := os.Open(fx.open)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242, GID: 4242}
	if err := callerMayRead(f, fx.open, other); err != nil {
		t.Fatalf("linked: %v", err)
	}
	if err := os.Remove(fx.open); err != nil {
		t.Fatal(err)
	}
	if err := callerMayRead(f, fx.open, other); err == nil || !strings.Contains(err.Error(), "not linked") {
		t.Fatalf("deleted: %v, want a refusal", err)
	}
}

// The time-of-check/time-of-use hole: Admit checks a path, the hook opens
// it later. A caller passes the check with a link to its own readable
// file, then points the link (or a directory on the path) at a file only
// the daemon may read. The opener refuses what it opened. Replacing
// callerOpener(other) by os.Open here makes the test fail: it reads
// "SECRET".
func TestCallerOpenerRefusesSwap(t *testing.T) {
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242}
	for _, tc := range []struct {
		name string
		swap func(fx openFixture) (path string, swap func() error)
	}{
		{"link to a secret", func(fx openFixture) (string, func() error) {
			link := filepath.Join(fx.dir, "t.jsonl")
			return link, swapLink(link, fx.open, fx.secret)
		}},
		{"directory to a private one", func(fx openFixture) (string, func() error) {
			// the caller's own directory holds a world-readable t.jsonl;
			// it becomes a link to the daemon's private directory, whose
			// t.jsonl is world-readable too
			dir := filepath.Join(fx.dir, "mine")
			if err := os.Mkdir(dir, 0o755); err != nil {
				return "", func() error { return err }
			}
			if err := os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte("benign\n"), 0o644); err != nil {
				return "", func() error { return err }
			}
			return filepath.Join(dir, "t.jsonl"), func() error {
				if err := os.Rename(dir, dir+".old"); err != nil {
					return err
				}
				return os.Symlink(fx.private, dir)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newOpenFixture(t)
			path, swap := tc.swap(fx)
			if err := callerCanRead(&hooks.Event{TranscriptPath: path}, other); err != nil {
				t.Fatalf("admit before the swap: %v", err)
			}
			if err := swap(); err != nil {
				t.Fatal(err)
			}
			f, err := callerOpener(other)(path)
			if err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				t.Fatalf("the opener read %q after the swap", b)
			}
			if !strings.Contains(err.Error(), "not readable by the caller") {
				t.Fatalf("refusal %v", err)
			}
		})
	}
}

// swapLink makes link point at from and returns the swap that points it
// at to, atomically (a rename over the link).
func swapLink(link, from, to string) func() error {
	if err := os.Symlink(from, link); err != nil {
		return func() error { return err }
	}
	return func() error {
		if err := os.Symlink(to, link+".new"); err != nil {
			return err
		}
		return os.Rename(link+".new", link)
	}
}

// swapCallers are the callers of the swap tests: another uid, which must
// not get at the secret, and the daemon's own (the control), which does,
// so each test can tell.
var swapCallers = []struct {
	name   string
	peer   hookclient.Peer
	leaked bool
}{
	{"another uid", hookclient.Peer{UID: uint32(os.Geteuid()) + 4242}, false},
	{"the daemon's uid (control)", hookclient.Peer{UID: uint32(os.Geteuid())}, true},
}

// swapOnAdmit writes benign (world-readable) and secret (0600, in a
// directory only the daemon may search) files, links name to benign,
// and makes d swap the link to secret right after it admits a payload.
// It returns the link and whether the swap ran.
func swapOnAdmit(t *testing.T, d *hookDaemon, name, benignBody, secretBody string) (link string, swapped *bool) {
	t.Helper()
	fx := newOpenFixture(t)
	benign, secret := filepath.Join(fx.dir, "benign.jsonl"), filepath.Join(fx.private, "secret.jsonl")
	if err := os.WriteFile(benign, []byte(benignBody), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte(secretBody), 0o600); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(fx.dir, name)
	swap := swapLink(link, benign, secret)
	swapped = new(bool)
	d.testingOnlyAdmitted = func() {
		if err := swap(); err != nil {
			t.Error(err)
		}
		*swapped = true
	}
	return link, swapped
}

// End to end through the daemon's gate: a Stop payload whose transcript
// is a link to the caller's readable transcript when the daemon checks
// it, and to a transcript only the daemon may read when the gate opens
// it. The gate blocks, and nothing of the secret transcript reaches its
// answer. Run as the daemon's own uid (the control) the same swap lets
// the gate read the secret, so the test can tell.
func TestDaemonGateRefusesSwappedTranscript(t *testing.T) {
	const secretText = "SECRET-7f3a9: the tests pass."
	line := func(text string) string {
		return `{"type":"assistant","isSidechain":false,"message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":` + strconv.Quote(text) + `}]}}` + "\n"
	}
	for _, tc := range swapCallers {
		t.Run(tc.name, func(t *testing.T) {
			_, d, proj := daemonEnv(t)
			link, swapped := swapOnAdmit(t, d, "transcript.jsonl", line("Nothing to report."), line(secretText))
			payload := `{"hook_event_name":"Stop","session_id":"s1","cwd":` + strconv.Quote(proj) + `,"stop_hook_active":false,"transcript_path":` + strconv.Quote(link) + `}`
			code, out, errs := hookCall(t, d, hookclient.RouteGate, tc.peer, payload)
			if code != 0 || !*swapped {
				t.Fatalf("gate: exit %d, swapped %v\nstdout %s\nstderr %s", code, *swapped, out, errs)
			}
			if leaked := strings.Contains(out+errs, "SECRET-7f3a9"); leaked != tc.leaked {
				t.Fatalf("secret in the answer: %v, want %v\nstdout %s\nstderr %s", leaked, tc.leaked, out, errs)
			}
			if !tc.leaked && (!strings.Contains(out, `"block"`) || !strings.Contains(out, "not readable by the caller")) {
				t.Fatalf("want a block naming the refusal\nstdout %s\nstderr %s", out, errs)
			}
		})
	}
}

// The same swap through the daemon's ledger hook: a Codex rollout link
// that points at the caller's rollout when checked and at one only the
// daemon may read when opened. The secret rollout's exit status does not
// reach the entry (the control, as the daemon's uid, shows it would).
func TestDaemonLedgerRefusesSwappedRollout(t *testing.T) {
	const end = `{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_1","exit_code":7}}` + "\n"
	for _, tc := range swapCallers {
		t.Run(tc.name, func(t *testing.T) {
			h, d, proj := daemonEnv(t)
			link, swapped := swapOnAdmit(t, d, "rollout.jsonl", "{}\n", end)
			payload := `{"hook_event_name":"PostToolUse","session_id":"r1","turn_id":"t1","cwd":` + strconv.Quote(proj) + `,"tool_name":"Bash","tool_use_id":"call_1","tool_input":{"command":"ls"},"tool_response":"ok","transcript_path":` + strconv.Quote(link) + `}`
			if code, out, errs := hookCall(t, d, hookclient.RouteLedger, tc.peer, payload, "--runtime", "codex"); code != 0 || !*swapped {
				t.Fatalf("ledger: exit %d, swapped %v\nstdout %s\nstderr %s", code, *swapped, out, errs)
			}
			l, err := ledger.Open(h)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := l.ReadVerified("r1")
			if err != nil || len(entries) != 1 {
				t.Fatalf("entries %d, %v", len(entries), err)
			}
			var body struct {
				ExitCode    *int `json:"exit_code"`
				ExitUnknown bool `json:"exit_unknown"`
			}
			if err := json.Unmarshal(entries[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if leaked := body.ExitCode != nil && *body.ExitCode == 7; leaked != tc.leaked || body.ExitUnknown == tc.leaked {
				t.Fatalf("body %s: exit status from the secret rollout %v, want %v", entries[0].Body, leaked, tc.leaked)
			}
		})
	}
}
