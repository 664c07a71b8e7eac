package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/install"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/server"
)

const policyUsage = `usage: docket policy status [--json]
       docket policy diff
       docket policy approve [--yes] [--by NAME]
       docket policy status|diff|approve --socket PATH [--from DIR] [--yes]

docket runs only on policy files a human approved: the policies under
$DOCKET_HOME/policies and the validator definitions under
$DOCKET_HOME/validators. The approval records each file's SHA-256,
signed with the state root's HMAC key ($DOCKET_HOME/policy-approval.json);
until the files in force match it, the stop gate blocks and the judge
denies every side-effecting tool call. 'docket init' approves the
defaults it installs.

  status    list the policy files and whether each is approved
  diff      show what changed since the last approval
  approve   show the diff, ask for confirmation (--yes skips the
            question), and record the files in force as approved

A policy file may be a symlink; it is judged by the file it leads to. A
symlink leading outside the state root is refused: copy the file in.
Approving is for a human at a terminal; the judge denies it to tools.

Sealed mode (--socket PATH or DOCKET_SOCKET): the files are under a
state root only the docket user can write, so the daemon on PATH does the
work, for members of its admin group (serve --admin-group G) only.
approve --from DIR sends the policy files under DIR (policies/<name>,
validators/<name>.yaml, toolchains.json), read as you; the daemon shows
the diff, writes them on confirmation and records the approval in the
name of your user.

Exit codes: 0 approved (status) or recorded (approve), 1 not approved,
declined or could not record, 2 usage error.
`

func init() {
	commands["policy"] = command{summary: "review and approve the policy files docket runs on", run: runPolicy}
}

func runPolicy(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if sock, rest, ok := hookclient.Socket(args, "by", "from"); ok {
		return policyViaSocket(sock, rest, stdin, stdout, stderr)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, policyUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return usageError("policy needs a subcommand", "docket policy status")
	}
	sub, args := args[0], args[1:]
	fs := flagSet("policy "+sub, policyUsage, stderr)
	yes := fs.Bool("yes", false, "")
	by := fs.String("by", loginName(), "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)), "")
	case sub != "status" && sub != "diff" && sub != "approve":
		return usageError(fmt.Sprintf("unknown policy subcommand %q", sub), "one of status, diff, approve")
	case *yes && sub != "approve", *asJSON && sub != "status":
		return usageError("--yes is for approve and --json for status", "")
	}
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	a, changes, files, err := policies.Status(h)
	if err != nil && sub != "approve" {
		return exitCode(1, err)
	}
	switch sub {
	case "status":
		return policyStatus(h, a, changes, files, *asJSON, stdout)
	case "diff":
		writePolicyDiff(h, a, changes, files, stdout)
		if len(changes) > 0 {
			return exitCode(1, nil)
		}
		return nil
	}
	// approve
	if err != nil {
		// an unreadable or forged record: show everything as new
		fmt.Fprintf(stderr, "docket: warning: %v; every file is shown as new\n", err)
		a = nil
		changes = nil
		for _, f := range files {
			changes = append(changes, policies.Change{Name: f.Name, Kind: "new", Path: f.Path})
		}
	}
	for _, c := range changes {
		if c.Kind == "symlink_outside" {
			return exitCode(1, fmt.Errorf("approve policy: %s; copy the file into %s instead", c, h.Root))
		}
	}
	if len(changes) == 0 && a != nil {
		fmt.Fprintf(stdout, "policy already approved (%s, by %s at %s); nothing to do\n", a.Digest, a.ApprovedBy, a.ApprovedAt)
		return nil
	}
	writePolicyDiff(h, a, changes, files, stdout)
	if !*yes {
		fmt.Fprint(stdout, "approve these policy files? [y/N] ")
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			fmt.Fprintln(stdout, "not approved")
			return exitCode(1, nil)
		}
	}
	if strings.TrimSpace(*by) == "" {
		return usageError("approve needs the approver's name", "pass --by NAME")
	}
	na, err := policies.Approve(h, *by, time.Now())
	if err != nil {
		return exitCode(1, err)
	}
	fmt.Fprintf(stdout, "approved %d policy files (%s) by %s\n", len(na.Files), na.Digest, na.ApprovedBy)
	return nil
}

