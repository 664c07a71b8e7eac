package main

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSystem is a machine install --sealed may change without root: it
// records what would be done.
type fakeSystem struct {
	users     map[string][2]int
	groups    map[string]int
	chowned   map[string][2]int
	systemd   bool
	systemctl []string
	deleted   []string
	failChown bool
}

func newFakeSystem() *fakeSystem {
	return &fakeSystem{users: map[string][2]int{}, groups: map[string]int{}, chowned: map[string][2]int{}}
}

func (f *fakeSystem) LookupUser(name string) (int, int, error) {
	if u, ok := f.users[name]; ok {
		return u[0], u[1], nil
	}
	return -1, -1, user.UnknownUserError(name)
}
func (f *fakeSystem) AddSystemUser(name, _ string) error {
	f.users[name] = [2]int{990, 990}
	return nil
}
func (f *fakeSystem) DeleteUser(name string) error {
	delete(f.users, name)
	f.deleted = append(f.deleted, name)
	return nil
}
func (f *fakeSystem) LookupGroup(name string) (int, error) {
	if g, ok := f.groups[name]; ok {
		return g, nil
	}
	return -1, user.UnknownGroupError(name)
}
func (f *fakeSystem) AddGroup(name string) error { f.groups[name] = 991; return nil }
func (f *fakeSystem) Chown(path string, uid, gid int) error {
	if f.failChown {
		return fmt.Errorf("chown %s: operation not permitted", path)
	}
	f.chowned[path] = [2]int{uid, gid}
	return nil
}
func (f *fakeSystem) SystemdRunning() bool { return f.systemd }
func (f *fakeSystem) Systemctl(args ...string) error {
	f.systemctl = append(f.systemctl, strings.Join(args, " "))
	return nil
}

func sealedCLI(t *testing.T, sys sealedSystem, uninstall bool, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := report(runSealed(uninstall, args, &out, &errb, sys), &errb)
	return code, out.String(), errb.String()
}

