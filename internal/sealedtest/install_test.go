package sealedtest

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The real 'docket install --sealed' against a temporary prefix, on this
// machine's user database (no systemd: the daemon is started from the
// unit's ExecStart line), then a round trip as the agent, policy changes
// refused to the agent and accepted from an admin, and the real
// uninstall.
func TestSealedInstallReal(t *testing.T) {
	e := setup(t) // binaries, the agent user and its project
	const sealedUser, adminGroup, admin = "docketsealed", "docketadmins", "docketadmin1"
	for _, u := range []string{sealedUser, admin} {
		if _, err := user.Lookup(u); err == nil {
			exec.Command("userdel", u).Run()
		}
	}
	exec.Command("groupdel", adminGroup).Run()
	t.Cleanup(func() {
		exec.Command("userdel", sealedUser).Run()
		exec.Command("userdel", admin).Run()
		exec.Command("groupdel", adminGroup).Run()
	})

	dir, err := os.MkdirTemp("", "docket-install-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	prefix, src, homeDir := filepath.Join(dir, "prefix"), filepath.Join(dir, "src"), filepath.Join(dir, "home")
	for _, d := range []string{prefix, homeDir} {
		must(t, os.MkdirAll(d, 0o755))
	}
	docket := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(e.bin, "docket"), args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + homeDir, "DOCKET_HOME=" + src}, env...)
		cmd.Dir = e.proj
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := docket(nil, "init"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	key, err := os.ReadFile(filepath.Join(src, "keys", "hmac.key"))
	must(t, err)

	// run as with sudo by the agent's user: the settings stay theirs
	sudo := []string{"SUDO_UID=" + strconv.Itoa(e.agentID), "SUDO_GID=" + strconv.Itoa(e.agentID), "SUDO_USER=" + agentUser}
	out, err := docket(sudo, "install", "--sealed", "--prefix", prefix, "--user", sealedUser, "--admin-group", adminGroup,
		"--witness", "/witness", "--bin", e.bin)
	if err != nil {
		t.Fatalf("install --sealed: %v\n%s", err, out)
	}
	t.Logf("install --sealed:\n%s", out)
	for _, want := range []string{"created system user " + sealedUser, "created admin group " + adminGroup, "moved keys, ledger",
		"skipped 'systemctl enable --now docket.service' (systemd is not PID 1 here)", "wired the hooks (--socket "} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q", want)
		}
	}
	root, sock, witness := filepath.Join(prefix, "var/lib/docket"), filepath.Join(prefix, "run/docket/docket.sock"), filepath.Join(prefix, "witness")
	st, err := os.Stat(root)
	must(t, err)
	if st.Mode().Perm() != 0o700 || int(st.Sys().(*syscall.Stat_t).Uid) != lookupID(t, sealedUser) {
		t.Fatalf("%s: mode %v, owner %d", root, st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid)
	}
	if b, err := os.ReadFile(filepath.Join(root, "keys", "hmac.key")); err != nil || !bytes.Equal(b, key) {
		t.Fatalf("key not moved: %v", err)
	}
	// the agent reads no byte of it
	for _, f := range []string{filepath.Join(root, "keys", "hmac.key"), filepath.Join(root, "policies", "claims.yaml")} {
		if out, err := exec.Command("runuser", "-u", agentUser, "--", "cat", f).CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
			t.Errorf("agent read %s: %v %s", f, err, out)
		}
	}

	// start the daemon as the unit would
	unit, err := os.ReadFile(filepath.Join(prefix, "etc/systemd/system/docket.service"))
	must(t, err)
	execStart := ""
	for _, l := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			execStart = v
		}
	}
	if execStart == "" {
		t.Fatalf("no ExecStart in the unit:\n%s", unit)
	}
	daemon := exec.Command("setpriv", "--reuid", sealedUser, "--regid", sealedUser, "--init-groups",
		"--inh-caps", "+setuid,+setgid,+chown", "--ambient-caps", "+setuid,+setgid,+chown",
		"env", "DOCKET_HOME="+root, "sh", "-c", "exec "+execStart)
	var log bytes.Buffer
	daemon.Stdout, daemon.Stderr = &log, &log
	must(t, daemon.Start())
	// stopped as systemd stops it: SIGTERM, which commits every pending
	// head before exit, and SIGKILL only if it hangs
	stopDaemon := func() {
		if daemon.Process == nil {
			return
		}
		daemon.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { daemon.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			daemon.Process.Kill()
			<-done
			t.Errorf("daemon ignored SIGTERM for 10 s:\n%s", log.String())
		}
		daemon.Process = nil
	}
	t.Cleanup(stopDaemon)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not listen on %s:\n%s", sock, log.String())
		}
	}

	// the agent's hooks, as wired, go through it
	settings, err := os.ReadFile(filepath.Join(e.proj, ".claude/settings.json"))
	must(t, err)
	if !strings.Contains(string(settings), "--socket "+sock) {
		t.Fatalf("settings not wired with the socket:\n%s", settings)
	}
	for _, p := range []string{".claude", ".claude/settings.json"} {
		if st, err := os.Stat(filepath.Join(e.proj, p)); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != e.agentID {
			t.Fatalf("%s not left to the user who ran sudo: %v", p, err)
		}
	}
	agent := func(stdin []byte, bin string, args ...string) (string, int) {
		cmd := exec.Command("runuser", append([]string{"-u", agentUser, "--", filepath.Join(e.bin, bin)}, args...)...)
		cmd.Dir, cmd.Stdin = e.proj, bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	var wired struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	must(t, json.Unmarshal(settings, &wired))
	post := wired.Hooks["PostToolUse"][0].Hooks[0].Command
	if !strings.Contains(post, "docket-hook ledger") {
		t.Fatalf("PostToolUse runs %q, not the thin client", post)
	}
	// the wired command itself, as the agent
	run := exec.Command("runuser", "-u", agentUser, "--", "sh", "-c", post)
	run.Dir, run.Stdin = e.proj, bytes.NewReader(e.ledgerBash("si1", 1))
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("the wired ledger hook as the agent: %v %s\n%s", err, out, log.String())
	}
	if out, code := agent(e.ledgerBash("si1", 2), "docket-ledger", "--socket", sock); code != 0 {
		t.Fatalf("ledger as the agent: %d %s\n%s", code, out, log.String())
	}
	if out, code := agent(e.stop("si1", "All done — tests pass."), "docket-gate", "--socket", sock); code != 0 || !strings.Contains(out, `"block"`) {
		t.Fatalf("gate as the agent: %d %s\n%s", code, out, log.String())
	}
	if _, err := os.Stat(filepath.Join(witness, "si1.checkpoint")); err != nil {
		t.Fatalf("no witness checkpoint after the stop: %v\n%s", err, log.String())
	}

	// policies: refused to the agent, accepted from an admin
	edits := filepath.Join(dir, "edits")
	must(t, os.MkdirAll(filepath.Join(edits, "policies"), 0o755))
	claims, err := os.ReadFile(filepath.Join(root, "policies", "claims.yaml"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(edits, "policies", "claims.yaml"), bytes.Replace(claims, []byte("block_cap: 3"), []byte("block_cap: 5"), 1), 0o644))
	if out, code := agent(nil, "docket", "policy", "approve", "--socket", sock, "--from", edits, "--yes"); code != 1 || !strings.Contains(out, "not in the admin group "+adminGroup) {
		t.Fatalf("agent approving a policy: exit %d %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "policies", "claims.yaml")); !bytes.Equal(b, claims) {
		t.Fatal("the agent's refused approval changed claims.yaml")
	}
	if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G", adminGroup, admin).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v %s", admin, err, out)
	}
	cmd := exec.Command("runuser", "-u", admin, "--", filepath.Join(e.bin, "docket"), "policy", "approve", "--socket", sock, "--from", edits)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader("y\n")
	out2, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out2), "+block_cap: 5") || !strings.Contains(string(out2), "approved") || !strings.Contains(string(out2), "by "+admin) {
		t.Fatalf("admin approving a policy: %v\n%s\n%s", err, out2, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "policies", "claims.yaml")); !bytes.Contains(b, []byte("block_cap: 5")) {
		t.Fatal("the admin's approval did not write claims.yaml")
	}
	if out, code := agent(e.stop("si1", "All done — tests pass."), "docket-gate", "--socket", sock); code != 0 || strings.Contains(out, "unapproved") {
		t.Fatalf("gate after the admin's approval: %d %s", code, out)
	}

	stopDaemon()
	out, err = docket(nil, "uninstall", "--sealed", "--prefix", prefix, "--bin", e.bin)
	if err != nil {
		t.Fatalf("uninstall --sealed: %v\n%s", err, out)
	}
	t.Logf("uninstall --sealed:\n%s", out)
	if _, err := user.Lookup(sealedUser); err == nil {
		t.Errorf("user %s still exists", sealedUser)
	}
	if b, err := os.ReadFile(filepath.Join(src, "keys", "hmac.key")); err != nil || !bytes.Equal(b, key) {
		t.Fatalf("key not moved back: %v", err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", root, err)
	}
	if out, err := docket(nil, "verify", "--witness", witness); err != nil {
		t.Fatalf("verify --witness on the state moved back: %v\n%s", err, out)
	}
	settings, _ = os.ReadFile(filepath.Join(e.proj, ".claude/settings.json"))
	if strings.Contains(string(settings), "--socket") {
		t.Errorf("hooks still wired to the socket:\n%s", settings)
	}
}
