package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/gatehook"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/internal/ledgerhook/ledgerhooktest"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/server"
)

// daemonEnv is an initialised state root, a project and a daemon whose
// warm state keeps files of any age (the test's are all young).
func daemonEnv(t *testing.T) (home.Home, *hookDaemon, string) {
	t.Helper()
	server.RacyWindow = 0
	t.Cleanup(func() { server.RacyWindow = 2 * time.Second })
	root := t.TempDir()
	t.Setenv("DOCKET_HOME", root)
	if code, _, errs := runCLI("init"); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	h, err := home.At(root)
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	return h, &hookDaemon{log: t.Logf}, proj
}

// hookCall runs one hook route of d as peer would over the socket.
func hookCall(t *testing.T, d *hookDaemon, route string, peer hookclient.Peer, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := d.funcs()[route](context.Background(), server.HookCall{Args: args, Stdin: []byte(stdin), Peer: peer, Getenv: func(string) string { return "" }}, &out, &errb)
	return code, out.String(), errb.String()
}

// bindDone makes "grep -q ok ok.txt" the project's command for "done"
// in the claim binding, approved.
func bindDone(t *testing.T, h home.Home, proj string) {
	t.Helper()
	def, err := policies.Default(policies.BindingFile)
	if err != nil {
		t.Fatal(err)
	}
	pol := strings.Replace(string(def), "projects: []", "projects:\n  - root: "+proj+"\n    commands: {done: [\"grep -q ok ok.txt\"]}", 1)
	if err := os.WriteFile(filepath.Join(h.PoliciesDir(), policies.BindingFile), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := policies.Approve(h, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
}

func toolCall(session, cwd string, n int) string {
	return fmt.Sprintf(`{"session_id":%q,"transcript_path":"/dev/null","cwd":%q,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls %d"},"tool_response":{"stdout":"a","stderr":"","interrupted":false},"tool_use_id":"toolu_%d"}`, session, cwd, n, n)
}

func stopClaim(session, cwd string) string {
	return fmt.Sprintf(`{"session_id":%q,"transcript_path":"/dev/null","cwd":%q,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"All done — tests pass."}`, session, cwd)
}

// The daemon's warm policy state follows every edit of the files it came
// from: an unapproved edit is refused on the very next call, even one
// that keeps the file's size and puts its mtime back.
func TestDaemonWarmStateFollowsEdits(t *testing.T) {
	h, d, _ := daemonEnv(t)
	if _, err := d.gate(h, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.gate(h, nil); err != nil || d.gates.Loads != 1 {
		t.Fatalf("second gate: %v, %d loads (want 1: kept warm)", err, d.gates.Loads)
	}
	claims := filepath.Join(h.PoliciesDir(), policies.ClaimsFile)
	orig, err := os.ReadFile(claims)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(claims)
	// same size, mtime restored: only the inode's ctime tells
	edited := bytes.Replace(orig, []byte("block_cap: 3"), []byte("block_cap: 9"), 1)
	if bytes.Equal(edited, orig) {
		t.Fatal("claims.yaml has no block_cap: 3 to edit")
	}
	if err := os.WriteFile(claims, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(claims, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.gate(h, nil); err == nil || !strings.Contains(err.Error(), "unapproved") {
		t.Fatalf("gate after an unapproved edit: %v, want unapproved", err)
	}
	if _, err := policies.Approve(h, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
	g, err := d.gate(h, nil)
	if err != nil || g.Lexicon.BlockCap != 9 {
		t.Fatalf("after approval: %v, block cap %v", err, g)
	}
	// the judge's sets: a project's delegate file appearing reloads
	delegate := filepath.Join(t.TempDir(), "judges.md")
	if _, err := d.policySet(h, delegate); err != nil {
		t.Fatal(err)
	}
	if _, err := d.policySet(h, delegate); err != nil || d.sets.Loads != 1 {
		t.Fatalf("policy set: %v, %d loads", err, d.sets.Loads)
	}
	if err := os.WriteFile(delegate, []byte("# judges\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// a broken delegate fails closed, so the new file was read
	if _, err := d.policySet(h, delegate); err == nil || !strings.Contains(err.Error(), "front matter") {
		t.Fatalf("a new delegate file did not reload the policy set: %v", err)
	}
	if err := os.Remove(delegate); err != nil {
		t.Fatal(err)
	}
	if _, err := d.policySet(h, delegate); err != nil {
		t.Fatalf("delegate removed: %v", err)
	}
	// the ledger's keys: a rotated key reloads
	if _, err := d.ledger(h); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.HMACKeyPath(), 0o400); err != nil {
		t.Fatal(err)
	}
	before := d.ledgers.Loads
	d.ledger(h)
	if d.ledgers.Loads != before+1 {
		t.Fatal("a change under keys/ did not reload the ledger")
	}
}

// Every entry written through the socket names the caller the kernel
// vouched for: tool calls, gate decisions and validator results.
func TestDaemonRecordsPeer(t *testing.T) {
	h, d, proj := daemonEnv(t)
	peer := hookclient.Peer{UID: uint32(os.Geteuid()), GID: 4343, PID: 4444}
	if code, _, errs := hookCall(t, d, hookclient.RouteLedger, peer, toolCall("s1", proj, 1)); code != 0 {
		t.Fatalf("ledger: %d %s", code, errs)
	}
	if code, out, errs := hookCall(t, d, hookclient.RouteGate, peer, stopClaim("s1", proj)); code != 0 || !strings.Contains(out, `"block"`) {
		t.Fatalf("gate: %d %s %s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(proj, "ok.txt"), []byte("ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bindDone(t, h, proj)
	code, out, errs := hookCall(t, d, hookclient.RouteValidate, peer, "", "--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args", `{"command":["grep","-q","ok","ok.txt"]}`, "--cwd", proj)
	if code != 0 {
		t.Fatalf("validate: %d %s %s", code, out, errs)
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := l.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[ledger.Kind]bool{}
	for _, e := range entries {
		var body struct {
			Peer *hookclient.Peer `json:"peer"`
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Peer == nil || *body.Peer != peer {
			t.Errorf("seq %d %s: peer %+v, want %+v", e.Seq, e.Kind, body.Peer, peer)
		}
		seen[e.Kind] = true
	}
	for _, k := range []ledger.Kind{ledger.KindToolCall, ledger.KindGateDecision, ledger.KindValidatorPass} {
		if !seen[k] {
			t.Errorf("no %s entry written (kinds %v)", k, seen)
		}
	}
}

// The daemon hands a signed checkpoint to the witness at each stop; an
// attacker with the daemon's rights who rolls its files back, truncates
// a ledger or deletes a session outright (its files and its line in the
// signed session index) passes 'docket verify' but not
// 'docket verify --witness'.
func TestWitnessDetectsRollback(t *testing.T) {
	attacks := []struct {
		name   string
		attack func(t *testing.T, h home.Home, snapshot string)
		want   string
	}{
		{"roll the whole state root back", func(t *testing.T, h home.Home, snapshot string) {
			if err := os.RemoveAll(h.Root); err != nil {
				t.Fatal(err)
			}
			copyTree(t, snapshot, h.Root)
		}, "s1"},
		{"truncate the ledger to its snapshot", func(t *testing.T, h home.Home, snapshot string) {
			// the ledger, its head and its state as they were: a
			// consistent, shorter ledger
			snap := home.Home{Root: snapshot}
			matches, _ := filepath.Glob(filepath.Join(snap.LedgerDir(), "s1*"))
			if len(matches) == 0 {
				t.Fatal("no s1 files in the snapshot")
			}
			for _, m := range matches {
				os.RemoveAll(filepath.Join(h.LedgerDir(), filepath.Base(m)))
				copyTree(t, m, filepath.Join(h.LedgerDir(), filepath.Base(m)))
			}
			os.RemoveAll(h.SessionArtifactsDir("s1"))
			copyTree(t, snap.SessionArtifactsDir("s1"), h.SessionArtifactsDir("s1"))
		}, "s1"},
		{"delete the session and its index line", func(t *testing.T, h home.Home, _ string) {
			matches, _ := filepath.Glob(filepath.Join(h.LedgerDir(), "s2*"))
			for _, m := range matches {
				os.RemoveAll(m)
			}
			os.RemoveAll(h.SessionArtifactsDir("s2"))
			// and every note naming it under run/
			filepath.WalkDir(h.RunDir(), func(p string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					if b, _ := os.ReadFile(p); strings.Contains(e.Name(), "s2") || strings.Contains(string(b), "s2") {
						os.Remove(p)
					}
				}
				return nil
			})
			idx := filepath.Join(h.LedgerDir(), ".sessions")
			b, err := os.ReadFile(idx)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
			if !strings.Contains(lines[len(lines)-1], "s2") {
				t.Fatalf("last index line is not s2's: %q", lines[len(lines)-1])
			}
			if err := os.WriteFile(idx, []byte(strings.Join(lines[:len(lines)-1], "")), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "s2"},
	}
	for _, tc := range attacks {
		t.Run(tc.name, func(t *testing.T) {
			h, d, proj := daemonEnv(t)
			d.witness = t.TempDir()
			peer := hookclient.Peer{UID: uint32(os.Geteuid())}
			stop := func(session string) {
				t.Helper()
				if code, _, errs := hookCall(t, d, hookclient.RouteGate, peer, stopClaim(session, proj)); code != 0 {
					t.Fatalf("gate: %s", errs)
				}
			}
			for i := 0; i < 3; i++ {
				hookCall(t, d, hookclient.RouteLedger, peer, toolCall("s1", proj, i))
			}
			stop("s1")
			snapshot := filepath.Join(t.TempDir(), "snap")
			copyTree(t, h.Root, snapshot)
			for i := 3; i < 6; i++ {
				hookCall(t, d, hookclient.RouteLedger, peer, toolCall("s1", proj, i))
			}
			stop("s1")
			hookCall(t, d, hookclient.RouteLedger, peer, toolCall("s2", proj, 1))
			stop("s2")
			vkey := filepath.Join(t.TempDir(), "vkey")
			copyFile(t, h.VerifierKeyPath(), vkey)
			if code, out, errs := runCLI("verify", "--witness", d.witness, "--vkey", vkey); code != 0 {
				t.Fatalf("verify --witness before the attack: %d\n%s%s", code, out, errs)
			}
			tc.attack(t, h, snapshot)
			// the attack is clean: without the witness nothing shows
			if code, out, errs := runCLI("verify", "--accept-sealed"); code != 0 {
				t.Fatalf("plain verify notices the attack, which is then no test of the witness: %d %s%s", code, out, errs)
			}
			code, out, errs := runCLI("verify", "--witness", d.witness, "--vkey", vkey)
			if code != 1 || !strings.Contains(out, "FAIL  "+tc.want) {
				t.Fatalf("verify --witness after the attack: exit %d\n%s%s", code, out, errs)
			}
			// and the daemon refuses to move the witness backwards
			if tc.want == "s1" {
				hookCall(t, d, hookclient.RouteGate, peer, stopClaim("s1", proj))
				if code, _, _ := runCLI("verify", "--witness", d.witness, "--vkey", vkey); code != 1 {
					t.Fatal("a stop after the rollback overwrote the witness")
				}
			}
		})
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Policies change through the daemon only for its admin group: the
// agent's user can neither write a policy file nor approve one, and no
// one can write anything but a policy file.
func TestPolicyThroughDaemonAdminOnly(t *testing.T) {
	h, d, _ := daemonEnv(t)
	grp, err := user.LookupGroupId("0")
	if err != nil {
		t.Skip("no group 0:", err)
	}
	d.userGroups = func(uid uint32) (string, []string, error) {
		switch uid {
		case 4242:
			return "agent (uid 4242)", []string{"4242"}, nil
		case 4343:
			return "alice (uid 4343)", []string{"4343", "0"}, nil
		}
		return fmt.Sprintf("uid %d", uid), nil, fmt.Errorf("unknown uid %d", uid)
	}
	agent := hookclient.Peer{UID: 4242, GID: 0} // a gid of the admin group is not trusted
	alice := hookclient.Peer{UID: 4343, GID: 4343}
	claims := filepath.Join(h.PoliciesDir(), policies.ClaimsFile)
	orig, err := os.ReadFile(claims)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(orig, []byte("block_cap: 3"), []byte("block_cap: 7"), 1)
	upload := func(files map[string][]byte) string {
		b, _ := json.Marshal(policyUpload{Files: files})
		return string(b)
	}
	newClaims := upload(map[string][]byte{"policies/" + policies.ClaimsFile: edited})

	// without an admin group, only root and the daemon's own user
	if code, _, errs := hookCall(t, d, hookclient.RoutePolicy, alice, newClaims, "approve", "--yes"); code != 1 || !strings.Contains(errs, "--admin-group") {
		t.Fatalf("no admin group: exit %d %s", code, errs)
	}
	d.adminGroup = grp.Name
	tests := []struct {
		name  string
		peer  hookclient.Peer
		body  string
		args  []string
		code  int
		out   string
		errs  string
		wrote bool
	}{
		{"agent approves its own edit", agent, newClaims, []string{"approve", "--yes"}, 1, "", "not in the admin group", false},
		{"agent reads the status", agent, "", []string{"status"}, 1, "", "not in the admin group", false},
		{"unknown uid", hookclient.Peer{UID: 999999}, newClaims, []string{"approve", "--yes"}, 1, "", "not in the admin group", false},
		{"admin writes a key", alice, upload(map[string][]byte{"keys/hmac.key": []byte("x")}), []string{"approve", "--yes"}, 1, "", "not a policy file", false},
		{"admin climbs out", alice, upload(map[string][]byte{"policies/../keys/hmac.key": []byte("x")}), []string{"approve", "--yes"}, 1, "", "not a policy file", false},
		{"admin without confirmation", alice, newClaims, []string{"approve"}, 1, "", "--yes or --dry-run", false},
		{"admin dry run shows the diff", alice, newClaims, []string{"approve", "--dry-run"}, 0, "+block_cap: 7", "", false},
		{"admin approves", alice, newClaims, []string{"approve", "--yes"}, 0, "by alice (uid 4343)", "", true},
		{"admin status", alice, "", []string{"status"}, 0, "by alice (uid 4343)", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := hookCall(t, d, hookclient.RoutePolicy, tc.peer, tc.body, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.errs) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s\nwant exit %d, stdout ~ %q, stderr ~ %q", code, out, errs, tc.code, tc.out, tc.errs)
			}
			got, _ := os.ReadFile(claims)
			if wrote := bytes.Equal(got, edited); wrote != tc.wrote {
				t.Fatalf("claims.yaml written: %v, want %v", wrote, tc.wrote)
			}
			if b, _ := os.ReadFile(h.HMACKeyPath()); string(b) == "x" {
				t.Fatal("the key was overwritten")
			}
		})
	}
	// the approved edit is in force
	if err := policies.CheckApproval(h); err != nil {
		t.Fatal(err)
	}
}

// The gate's kept per-session state answers repeated stops without
// reading the ledger, follows the daemon's own appends, and is dropped
// the moment anyone else writes the file: a pass recorded elsewhere is
// seen, and so is a rollback of the file under the daemon.
func TestDaemonGateStateFollowsTheLedger(t *testing.T) {
	h, d, proj := daemonEnv(t)
	peer := hookclient.Peer{UID: uint32(os.Geteuid())}
	if err := os.WriteFile(filepath.Join(proj, "ok.txt"), []byte("ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bindDone(t, h, proj)
	stop := fmt.Sprintf(`{"session_id":"g1","transcript_path":"/dev/null","cwd":%q,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done."}`, proj)
	gateSays := func(want string) {
		t.Helper()
		code, out, errs := hookCall(t, d, hookclient.RouteGate, peer, stop)
		blocked := strings.Contains(out, `"block"`)
		if code != 0 || (want == "block") != blocked {
			t.Fatalf("gate: exit %d, stdout %s, stderr %s; want %s", code, out, errs, want)
		}
	}
	reads := func() int {
		d.ev.mu.Lock()
		defer d.ev.mu.Unlock()
		if s := d.ev.m[evidenceKey(h, "g1")]; s != nil {
			return s.reads
		}
		return -1
	}
	hookCall(t, d, hookclient.RouteLedger, peer, toolCall("g1", proj, 1))
	gateSays("block")
	if reads() != 1 {
		t.Fatalf("first stop: %d reads kept", reads())
	}
	gateSays("block")
	hookCall(t, d, hookclient.RouteLedger, peer, toolCall("g1", proj, 2))
	gateSays("block")
	if reads() != 1 {
		t.Fatalf("stops after the daemon's own appends read the ledger again (%d reads)", reads())
	}
	snapshot := filepath.Join(t.TempDir(), "snap")
	copyTree(t, h.LedgerDir(), snapshot)
	// a pass recorded by another writer (here the in-process validator)
	code, out, errs := runCLI("validate", "--session", "g1", "--claim", "done", "--validator", "command_zero_exit", "--args", `{"command":["grep","-q","ok","ok.txt"]}`, "--cwd", proj)
	if code != 0 {
		t.Fatalf("validate: %d %s %s", code, out, errs)
	}
	gateSays("allow")
	if reads() != 2 {
		t.Fatalf("a pass written elsewhere was not read (%d reads)", reads())
	}
	gateSays("allow")
	// the ledger rolled back under the daemon: the pass is gone, and the
	// kept state must not remember it
	for _, name := range []string{"g1.jsonl", "g1.head", "g1.state"} {
		src := filepath.Join(snapshot, name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		copyFile(t, src, filepath.Join(h.LedgerDir(), name))
	}
	gateSays("block")
	// an append by another process is seen too
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("g1", ledger.Record{Kind: ledger.KindToolCall, Tool: "Bash", Body: map[string]any{"failed": false}}); err != nil {
		t.Fatal(err)
	}
	before := reads()
	gateSays("block")
	if reads() <= before {
		t.Fatalf("an append by another process did not make the gate read (%d reads)", reads())
	}
}

// A checkpoint of another session planted in the witness directory (one
// the agent could write) neither stops the daemon witnessing the session
// nor survives the next stop.
func TestWitnessIgnoresAPlantedCheckpoint(t *testing.T) {
	_, d, proj := daemonEnv(t)
	d.witness = t.TempDir()
	peer := hookclient.Peer{UID: uint32(os.Geteuid())}
	for i := 0; i < 5; i++ {
		hookCall(t, d, hookclient.RouteLedger, peer, toolCall("big", proj, i))
	}
	hookCall(t, d, hookclient.RouteGate, peer, stopClaim("big", proj))
	hookCall(t, d, hookclient.RouteLedger, peer, toolCall("small", proj, 1))
	copyFile(t, filepath.Join(d.witness, "big.checkpoint"), filepath.Join(d.witness, "small.checkpoint"))
	hookCall(t, d, hookclient.RouteGate, peer, stopClaim("small", proj))
	if code, out, errs := runCLI("verify", "--witness", d.witness); code != 0 {
		t.Fatalf("verify --witness: %d\n%s%s", code, out, errs)
	}
}

// The artifacts a stop reads (the commands after a stale pass) are kept
// with the session's entries: a second stop reads none from the pack, a
// stop after the daemon's own append reads only the new one. An edit of
// the pack under the daemon — even one that keeps the size and puts the
// mtime back — drops them, and the next stop reads the pack and finds
// the edit; so does an append by another process.
func TestDaemonGateKeepsArtifacts(t *testing.T) {
	h, d, proj := daemonEnv(t)
	d.group = ledger.NewGroupCommit(t.Logf)
	t.Cleanup(func() { d.group.Close() })
	peer := hookclient.Peer{UID: uint32(os.Geteuid())}
	ok := filepath.Join(proj, "ok.txt")
	if err := os.WriteFile(ok, []byte("ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bindDone(t, h, proj)
	hookCall(t, d, hookclient.RouteLedger, peer, toolCall("k1", proj, 0))
	d.group.Flush()
	if code, out, errs := runCLI("validate", "--session", "k1", "--claim", "done", "--validator", "command_zero_exit", "--args", `{"command":["grep","-q","ok","ok.txt"]}`, "--cwd", proj); code != 0 {
		t.Fatalf("validate: %d %s %s", code, out, errs)
	}
	// the pass goes stale: the gate then reads the commands after it
	if err := os.WriteFile(ok, []byte("ok, changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		hookCall(t, d, hookclient.RouteLedger, peer, toolCall("k1", proj, i))
	}
	stop := fmt.Sprintf(`{"session_id":"k1","transcript_path":"/dev/null","cwd":%q,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done."}`, proj)
	gate := func() string {
		t.Helper()
		os.RemoveAll(filepath.Join(h.RunDir(), "gate")) // the count of blocks in a row: never let through
		code, out, errs := hookCall(t, d, hookclient.RouteGate, peer, stop)
		if code != 0 || !strings.Contains(out, `"block"`) {
			t.Fatalf("gate: exit %d, stdout %s, stderr %s; want a block", code, out, errs)
		}
		return out
	}
	artReads := func() int {
		d.ev.mu.Lock()
		defer d.ev.mu.Unlock()
		if s := d.ev.m[evidenceKey(h, "k1")]; s != nil {
			return s.artReads
		}
		return -1
	}
	gate()
	if n := artReads(); n != 3 {
		t.Fatalf("first stop read %d artifacts, want the 3 commands after the pass", n)
	}
	gate()
	if n := artReads(); n != 3 {
		t.Fatalf("a second stop read artifacts again (%d reads)", n)
	}
	hookCall(t, d, hookclient.RouteLedger, peer, toolCall("k1", proj, 4))
	out := gate()
	if n := artReads(); n != 4 {
		t.Fatalf("after the daemon's own append: %d reads, want 4", n)
	}
	if strings.Contains(out, "unreadable") {
		t.Fatalf("gate before the edit: %s", out)
	}
	// edit "ls 2" into "ls 9" in the pack, same size, mtime put back
	d.group.Flush()
	pack := filepath.Join(h.SessionArtifactsDir("k1"), ledger.PackName)
	st, err := os.Stat(pack)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(b), `"ls 2"`, `"ls 9"`)
	if edited == string(b) {
		t.Fatal("no command to edit in the pack")
	}
	if err := os.WriteFile(pack, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(pack, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if out := gate(); !strings.Contains(out, "unreadable") {
		t.Fatalf("a stop after the pack was edited used the kept artifacts: %s", out)
	}
	// and an append by another process drops them too (the edit undone
	// first, so that only the drop can make the stop read the pack)
	if err := os.WriteFile(pack, b, 0o600); err != nil {
		t.Fatal(err)
	}
	gate()
	before := artReads()
	gate()
	if artReads() != before {
		t.Fatal("artifacts not kept again after the pack was restored")
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("k1", ledger.Record{Kind: ledger.KindToolCall, Tool: "Read", Body: map[string]any{"failed": false}}); err != nil {
		t.Fatal(err)
	}
	gate()
	if n := artReads(); n < 4 {
		t.Fatalf("after another process appended, the stop read %d artifacts, want them all again", n)
	}
}

// The daemon's kept state of a session holds what a stop reads (tool
// calls, validator results, the last gate decision of each event and
// agent), not every decision of a long session, and a stop decides on
// it as the in-process gate does on the ledger.
func TestDaemonKeptStateStaysSmall(t *testing.T) {
	h, d, proj := daemonEnv(t)
	peer := hookclient.Peer{UID: uint32(os.Geteuid())}
	judgeCall := func(n int) string {
		return fmt.Sprintf(`{"session_id":"k1","transcript_path":"/dev/null","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls %d"},"tool_use_id":"toolu_j%d"}`, proj, n, n)
	}
	hookCall(t, d, hookclient.RouteLedger, peer, toolCall("k1", proj, 1))
	const rounds = 40
	var answer string
	copyRoot := filepath.Join(t.TempDir(), "root")
	for i := 0; i < rounds; i++ {
		if code, _, errs := hookCall(t, d, hookclient.RouteJudge, peer, judgeCall(i)); code != 0 {
			t.Fatalf("judge: %d %s", code, errs)
		}
		if i == rounds-1 {
			copyTree(t, h.Root, copyRoot)
		}
		code, out, errs := hookCall(t, d, hookclient.RouteGate, peer, stopClaim("k1", proj))
		// blocked, or let through after block_cap blocks in a row
		if code != 0 || !strings.Contains(out, `"block"`) && !strings.Contains(out, "UNSUPPORTED") {
			t.Fatalf("gate %d: exit %d %s %s", i, code, out, errs)
		}
		answer = out
	}
	d.ev.mu.Lock()
	var kinds []ledger.Kind
	for _, s := range d.ev.m {
		for _, e := range s.all {
			kinds = append(kinds, e.Kind)
		}
	}
	d.ev.mu.Unlock()
	// the tool call, the last gate decision, and at most the last entry
	if len(kinds) == 0 || len(kinds) > 3 {
		t.Fatalf("kept %d entries after %d stops and judge calls: %v", len(kinds), rounds, kinds)
	}
	// the same stop in-process, on the state the daemon's last stop saw
	t.Setenv("DOCKET_HOME", copyRoot)
	var out, errb bytes.Buffer
	if code := gatehook.Main(context.Background(), nil, strings.NewReader(stopClaim("k1", proj)), &out, &errb); code != 0 || out.String() != answer {
		t.Fatalf("in-process gate: exit %d %s %s\ndaemon: %s", code, out.String(), errb.String(), answer)
	}
}

// keepAppend, one entry at a time, and keepRelevant, in one pass, keep
// exactly the entries no later entry supersedes, on random sessions.
func TestKeptEntriesArePruned(t *testing.T) {
	kinds := []ledger.Kind{ledger.KindToolCall, ledger.KindToolFailure, ledger.KindJudgeDecision, ledger.KindGateDecision,
		ledger.KindValidatorPass, ledger.KindUserPrompt, ledger.KindSeal}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 500; round++ {
		var es []*ledger.Entry
		for i := 0; i < rng.IntN(40); i++ {
			e := &ledger.Entry{Seq: uint64(i), Kind: kinds[rng.IntN(len(kinds))]}
			if e.Kind == ledger.KindGateDecision {
				e.Event = []string{"Stop", "SubagentStop"}[rng.IntN(2)]
				e.AgentID = []string{"", "a1", "a2"}[rng.IntN(3)]
			}
			es = append(es, e)
		}
		var want []*ledger.Entry
		for i, e := range es {
			superseded := false
			for _, later := range es[i+1:] {
				superseded = superseded || ledger.Superseded(e, later)
			}
			if !superseded {
				want = append(want, e)
			}
		}
		var folded []*ledger.Entry
		for _, e := range es {
			folded = keepAppend(folded, e)
		}
		if got := keepRelevant(es); !slices.Equal(got, want) || !slices.Equal(folded, want) {
			t.Fatalf("session %v:\nkeepRelevant %v\nkeepAppend   %v\nwant         %v", es, got, folded, want)
		}
	}
}

// Through the daemon, a Codex MCP call that failed without a hook is
// recorded at the next call's judge from the rollout, which the daemon
// opens as the caller (callerOpener), and the entry names the caller.
func TestDaemonRecordsUnhookedFailure(t *testing.T) {
	h, d, proj := daemonEnv(t)
	for _, p := range []string{filepath.Dir(proj), proj} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	peer := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242, GID: 4242, PID: int32(os.Getpid())}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	rollout := ledgerhooktest.UnhookedFailure(t, l, openDir(t), 0o644)
	const session = ledgerhooktest.Session
	next := fmt.Sprintf(`{"session_id":%q,"turn_id":"t1","transcript_path":%q,"cwd":%q,"hook_event_name":"PreToolUse","model":"gpt-5.5","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"call_docket_05"}`, session, rollout, proj)
	if code, out, errs := hookCall(t, d, hookclient.RouteJudge, peer, next, "--runtime", "codex"); code != 0 {
		t.Fatalf("judge: exit %d, stdout %s, stderr %s", code, out, errs)
	}
	entries, err := l.ReadVerified(session)
	if err != nil {
		t.Fatal(err)
	}
	var failure *ledger.Entry
	for _, e := range entries {
		if e.Kind == ledger.KindToolFailure {
			failure = e
		}
	}
	if failure == nil || failure.ToolUseID != "call_docket_03" {
		t.Fatalf("no tool_failure for the failed MCP call: %d entries", len(entries))
	}
	var body struct {
		Peer         *hookclient.Peer `json:"peer"`
		RecordedFrom string           `json:"recorded_from"`
	}
	json.Unmarshal(failure.Body, &body)
	if body.Peer == nil || *body.Peer != peer || body.RecordedFrom != "rollout" {
		t.Errorf("tool_failure body %s", failure.Body)
	}
}
