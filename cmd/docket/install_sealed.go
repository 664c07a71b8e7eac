package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/install"
	"github.com/docket/docket/internal/home"
)

const installSealedUsage = `usage: sudo docket install --sealed [--from DIR] [--prefix DIR] [--root DIR] [--socket PATH]
                    [--user NAME] [--admin-group G] [--socket-group G] [--witness DIR]
                    [--service systemd|launchd] [--runtime R] [--scope S] [--bin DIR] [--dry-run]
       sudo docket uninstall --sealed [--prefix DIR] [--to DIR] [--keep-user] [--runtime R] [--scope S]

Sealed mode: docket holds the keys, the ledger and the policies; the
agent's user holds none of them. install --sealed, run by an admin:

  1. creates the system user NAME (docket) and the group G (docket-admin)
     whose members may approve policies ('docket policy approve --socket')
  2. moves the state root --from DIR (default: the invoking user's
     $DOCKET_HOME, else ~/.local/state/docket; it must have been through
     'docket init') to --root (default /var/lib/docket): keys, ledger,
     artifacts, store, policies, validators, owned by NAME, mode 0700
  3. writes the service: a systemd unit (/etc/systemd/system/docket.service)
     or, with --service launchd (the default on macOS, untested), a launchd
     plist (/Library/LaunchDaemons/dev.docket.daemon.plist); it runs
     'docket serve --addr "" --socket PATH' as NAME with the rights to run
     validators as their caller (CAP_SETUID, CAP_SETGID, CAP_CHOWN)
  4. enables and starts it with systemctl, when systemd runs as PID 1;
     otherwise it says so and prints the command that starts the daemon
  5. wires the hooks as 'docket install' does, each with --socket PATH,
     through docket-hook (the client-only binary) when it is in --bin
  6. records all of it in /etc/docket/sealed.json, which uninstall reads

Every path is under --prefix (default /), so a test can install into a
temporary directory. uninstall --sealed reverses each step: stops and
removes the service, moves the state back (--to, default where it came
from) owned by the invoking user, rewires the hooks in-process, and
deletes the system user unless --keep-user.

Exit codes: 0 done, 1 a step failed (the steps done so far are printed),
2 usage error.
`

// sealedSystem is every step of install --sealed that changes the
// machine beyond files under the prefix: injectable, so the unit tests
// run unprivileged against a temporary prefix.
type sealedSystem interface {
	// LookupUser returns the uid and gid of a user, or an error
	// wrapping user.UnknownUserError.
	LookupUser(name string) (uid, gid int, err error)
	AddSystemUser(name, home string) error
	DeleteUser(name string) error
	LookupGroup(name string) (gid int, err error)
	AddGroup(name string) error
	Chown(path string, uid, gid int) error
	// SystemdRunning reports whether systemd is PID 1.
	SystemdRunning() bool
	Systemctl(args ...string) error
}

// osSystem is the real machine.
type osSystem struct{}

func (osSystem) LookupUser(name string) (int, int, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return -1, -1, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid, nil
}

func (osSystem) AddSystemUser(name, home string) error {
	if runtime.GOOS == "darwin" {
		return errors.New("create the user with dscl (untested here): sysadminctl -addUser " + name)
	}
	return runTool("useradd", "--system", "--user-group", "--home-dir", home, "--no-create-home", "--shell", "/usr/sbin/nologin", name)
}

func (osSystem) DeleteUser(name string) error { return runTool("userdel", name) }

func (osSystem) LookupGroup(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, err
	}
	return strconv.Atoi(g.Gid)
}

func (osSystem) AddGroup(name string) error { return runTool("groupadd", "--system", name) }

func (osSystem) Chown(path string, uid, gid int) error { return os.Lchown(path, uid, gid) }

func (osSystem) SystemdRunning() bool {
	comm, err := os.ReadFile("/proc/1/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "systemd" {
		return false
	}
	st, err := os.Stat("/run/systemd/system")
	return err == nil && st.IsDir()
}

func (osSystem) Systemctl(args ...string) error { return runTool("systemctl", args...) }

