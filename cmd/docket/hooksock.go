package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/docket/docket/gate"
	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/gatehook"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/internal/judgehook"
	"github.com/docket/docket/internal/ledgerhook"
	"github.com/docket/docket/internal/regular"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/server"
	"github.com/docket/docket/store"
)

// hookDaemon is what `docket serve --socket` keeps warm between hook
// calls: the ledger with its keys, the gate's lexicon and binding, and
// the judge's policy sets, each rebuilt when a stat fingerprint of the
// files it came from changes (server.Warm), so an edit in same-user mode
// takes effect on the next call.
type hookDaemon struct {
	st store.Store
	// witness, when set, is the directory each session's signed
	// checkpoint is written to after every gate decision.
	witness string
	// adminGroup names the group whose members may approve policies
	// through the socket.
	adminGroup string
	// userGroups looks up a uid's name and groups (nil: the user
	// database).
	userGroups func(uid uint32) (string, []string, error)
	log        func(format string, a ...any)

	// group, when set, group-commits every append the daemon makes
	// (ledger/group.go): it answers once the entry is written, and syncs
	// and signs the heads in rounds.
	group   *ledger.GroupCommit
	ledgers server.Warm[*ledger.Ledger]
	gates   server.Warm[*gate.Gate]
	sets    server.Warm[*judge.PolicySet]
	// ev is the gate's per-session state (hooksock_evidence.go).
	ev evidence
	// witnessMu serialises witness writes, so a checkpoint never
	// replaces a larger one written concurrently.
	witnessMu sync.Mutex
	// testingOnlyAdmitted, when set, runs after a payload was admitted
	// and before the hook opens what it names (a test swaps a link).
	testingOnlyAdmitted func()
}

// policyInputs are the files the gate's and the judge's policy state is
// built from: the policies, the validator definitions, the toolchains,
// the approval record and the keys its MAC is checked with.
func policyInputs(h home.Home) []string {
	return []string{h.PoliciesDir(), h.ValidatorsDir(), h.ToolchainsPath(), policies.ApprovalPath(h), h.KeysDir()}
}

// ledger returns the state root's ledger, its keys loaded once and
// reloaded when a file under keys/ changes.
func (d *hookDaemon) ledger(h home.Home) (*ledger.Ledger, error) {
	return d.ledgers.Get(h.Root, []string{h.KeysDir()}, func() (*ledger.Ledger, error) {
		l, err := ledger.Open(h)
		if err == nil && d.group != nil {
			l.SetGroupCommit(d.group)
		}
		return l, err
	})
}

// gate returns a gate for h whose lexicon and binding are kept warm and
// whose ledger records the caller as "peer" in its gate_decision.
func (d *hookDaemon) gate(h home.Home, peer *hookclient.Peer) (*gate.Gate, error) {
	tmpl, err := d.gates.Get(h.Root, policyInputs(h), func() (*gate.Gate, error) { return gate.New(h) })
	if err != nil {
		return nil, err
	}
	g := *tmpl
	g.OpenLedger = func() (gate.Evidence, error) {
		l, err := d.ledger(h)
		if err != nil {
			return nil, err
		}
		return evidenceLedger{Ledger: l, peer: peer, ev: &d.ev}, nil
	}
	return &g, nil
}

// recorder and appender are the ledger for the judge's and the ledger
// hook's appends, which extend the gate's kept state (the hooks add the
// caller themselves).
func (d *hookDaemon) recorder(h home.Home) (judgehook.Ledger, error) {
	l, err := d.ledger(h)
	if err != nil {
		return nil, err
	}
	return evidenceLedger{Ledger: l, ev: &d.ev}, nil
}

func (d *hookDaemon) appender(h home.Home) (ledgerhook.Appender, error) {
	l, err := d.ledger(h)
	if err != nil {
		return nil, err
	}
	return evidenceLedger{Ledger: l, ev: &d.ev}, nil
}

// policySet returns the judge's policy set for h and a project's
// delegate files, kept warm per project.
func (d *hookDaemon) policySet(h home.Home, delegates ...string) (*judge.PolicySet, error) {
	key := h.Root + "\x00" + strings.Join(delegates, "\x00")
	return d.sets.Get(key, append(policyInputs(h), delegates...), func() (*judge.PolicySet, error) {
		return judge.LoadPolicySet(h, delegates...)
	})
}

// hookFuncs are the hooks `docket serve --socket` runs for thin clients:
// the very functions the hook binaries run in-process, with the
// daemon's warm state. The judge uses the daemon's open store instead of
// opening one per call.
func hookFuncs(st store.Store) map[string]server.HookFunc {
	return (&hookDaemon{st: st, log: func(string, ...any) {}}).funcs()
}

