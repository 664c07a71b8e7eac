package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docket/docket/install"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

const policyUsage = `usage: docket policy status [--json]
       docket policy diff
       docket policy approve [--yes] [--by NAME]

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

Exit codes: 0 approved (status) or recorded (approve), 1 not approved,
declined or could not record, 2 usage error.
`

func init() {
	commands["policy"] = command{summary: "review and approve the policy files docket runs on", run: runPolicy}
}

func runPolicy(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
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