func runTool(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// SealedRecord is /etc/docket/sealed.json: what install --sealed did.
type SealedRecord struct {
	Root        string    `json:"root"`
	From        string    `json:"from"`
	Socket      string    `json:"socket"`
	User        string    `json:"user"`
	CreatedUser bool      `json:"created_user"`
	AdminGroup  string    `json:"admin_group"`
	Service     string    `json:"service"`
	ServiceFile string    `json:"service_file"`
	Started     bool      `json:"started"`
	Bin         string    `json:"bin"`
	Moved       []string  `json:"moved"`
	OwnerUID    int       `json:"owner_uid"`
	OwnerGID    int       `json:"owner_gid"`
	At          time.Time `json:"at"`
}

// stateEntries are the names under a state root that sealed mode moves.
var stateEntries = []string{"keys", "ledger", "artifacts", "store.db", "store.db-wal", "store.db-shm", "policies", "validators",
	"toolchains.json", "policy-approval.json", "policy-approved", "cache", "run"}

// sealedFlags are install --sealed's and uninstall --sealed's flags.
type sealedFlags struct {
	prefix, root, from, to, socket, user, adminGroup, socketGroup, witness, service string
	keepUser                                                                        bool
}

func (f *sealedFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.prefix, "prefix", "/", "")
	fs.StringVar(&f.root, "root", "/var/lib/docket", "")
	fs.StringVar(&f.from, "from", "", "")
	fs.StringVar(&f.to, "to", "", "")
	fs.StringVar(&f.socket, "socket", "/run/docket/docket.sock", "")
	fs.StringVar(&f.user, "user", "docket", "")
	fs.StringVar(&f.adminGroup, "admin-group", "docket-admin", "")
	fs.StringVar(&f.socketGroup, "socket-group", "", "")
	fs.StringVar(&f.witness, "witness", "", "")
	fs.StringVar(&f.service, "service", defaultService(), "")
	fs.BoolVar(&f.keepUser, "keep-user", false, "")
}

func defaultService() string {
	if runtime.GOOS == "darwin" {
		return "launchd"
	}
	return "systemd"
}

// under is p inside the prefix.
func (f *sealedFlags) under(p string) string { return filepath.Join(f.prefix, p) }

func (f *sealedFlags) recordPath() string { return f.under("/etc/docket/sealed.json") }

// invoker is the user who ran sudo (SUDO_UID, SUDO_GID, SUDO_USER), else
// the process's own.
func invoker() (uid, gid int, name, homeDir string) {
	uid, gid = os.Getuid(), os.Getgid()
	if v, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil {
		uid = v
	}
	if v, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil {
		gid = v
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name, homeDir = u.Username, u.HomeDir
	}
	return uid, gid, name, homeDir
}

// defaultFrom is the invoking user's state root: $DOCKET_HOME when set
// (sudo keeps it only when told to), else under their home directory.
func defaultFrom() (string, error) {
	if d := os.Getenv("DOCKET_HOME"); d != "" {
		return filepath.Abs(d)
	}
	uid, _, _, hd := invoker()
	if uid == os.Getuid() || hd == "" {
		h, err := home.Resolve()
		return h.Root, err
	}
	return filepath.Join(hd, ".local", "state", "docket"), nil
}

// sealedInstaller runs the steps, printing each.
type sealedInstaller struct {
	sys    sealedSystem
	out    io.Writer
	wiring func(socket string) error // rewires the hooks ("" = in-process)
}

func (si *sealedInstaller) say(format string, a ...any) { fmt.Fprintf(si.out, format+"\n", a...) }