func (d *hookDaemon) funcs() map[string]server.HookFunc {
	ad := storeadapter.New(d.st)
	wire := func(e *judge.Engine) func() {
		e.OpenRecall = func(context.Context) (judge.Recaller, error) { return ad, nil }
		e.Writer, e.Approvals = ad, ad
		return nil
	}
	hooks := map[string]server.HookFunc{
		hookclient.RouteJudge: func(ctx context.Context, c server.HookCall, stdout, stderr io.Writer) int {
			peer := c.Peer
			return judgehook.Main(ctx, c.Args, bytes.NewReader(c.Stdin), stdout, stderr, judgehook.Options{
				Getenv: c.Getenv, Peer: &peer, Wire: wire, LoadPolicySet: d.policySet, OpenLedger: d.recorder, Admit: d.admit(peer), Open: callerOpener(peer)})
		},
		hookclient.RouteLedger: func(ctx context.Context, c server.HookCall, stdout, stderr io.Writer) int {
			peer := c.Peer
			return ledgerhook.Main(ctx, c.Args, bytes.NewReader(c.Stdin), stdout, stderr, ledgerhook.Options{Peer: &peer, OpenLedger: d.appender, Admit: d.admit(peer), Open: callerOpener(peer)})
		},
		hookclient.RouteGate: func(ctx context.Context, c server.HookCall, stdout, stderr io.Writer) int {
			peer := c.Peer
			return gatehook.MainWith(ctx, c.Args, bytes.NewReader(c.Stdin), stdout, stderr, gatehook.Options{
				NewGate: func(h home.Home) (*gate.Gate, error) { return d.gate(h, &peer) },
				Decided: d.publish,
				Admit:   d.admit(peer),
				Open:    callerOpener(peer),
			})
		},
		hookclient.RouteValidate: func(ctx context.Context, c server.HookCall, stdout, stderr io.Writer) int {
			// the client reads --args-file as the caller; the daemon
			// never opens a file a caller names
			for _, a := range c.Args {
				if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "args-file" {
					return report(validateError("--args-file is read by the client, not the daemon", "send the arguments with --args"), stderr)
				}
			}
			peer := c.Peer
			return report(validateLocal(ctx, c.Args, bytes.NewReader(c.Stdin), stdout, stderr, &peer), stderr)
		},
		hookclient.RoutePolicy: d.policy,
	}
	return hooks
}

// admit is the hooks' check of a decoded payload for a caller: see
// callerCanRead. It refuses early, with a clear reason; what enforces
// the rule is the opener (callerOpener), which checks the file it opened.
func admit(peer hookclient.Peer) func(*hooks.Event) error {
	return func(ev *hooks.Event) error { return callerCanRead(ev, peer) }
}

// admit is admit with the daemon's test hook.
func (d *hookDaemon) admit(peer hookclient.Peer) func(*hooks.Event) error {
	check := admit(peer)
	return func(ev *hooks.Event) error {
		err := check(ev)
		if err == nil && d.testingOnlyAdmitted != nil {
			d.testingOnlyAdmitted()
		}
		return err
	}
}

// callerCanRead refuses a payload naming a transcript its caller could
// not read itself: the daemon reads transcripts (the gate, a Codex
// rollout) with its own rights, and must not read one for a caller that
// has no right to it; the same goes for the working directory of a call
// the judge or the gate will look at (callerEnters). It runs on the event as the hook decoded it, so it
// sees the very paths the hook will open (a key given twice, a runtime
// spelled another way, change nothing). The test is permission on the
// file and every directory above it (permits); a path that does
// not exist is the hook's business. The path can change between this
// check and the hook's open: callerOpener checks again on what it opened.
func callerCanRead(ev *hooks.Event, peer hookclient.Peer) error {
	if int(peer.UID) == os.Geteuid() {
		return nil
	}
	for _, tp := range [][2]string{{"transcript_path", ev.TranscriptPath}, {"agent_transcript_path", ev.AgentTranscriptPath}} {
		k, path := tp[0], tp[1]
		if path == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			continue
		}
		real, _ = filepath.Abs(real)
		st, err := os.Stat(real)
		if err != nil {
			return fmt.Errorf("%s %s: %w", k, path, err)
		}
		ok := permits(fileRef{st: st, path: real}, peer, 0o004)
		if ok {
			if ok, err = callerSearches(filepath.Dir(real), peer); err != nil {
				return fmt.Errorf("%s %s: %w", k, path, err)
			}
		}
		if !ok {
			return fmt.Errorf("%s %s is not readable by the caller (uid %d); the daemon does not read it on its behalf", k, path, peer.UID)
		}
	}
	if ev.Cwd != "" && (ev.Name == hooks.PreToolUse || ev.IsStop()) {
		return callerEnters(ev.Cwd, peer)
	}
	return nil
}

// callerEnters refuses a working directory its caller could not list
// and enter itself: the judge and the gate read the project there with
// the daemon's rights (its git HEAD, the paths a command names, the
// files the gate digests), and must not for a caller that could not. A
// cwd that does not exist or is not a directory is the hook's business.
func callerEnters(dir string, peer hookclient.Peer) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	real, _ = filepath.Abs(real)
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return nil
	}
	at := fileRef{st: st, path: real}
	ok := permits(at, peer, 0o004) && permits(at, peer, 0o001)
	if ok {
		if ok, err = callerSearches(filepath.Dir(real), peer); err != nil {
			return fmt.Errorf("cwd %s: %w", dir, err)
		}
	}
	if !ok {
		return fmt.Errorf("cwd %s is not open to the caller (uid %d); the daemon does not read a project on its behalf", dir, peer.UID)
	}
	return nil
}