func policyStatus(h home.Home, a *policies.Approval, changes []policies.Change, files []policies.PolicyFile, asJSON bool, stdout io.Writer) error {
	state := map[string]string{}
	for _, c := range changes {
		state[c.Name] = c.Kind
	}
	if asJSON {
		type row struct {
			Name    string `json:"name"`
			Path    string `json:"path"`
			Real    string `json:"real_path,omitempty"`
			SHA256  string `json:"sha256"`
			State   string `json:"state"`
			Symlink bool   `json:"symlink,omitempty"`
		}
		out := struct {
			Approved bool               `json:"approved"`
			Record   *policies.Approval `json:"approval"`
			Files    []row              `json:"files"`
			Changes  []string           `json:"changes"`
		}{Approved: len(changes) == 0, Record: a, Files: []row{}, Changes: []string{}}
		for _, f := range files {
			r := row{Name: f.Name, Path: f.Path, SHA256: f.SHA256(), State: nonEmptyStr(state[f.Name], "approved"), Symlink: f.Symlink}
			if f.Symlink {
				r.Real = f.Real
			}
			out.Files = append(out.Files, r)
		}
		for _, c := range changes {
			out.Changes = append(out.Changes, c.String())
		}
		if err := printJSON(stdout, out); err != nil {
			return err
		}
	} else {
		if a != nil {
			fmt.Fprintf(stdout, "approval: %s by %s at %s\n", a.Digest, a.ApprovedBy, a.ApprovedAt)
		} else {
			fmt.Fprintf(stdout, "approval: none (embedded defaults are approved; run 'docket policy approve' to pin)\n")
		}
		for _, f := range files {
			extra := ""
			if f.Symlink {
				extra = " -> " + f.Real
			}
			fmt.Fprintf(stdout, "  %-10s %s%s\n", nonEmptyStr(state[f.Name], "approved"), f.Name, extra)
		}
		for _, c := range changes {
			fmt.Fprintf(stdout, "  - %s\n", c)
		}
	}
	if len(changes) > 0 {
		if !asJSON {
			fmt.Fprintln(stdout, "not approved: the gate blocks and the judge denies side-effecting calls until a human runs 'docket policy approve'")
		}
		return exitCode(1, nil)
	}
	return nil
}

func writePolicyDiff(h home.Home, a *policies.Approval, changes []policies.Change, files []policies.PolicyFile, w io.Writer) {
	cur := map[string][]byte{}
	for _, f := range files {
		cur[f.Name] = f.Data
	}
	for _, c := range changes {
		switch c.Kind {
		case "symlink_outside":
			fmt.Fprintf(w, "# %s\n", c)
			continue
		}
		old := string(policies.ApprovedCopy(h, a, c.Name))
		d := install.UnifiedDiff("approved/"+c.Name, "current/"+c.Name, old, string(cur[c.Name]))
		if d == "" {
			fmt.Fprintf(w, "# %s (no approved copy to compare with)\n", c)
			continue
		}
		fmt.Fprint(w, d)
	}
}

func nonEmptyStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Sealed mode: the policy files live under a state root only the docket
// user can write, so a change goes through the daemon. `docket policy
// approve --socket PATH --from DIR` sends the files under DIR (laid out
// as in a state root: policies/<name>, validators/<name>.yaml,
// toolchains.json), read with the caller's rights; the daemon shows the
// diff, and on confirmation writes them and records the approval in the
// caller's name. Only a member of the daemon's admin group (serve
// --admin-group G), root, or the daemon's own user may do any of it: an
// agent's user cannot approve its own escalation.

// policyUpload is the body of a policy request: file name (relative to
// the state root) to content.
type policyUpload struct {
	Files map[string][]byte `json:"files,omitempty"`
}