func (si *sealedInstaller) install(f sealedFlags) error {
	if _, err := os.Stat(f.recordPath()); err == nil {
		return fmt.Errorf("sealed mode is already installed (%s); run 'docket uninstall --sealed' first", f.recordPath())
	}
	if f.from == "" {
		var err error
		if f.from, err = defaultFrom(); err != nil {
			return err
		}
	}
	from, err := filepath.Abs(f.from)
	if err != nil {
		return fmt.Errorf("resolve --from: %w", err)
	}
	if _, err := os.Stat(filepath.Join(from, "keys", home.HMACKeyFile)); err != nil {
		return fmt.Errorf("--from %s is not an initialised state root (%v); run 'docket init' there first, or name it with --from", from, err)
	}
	// every path below is under the prefix, the unit's too
	root, socket, witness := f.under(f.root), f.under(f.socket), ""
	if f.witness != "" {
		witness = f.under(f.witness)
	}
	if from == root {
		return fmt.Errorf("--from and --root are the same directory %s", root)
	}
	rec := SealedRecord{Root: root, From: from, Socket: socket, User: f.user, AdminGroup: f.adminGroup, Service: f.service, At: time.Now().UTC().Truncate(time.Second)}
	rec.OwnerUID, rec.OwnerGID, _, _ = invoker()
	if st, err := os.Stat(from); err == nil {
		if s, ok := statOwner(st); ok {
			rec.OwnerUID, rec.OwnerGID = s.uid, s.gid
		}
	}
	if rec.Bin, err = install.DefaultBinDir(); err != nil {
		return err
	}

	// 1. user and admin group
	uid, gid, err := si.sys.LookupUser(f.user)
	if err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return fmt.Errorf("look up user %s: %w", f.user, err)
		}
		if err := si.sys.AddSystemUser(f.user, root); err != nil {
			return fmt.Errorf("create user %s: %w", f.user, err)
		}
		if uid, gid, err = si.sys.LookupUser(f.user); err != nil {
			return fmt.Errorf("look up user %s: %w", f.user, err)
		}
		rec.CreatedUser = true
		si.say("created system user %s (uid %d)", f.user, uid)
	} else {
		si.say("system user %s exists (uid %d)", f.user, uid)
	}
	if _, err := si.sys.LookupGroup(f.adminGroup); err != nil {
		if err := si.sys.AddGroup(f.adminGroup); err != nil {
			return fmt.Errorf("create admin group %s: %w", f.adminGroup, err)
		}
		si.say("created admin group %s: add the humans who approve policies (usermod -aG %s NAME)", f.adminGroup, f.adminGroup)
	} else {
		si.say("admin group %s exists", f.adminGroup)
	}

	// 2. the state moves under the sealed root
	// the parents stay searchable (the daemon's user must reach the root)
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", root, err)
	}
	for _, name := range stateEntries {
		src := filepath.Join(from, name)
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := moveTree(src, filepath.Join(root, name)); err != nil {
			return fmt.Errorf("move %s: %w", name, err)
		}
		rec.Moved = append(rec.Moved, name)
	}
	if err := sealTree(si.sys, root, uid, gid); err != nil {
		return err
	}
	si.say("moved %s from %s to %s (owner %s, mode 0700)", strings.Join(rec.Moved, ", "), from, root, f.user)
	if err := os.MkdirAll(filepath.Dir(rec.Socket), 0o755); err != nil {
		return fmt.Errorf("create socket directory: %w", err)
	}
	if err := si.sys.Chown(filepath.Dir(rec.Socket), uid, gid); err != nil {
		return fmt.Errorf("chown socket directory: %w", err)
	}
	if witness != "" {
		if err := os.MkdirAll(witness, 0o755); err != nil {
			return fmt.Errorf("create witness directory: %w", err)
		}
		if err := si.sys.Chown(witness, uid, gid); err != nil {
			return fmt.Errorf("chown witness directory: %w", err)
		}
	}

	// 3. the service
	argv := []string{filepath.Join(rec.Bin, "docket"), "serve", "--addr", "", "--socket", socket, "--admin-group", f.adminGroup}
	if f.socketGroup != "" {
		argv = append(argv, "--socket-group", f.socketGroup)
	}
	if witness != "" {
		argv = append(argv, "--witness", witness)
	}
	var text string
	switch f.service {
	case "systemd":
		rec.ServiceFile = f.under("/etc/systemd/system/docket.service")
		text = systemdUnit(f.user, root, socket, argv)
	case "launchd":
		rec.ServiceFile = f.under("/Library/LaunchDaemons/dev.docket.daemon.plist")
		text = launchdPlist(f.user, root, argv)
	default:
		return usageError(fmt.Sprintf("unknown --service %q", f.service), "systemd or launchd")
	}
	if err := os.MkdirAll(filepath.Dir(rec.ServiceFile), 0o755); err != nil {
		return fmt.Errorf("write service: %w", err)
	}
	if err := os.WriteFile(rec.ServiceFile, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write service: %w", err)
	}
	si.say("wrote %s", rec.ServiceFile)

	// 6. the record, before anything can fail half-way again
	if err := writeRecord(f.recordPath(), rec); err != nil {
		return err
	}

	// 4. start it
	switch {
	case f.service == "systemd" && f.prefix == "/" && si.sys.SystemdRunning():
		if err := si.sys.Systemctl("daemon-reload"); err != nil {
			return err
		}
		if err := si.sys.Systemctl("enable", "--now", "docket.service"); err != nil {
			return err
		}
		rec.Started = true
		if err := writeRecord(f.recordPath(), rec); err != nil {
			return err
		}
		si.say("enabled and started docket.service")
	case f.service == "systemd":
		why := "--prefix is not /"
		if !si.sys.SystemdRunning() {
			why = "systemd is not PID 1 here"
		}
		si.say("skipped 'systemctl enable --now docket.service' (%s); start the daemon yourself:\n  runuser -u %s -- env DOCKET_HOME=%s %s", why, f.user, root, shellJoin(argv))
	default:
		si.say("load it with: sudo launchctl bootstrap system %s (untested)", rec.ServiceFile)
	}

	// 5. the hooks
	if si.wiring != nil {
		if err := si.wiring(socket); err != nil {
			return fmt.Errorf("wire hooks: %w", err)
		}
	}
	si.say("sealed mode installed: the hooks call the daemon on %s; the agent's user can read no key, ledger or policy under %s", socket, root)
	si.say("set DOCKET_SOCKET=%s in the agent's environment, so 'docket validate' asks the daemon too", socket)
	return nil
}