// callerSearches reports whether peer may search dir and every directory
// above it (permits).
func callerSearches(dir string, peer hookclient.Peer) (bool, error) {
	for {
		st, err := os.Stat(dir)
		if err != nil {
			return false, err
		}
		if !permits(fileRef{st: st, path: dir}, peer, 0o001) {
			return false, nil
		}
		if dir == filepath.Dir(dir) {
			return true, nil
		}
		dir = filepath.Dir(dir)
	}
}

// errCallerCannotRead is the opener's refusal of a file the caller
// could not read itself.
var errCallerCannotRead = errors.New("is not readable by the caller")

// callerOpener is the hooks' opener for the files a payload names
// (gate.Gate.Open, hooks.ResolveExitWith) when the daemon runs them for
// peer. For the daemon's own uid it is regular.Open. For another it checks
// the file it opened, not the path (which the caller may swap between a
// check and an open, a symlink or a directory it owns): the path is
// opened read-only and non-blocking (a FIFO must not hold the daemon),
// and the open file must be a regular file the caller may read (permits)
// whose place in the file system, as the kernel
// names it, lies under directories the caller may search. Anything else
// is refused and the file closed.
func callerOpener(peer hookclient.Peer) func(path string) (*os.File, error) {
	if int(peer.UID) == os.Geteuid() {
		return regular.Open
	}
	return func(path string) (*os.File, error) { return openAsCaller(path, peer) }
}

// openAsCaller opens path for peer as callerOpener describes.
func openAsCaller(path string, peer hookclient.Peer) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|callerOpenFlags, 0)
	if err != nil {
		return nil, err
	}
	if err := callerMayRead(f, path, peer); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// callerMayRead checks that uid could read the open file f (opened as
// path) itself: a regular file it may read, linked in the file system
// under directories it may search.
func callerMayRead(f *os.File, path string, peer hookclient.Peer) error {
	refuse := func(why string) error {
		return fmt.Errorf("%s %w (uid %d): %s; the daemon does not read it on its behalf", path, errCallerCannotRead, peer.UID, why)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		return fmt.Errorf("stat %s: %w", path, err)
	case !st.Mode().IsRegular():
		return refuse(fmt.Sprintf("not a regular file (%v)", st.Mode().Type()))
	case !permits(fileRef{st: st, f: f}, peer, 0o004):
		return refuse(fmt.Sprintf("mode %v, owner uid %s", st.Mode().Perm(), ownerOf(st)))
	}
	// The kernel's name for the open file: its real place, whatever
	// links and directories the path went through.
	real, err := fdPath(f)
	switch {
	case err != nil:
		return refuse("its location cannot be read: " + err.Error())
	case strings.HasSuffix(real, " (deleted)") || !filepath.IsAbs(real):
		return refuse(fmt.Sprintf("it is not linked in the file system (%q)", real))
	}
	ok, err := callerSearches(filepath.Dir(real), peer)
	switch {
	case err != nil:
		return refuse(fmt.Sprintf("a directory above %s: %v", real, err))
	case !ok:
		return refuse(fmt.Sprintf("it is %s, in a directory the caller may not search", real))
	}
	// The walk went by name: the name must still be the open file, so a
	// directory on it replaced after the kernel named it is caught
	// (unless put back in between, which takes a directory the caller
	// may rename holding one it may not search: not a sealed layout).
	if now, err := os.Stat(real); err != nil || !os.SameFile(now, st) {
		return refuse(fmt.Sprintf("%s moved while it was checked", real))
	}
	return nil
}

// fdPath is the kernel's name for f's file (Linux: /proc/self/fd/N;
// elsewhere an error).
func fdPath(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var real string
	cerr := rc.Control(func(fd uintptr) {
		real, err = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	})
	if cerr != nil {
		return "", cerr
	}
	return real, err
}

// listenSocket listens on the Unix socket path, replacing a stale socket
// (one nobody answers on) but never a live one or another kind of file.
// With group set the socket is 0660 and owned by that group, else 0666.
func listenSocket(path, group string) (*net.UnixListener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen on %s: exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: a daemon already answers there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	gid := -1
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("--socket-group: %w", err)
		}
		if gid, err = strconv.Atoi(g.Gid); err != nil {
			return nil, fmt.Errorf("--socket-group %s: gid %q: %w", group, g.Gid, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	mode := os.FileMode(0o666)
	if gid >= 0 {
		mode = 0o660
		if err := os.Chown(path, -1, gid); err != nil {
			ln.Close()
			return nil, fmt.Errorf("socket group: %w", err)
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket mode: %w", err)
	}
	return ln, nil
}