// uploadable reports whether name may be written through the socket.
func uploadable(name string) bool {
	if name == filepath.Base(home.Home{}.ToolchainsPath()) {
		return true
	}
	dir, base, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(base, "/") || base == "" || strings.HasPrefix(base, ".") {
		return false
	}
	switch dir {
	case "policies":
		return slices.Contains(policies.Names(), base)
	case "validators":
		return strings.HasSuffix(base, ".yaml") && home.ValidSessionID(strings.TrimSuffix(base, ".yaml"))
	}
	return false
}

// readUpload reads the policy files under dir.
func readUpload(dir string) (policyUpload, error) {
	up := policyUpload{Files: map[string][]byte{}}
	add := func(name string) error {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read --from: %w", err)
		}
		up.Files[name] = b
		return nil
	}
	for _, n := range policies.Names() {
		if err := add("policies/" + n); err != nil {
			return up, err
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, "validators"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return up, fmt.Errorf("read --from: %w", err)
	}
	for _, e := range ents {
		if n := "validators/" + e.Name(); uploadable(n) {
			if err := add(n); err != nil {
				return up, err
			}
		}
	}
	if err := add("toolchains.json"); err != nil {
		return up, err
	}
	if len(up.Files) == 0 {
		return up, fmt.Errorf("--from %s holds no policy files (policies/*.yaml|md, validators/*.yaml, toolchains.json)", dir)
	}
	return up, nil
}

// policyViaSocket runs `docket policy` through the daemon.
func policyViaSocket(sock string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("policy needs a subcommand", "docket policy status")
	}
	sub := args[0]
	fs := flagSet("policy "+sub, policyUsage, stderr)
	yes := fs.Bool("yes", false, "")
	from := fs.String("from", "", "")
	asJSON := fs.Bool("json", false, "")
	fs.String("by", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return parseErr(err)
	}
	if *from != "" && sub != "approve" {
		return usageError("--from is for approve", "")
	}
	fwd := []string{sub}
	if *asJSON {
		fwd = append(fwd, "--json")
	}
	var body []byte
	if *from != "" {
		up, err := readUpload(*from)
		if err != nil {
			return exitCode(1, err)
		}
		if body, err = json.Marshal(up); err != nil {
			return exitCode(1, err)
		}
	}
	call := func(args []string) int {
		return hookclient.Run(hookclient.RoutePolicy, sock, args, bytes.NewReader(body), stdout, stderr,
			func(_ []string, _ []byte, reason string, _, stderr io.Writer) int {
				fmt.Fprintf(stderr, "docket: error: nothing approved: %s\n", reason)
				return 1
			})
	}
	if sub == "approve" && !*yes {
		// show the diff, ask here, then approve the same files
		if code := call(append(fwd, "--dry-run")); code != 0 {
			return exitCode(code, nil)
		}
		fmt.Fprint(stdout, "approve these policy files? [y/N] ")
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			fmt.Fprintln(stdout, "not approved")
			return exitCode(1, nil)
		}
	}
	if sub == "approve" {
		fwd = append(fwd, "--yes")
	}
	return exitCode(call(fwd), nil)
}