func (si *sealedInstaller) uninstall(f sealedFlags) error {
	b, err := os.ReadFile(f.recordPath())
	if err != nil {
		return fmt.Errorf("sealed mode is not installed here (%w)", err)
	}
	var rec SealedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("read %s: %w", f.recordPath(), err)
	}
	if rec.Started && si.sys.SystemdRunning() {
		if err := si.sys.Systemctl("disable", "--now", "docket.service"); err != nil {
			return err
		}
		si.say("stopped and disabled docket.service")
	}
	if rec.ServiceFile != "" {
		if err := os.Remove(rec.ServiceFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove service: %w", err)
		}
		si.say("removed %s", rec.ServiceFile)
		if rec.Started && si.sys.SystemdRunning() {
			if err := si.sys.Systemctl("daemon-reload"); err != nil {
				return err
			}
		}
	}
	to := rec.From
	if f.to != "" {
		if to, err = filepath.Abs(f.to); err != nil {
			return fmt.Errorf("resolve --to: %w", err)
		}
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", to, err)
	}
	var moved []string
	// what was moved in, and what the daemon made since (its store)
	for _, name := range stateEntries {
		src := filepath.Join(rec.Root, name)
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dst := filepath.Join(to, name)
		if _, err := os.Lstat(dst); err == nil {
			return fmt.Errorf("move %s back: %s exists; move it aside first", name, dst)
		}
		if err := moveTree(src, dst); err != nil {
			return fmt.Errorf("move %s back: %w", name, err)
		}
		moved = append(moved, name)
	}
	if err := sealTree(si.sys, to, rec.OwnerUID, rec.OwnerGID); err != nil {
		return err
	}
	si.say("moved %s back to %s (owner uid %d)", strings.Join(moved, ", "), to, rec.OwnerUID)
	if err := os.Remove(rec.Root); err != nil && !errors.Is(err, fs.ErrNotExist) {
		si.say("left %s: %v", rec.Root, err)
	}
	if si.wiring != nil {
		if err := si.wiring(""); err != nil {
			return fmt.Errorf("rewire hooks: %w", err)
		}
	}
	if rec.CreatedUser && !f.keepUser {
		if err := si.sys.DeleteUser(rec.User); err != nil {
			return fmt.Errorf("delete user %s: %w", rec.User, err)
		}
		si.say("deleted system user %s", rec.User)
	}
	if err := os.Remove(f.recordPath()); err != nil {
		return fmt.Errorf("remove %s: %w", f.recordPath(), err)
	}
	si.say("sealed mode uninstalled: the hooks run in-process as your user again, on %s", to)
	return nil
}

func writeRecord(path string, rec SealedRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// moveTree renames src to dst, or copies and removes it across devices.
func moveTree(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		st, serr := os.Stat(src)
		if serr != nil || st.IsDir() {
			return err
		}
		b, rerr := os.ReadFile(src)
		if rerr != nil {
			return rerr
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			return err
		}
	}
	return os.RemoveAll(src)
}

// sealTree gives everything under root to uid:gid, directories 0700 and
// files 0600 (executables 0700): no one else reads a byte.
func sealTree(sys sealedSystem, root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := sys.Chown(p, uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", p, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		mode := os.FileMode(0o600)
		if d.IsDir() {
			mode = 0o700
		} else if st, err := d.Info(); err == nil && st.Mode()&0o100 != 0 {
			mode = 0o700
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
		return nil
	})
}

// systemdUnit is the service unit: the daemon as user, with only the
// capabilities it needs to run validators as their callers.
func systemdUnit(user, root, socket string, argv []string) string {
	return fmt.Sprintf(`# written by 'docket install --sealed'; 'docket uninstall --sealed' removes it
[Unit]
Description=docket sealed-mode daemon (hooks on %s)
After=local-fs.target

[Service]
Type=simple
User=%s
Group=%s
Environment=DOCKET_HOME=%s
ExecStart=%s
RuntimeDirectory=%s
RuntimeDirectoryMode=0755
UMask=0077
AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_CHOWN
CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_CHOWN
ProtectSystem=strict
ReadWritePaths=%s
PrivateTmp=yes
Restart=on-failure
RestartSec=1

[Install]
WantedBy=multi-user.target
`, socket, user, user, root, shellJoin(argv), filepath.Base(filepath.Dir(socket)), root)
}