func TestInstallSealed(t *testing.T) {
	_, project, bin := wiringSandbox(t)
	from := os.Getenv("DOCKET_HOME")
	if code, _, errs := runCLI("init"); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	key, err := os.ReadFile(filepath.Join(from, "keys", "hmac.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "docket-hook"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	sys := newFakeSystem()
	code, out, errs := sealedCLI(t, sys, false, "--prefix", prefix, "--bin", bin, "--witness", "/var/lib/docket-witness")
	if code != 0 {
		t.Fatalf("install --sealed: exit %d\n%s%s", code, out, errs)
	}
	root := filepath.Join(prefix, "var/lib/docket")
	for _, want := range []string{"created system user docket (uid 990)", "created admin group docket-admin", "moved keys, ledger", "to " + root,
		"docket.service", "skipped 'systemctl enable --now docket.service' (systemd is not PID 1 here)", "--socket " + filepath.Join(prefix, "run/docket/docket.sock")} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// the state moved, whole, and is the docket user's alone
	if b, err := os.ReadFile(filepath.Join(root, "keys", "hmac.key")); err != nil || !bytes.Equal(b, key) {
		t.Fatalf("key not moved: %v", err)
	}
	if _, err := os.Stat(filepath.Join(from, "keys")); !os.IsNotExist(err) {
		t.Fatalf("keys still in %s: %v", from, err)
	}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is mode %v: others may read it", p, fi.Mode().Perm())
		}
		if sys.chowned[p] != [2]int{990, 990} {
			t.Errorf("%s not given to docket: %v", p, sys.chowned[p])
		}
		return nil
	})
	unit, err := os.ReadFile(filepath.Join(prefix, "etc/systemd/system/docket.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"User=docket", "Environment=DOCKET_HOME=" + root, `serve --addr "" --socket ` + filepath.Join(prefix, "run/docket/docket.sock"),
		"--admin-group docket-admin", "--witness " + filepath.Join(prefix, "var/lib/docket-witness"), "AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_CHOWN", "UMask=0077"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if len(sys.systemctl) != 0 {
		t.Errorf("systemctl ran under a prefix: %v", sys.systemctl)
	}
	// the hooks call the daemon
	settings, err := os.ReadFile(filepath.Join(project, ".claude/settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(settings), "--socket "+filepath.Join(prefix, "run/docket/docket.sock")); n != 6 {
		t.Errorf("%d hooks wired with --socket, want 6:\n%s", n, settings)
	}
	for _, sub := range []string{"docket-hook judge --runtime claude", "docket-hook ledger --runtime claude", "docket-hook gate --runtime claude --timeout 12s"} {
		if !strings.Contains(string(settings), sub) {
			t.Errorf("settings lack %q:\n%s", sub, settings)
		}
	}
	// twice is refused, nothing moves again
	if code, _, errs := sealedCLI(t, sys, false, "--prefix", prefix, "--bin", bin); code != 1 || !strings.Contains(errs, "already installed") {
		t.Fatalf("second install: exit %d %s", code, errs)
	}

	// uninstall puts everything back
	code, out, errs = sealedCLI(t, sys, true, "--prefix", prefix, "--bin", bin)
	if code != 0 {
		t.Fatalf("uninstall --sealed: exit %d\n%s%s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(from, "keys", "hmac.key")); err != nil || !bytes.Equal(b, key) {
		t.Fatalf("key not moved back: %v", err)
	}
	for _, gone := range []string{root, filepath.Join(prefix, "etc/systemd/system/docket.service"), filepath.Join(prefix, "etc/docket/sealed.json")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", gone, err)
		}
	}
	if len(sys.deleted) != 1 || sys.deleted[0] != "docket" {
		t.Errorf("users deleted: %v", sys.deleted)
	}
	settings, _ = os.ReadFile(filepath.Join(project, ".claude/settings.json"))
	if strings.Contains(string(settings), "--socket") || !strings.Contains(string(settings), "docket-judge") {
		t.Errorf("hooks not back in-process:\n%s", settings)
	}
	if code, _, errs := runCLI("verify"); code != 0 {
		t.Fatalf("verify after the round trip: %s", errs)
	}
}

func TestInstallSealedSystemd(t *testing.T) {
	_, _, bin := wiringSandbox(t)
	if code, _, errs := runCLI("init"); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	sys := newFakeSystem()
	sys.systemd = true
	sys.users["docket"] = [2]int{991, 991}
	sys.groups["docket-admin"] = 992
	// systemd runs, but the unit is under a prefix systemd does not
	// read: systemctl is not run, and the existing user and group are
	// used and left alone
	prefix := t.TempDir()
	code, out, errs := sealedCLI(t, sys, false, "--prefix", prefix, "--bin", bin)
	if code != 0 || !strings.Contains(out, "system user docket exists") || !strings.Contains(out, "admin group docket-admin exists") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if len(sys.systemctl) != 0 || !strings.Contains(out, "--prefix is not /") {
		t.Fatalf("systemctl %v for a unit under a prefix\n%s", sys.systemctl, out)
	}
	code, out, errs = sealedCLI(t, sys, true, "--prefix", prefix, "--bin", bin)
	if code != 0 || len(sys.deleted) != 0 {
		t.Fatalf("uninstall deleted a user it did not create: %v (exit %d %s%s)", sys.deleted, code, out, errs)
	}
}

func TestInstallSealedErrors(t *testing.T) {
	_, _, bin := wiringSandbox(t)
	prefix := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		errs string
	}{
		{"state never initialised", []string{"--prefix", prefix, "--bin", bin}, 1, "docket init"},
		{"relative root", []string{"--prefix", prefix, "--bin", bin, "--root", "var/lib/docket"}, 2, "absolute"},
		{"dry run", []string{"--prefix", prefix, "--bin", bin, "--dry-run"}, 2, "no --dry-run"},
		{"bad service", []string{"--prefix", prefix, "--bin", bin, "--service", "upstart"}, 2, "unknown --service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := sealedCLI(t, newFakeSystem(), false, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.errs) {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
		})
	}
	if code, _, errs := sealedCLI(t, newFakeSystem(), true, "--prefix", prefix); code != 1 || !strings.Contains(errs, "not installed") {
		t.Fatalf("uninstall with nothing installed: %d %s", code, errs)
	}
	// not root, no injected system: refused before anything changes
	if os.Geteuid() != 0 {
		var out, errb bytes.Buffer
		if code := report(runSealed(false, []string{"--prefix", prefix, "--bin", bin}, &out, &errb, nil), &errb); code != 1 || !strings.Contains(errb.String(), "sudo") {
			t.Fatalf("unprivileged: %d %s", code, errb.String())
		}
	}
}

func TestInstallSealedLaunchd(t *testing.T) {
	_, _, bin := wiringSandbox(t)
	if code, _, errs := runCLI("init"); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	prefix := t.TempDir()
	code, out, errs := sealedCLI(t, newFakeSystem(), false, "--prefix", prefix, "--bin", bin, "--service", "launchd")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	plist, err := os.ReadFile(filepath.Join(prefix, "Library/LaunchDaemons/dev.docket.daemon.plist"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<string>docket</string>", "<string>serve</string>", "<string>--socket</string>", "<key>DOCKET_HOME</key>"} {
		if !strings.Contains(string(plist), want) {
			t.Errorf("plist lacks %q:\n%s", want, plist)
		}
	}
	if _, err := os.Stat(filepath.Join(prefix, "etc/systemd")); !os.IsNotExist(err) {
		t.Errorf("a systemd unit was written for launchd: %v", err)
	}
}