// policy is the daemon's side of `docket policy` over the socket.
func (d *hookDaemon) policy(_ context.Context, c server.HookCall, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "docket: error: %v\n", err)
		return 1
	}
	who, err := d.admin(c.Peer)
	if err != nil {
		return fail(err)
	}
	if len(c.Args) == 0 {
		return fail(errors.New("policy needs a subcommand"))
	}
	sub := c.Args[0]
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	yes := fs.Bool("yes", false, "")
	dry := fs.Bool("dry-run", false, "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(c.Args[1:]); err != nil || fs.NArg() > 0 {
		return fail(fmt.Errorf("bad policy request %q", c.Args))
	}
	var up policyUpload
	if len(c.Stdin) > 0 {
		if err := json.Unmarshal(c.Stdin, &up); err != nil {
			return fail(fmt.Errorf("bad policy request: %w", err))
		}
	}
	for name := range up.Files {
		if !uploadable(name) {
			return fail(fmt.Errorf("refuse to write %q: not a policy file", name))
		}
	}
	h, err := home.Resolve()
	if err != nil {
		return fail(err)
	}
	a, changes, files, serr := policies.Status(h)
	switch sub {
	case "status", "diff":
		if serr != nil {
			return fail(serr)
		}
		var err error
		if sub == "status" {
			err = policyStatus(h, a, changes, files, *asJSON, stdout)
		} else if writePolicyDiff(h, a, changes, files, stdout); len(changes) > 0 {
			err = exitCode(1, nil)
		}
		return report(err, stderr)
	case "approve":
	default:
		return fail(fmt.Errorf("unknown policy subcommand %q", sub))
	}
	if !*yes && !*dry {
		return fail(errors.New("approve over the socket needs --yes or --dry-run (the client asks)"))
	}
	// the diff: each uploaded file against the approved copy (else the
	// file in force), then what already differs in the files not sent
	names := slices.Sorted(maps.Keys(up.Files))
	shown := 0
	for _, name := range names {
		cur, _ := os.ReadFile(filepath.Join(h.Root, filepath.FromSlash(name)))
		if bytes.Equal(cur, up.Files[name]) {
			continue
		}
		old := policies.ApprovedCopy(h, a, name)
		if old == nil {
			old = cur
		}
		fmt.Fprint(stdout, install.UnifiedDiff("approved/"+name, "new/"+name, string(old), string(up.Files[name])))
		shown++
	}
	var rest []policies.Change
	for _, ch := range changes {
		if _, sent := up.Files[ch.Name]; !sent {
			rest = append(rest, ch)
		}
	}
	writePolicyDiff(h, a, rest, files, stdout)
	if serr == nil && shown == 0 && len(rest) == 0 && a != nil {
		fmt.Fprintf(stdout, "policy already approved (%s, by %s at %s); nothing to do\n", a.Digest, a.ApprovedBy, a.ApprovedAt)
		return 0
	}
	if *dry {
		return 0
	}
	for _, name := range names {
		if err := writePolicyFile(h, name, up.Files[name]); err != nil {
			return fail(err)
		}
	}
	na, err := policies.Approve(h, who, time.Now())
	if err != nil {
		return fail(err)
	}
	d.log("policy approved by %s: %s", who, na.Digest)
	fmt.Fprintf(stdout, "approved %d policy files (%s) by %s\n", len(na.Files), na.Digest, na.ApprovedBy)
	return 0
}

// writePolicyFile replaces one policy file under the state root.
func writePolicyFile(h home.Home, name string, data []byte) error {
	path := filepath.Join(h.Root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write policy %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".policy-*")
	if err != nil {
		return fmt.Errorf("write policy %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write policy %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write policy %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write policy %s: %w", name, err)
	}
	return nil
}

// admin names the caller when it may manage policies through the
// socket: root, the daemon's own user, or a member of the admin group
// per the user database (its primary or a supplementary group of the
// caller's uid; the peer's gid is not trusted, a setgid program could
// carry it). Anyone else is refused.
func (d *hookDaemon) admin(p hookclient.Peer) (string, error) {
	lookup := d.userGroups
	if lookup == nil {
		lookup = userGroups
	}
	name, gids, uerr := lookup(p.UID)
	if p.UID == 0 || int(p.UID) == os.Geteuid() {
		return name, nil
	}
	if d.adminGroup == "" {
		return "", fmt.Errorf("policy changes go through the daemon only for its admin group, and it has none: start it with --admin-group G (docket install --sealed does)")
	}
	g, err := user.LookupGroup(d.adminGroup)
	if err != nil {
		return "", fmt.Errorf("admin group: %w", err)
	}
	if uerr != nil || !slices.Contains(gids, g.Gid) {
		return "", fmt.Errorf("%s is not in the admin group %s: only its members may change or approve policies", name, d.adminGroup)
	}
	return name, nil
}

// userGroups is uid's name ("alice (uid 1000)") and group ids from the
// user database.
func userGroups(uid uint32) (string, []string, error) {
	name := fmt.Sprintf("uid %d", uid)
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return name, nil, err
	}
	name = u.Username + " (uid " + u.Uid + ")"
	gids, err := u.GroupIds()
	if err != nil {
		return name, nil, err
	}
	return name, append(gids, u.Gid), nil
}