// launchdPlist is the macOS equivalent (untested).
func launchdPlist(user, root string, argv []string) string {
	var args strings.Builder
	for _, a := range argv {
		fmt.Fprintf(&args, "\t\t<string>%s</string>\n", xmlEscape(a))
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- written by 'docket install --sealed'; untested -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>dev.docket.daemon</string>
	<key>UserName</key>
	<string>%s</string>
	<key>EnvironmentVariables</key>
	<dict>
		<key>DOCKET_HOME</key>
		<string>%s</string>
	</dict>
	<key>ProgramArguments</key>
	<array>
%s	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<true/>
	<key>Umask</key>
	<integer>63</integer>
</dict>
</plist>
`, xmlEscape(user), xmlEscape(root), args.String())
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" {
			q[i] = `""`
			continue
		}
		q[i] = a
		if strings.ContainsAny(a, " \t'\"\\$`;&|<>()*?[]#~") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// sealedArg reports whether args ask for sealed mode, and args without
// the --sealed flag.
func sealedArg(args []string) (bool, []string) {
	var rest []string
	sealed := false
	for _, a := range args {
		if a == "--sealed" || a == "-sealed" || a == "--sealed=true" {
			sealed = true
			continue
		}
		rest = append(rest, a)
	}
	return sealed, rest
}

// runSealed is install --sealed and uninstall --sealed.
func runSealed(uninstall bool, args []string, stdout, stderr io.Writer, sys sealedSystem) error {
	fs := flag.NewFlagSet("install --sealed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, installSealedUsage) }
	var f sealedFlags
	f.register(fs)
	var w wiringFlags
	w.register(fs, true)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(2, nil)
	}
	o, err := w.options("install --sealed", fs)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(f.root) || !filepath.IsAbs(f.socket) || (f.witness != "" && !filepath.IsAbs(f.witness)) {
		return usageError("--root, --socket and --witness must be absolute paths", "")
	}
	if f.service != "systemd" && f.service != "launchd" {
		return usageError(fmt.Sprintf("unknown --service %q", f.service), "systemd or launchd")
	}
	if w.dryRun {
		return usageError("--sealed has no --dry-run", "read 'docket install --sealed -h' for each step it takes")
	}
	if sys == nil {
		if os.Geteuid() != 0 {
			return exitCode(1, errors.New("install --sealed creates a user and moves the state out of your reach: run it with sudo"))
		}
		sys = osSystem{}
	}
	if w.bin == "" {
		if w.bin, err = install.DefaultBinDir(); err != nil {
			return err
		}
	}
	if o.BinDir, err = filepath.Abs(w.bin); err != nil {
		return fmt.Errorf("resolve --bin: %w", err)
	}
	uid, gid, _, _ := invoker()
	si := &sealedInstaller{sys: sys, out: stdout}
	si.wiring = func(socket string) error {
		o.Socket = socket
		// the client-only binary when it is there: it starts faster
		if st, err := os.Stat(filepath.Join(o.BinDir, install.HookBin)); err == nil && st.Mode()&0o111 != 0 {
			o.Thin = true
		}
		if err := install.CheckBinaries(o.BinDir); err != nil {
			return fmt.Errorf("hook binaries not usable: %v", err)
		}
		c, err := install.PlanInstall(o)
		if err != nil {
			return err
		}
		mode := "in-process"
		if socket != "" {
			mode = "--socket " + o.Socket
		}
		if err := applyChange(c, false, stdout, fmt.Sprintf("wired the hooks (%s) into %s (%s, %s scope)", mode, c.Path, o.Runtime, o.Scope), "hooks already wired: "+c.Path); err != nil {
			return err
		}
		// the settings are the invoking user's, not root's
		if os.Geteuid() == 0 && uid != 0 {
			// and the runtime's directory (.claude, …) if install made it
			if dir := filepath.Dir(c.Path); strings.HasPrefix(filepath.Base(dir), ".") {
				if st, err := os.Stat(dir); err == nil {
					if o, ok := statOwner(st); ok && o.uid == 0 {
						sys.Chown(dir, uid, gid)
					}
				}
			}
			sys.Chown(c.Path, uid, gid)
			if matches, _ := filepath.Glob(c.Path + ".docket-bak*"); len(matches) > 0 {
				for _, m := range matches {
					sys.Chown(m, uid, gid)
				}
			}
		}
		return nil
	}
	if uninstall {
		err = si.uninstall(f)
	} else {
		err = si.install(f)
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return exitCode(1, err)
	}
	return nil
}
