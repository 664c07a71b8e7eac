package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/server"
)

const tokenUsage = `usage: docket token create --role runtime|reviewer|admin --name NAME [--workspace W]...
       docket token list [--json]
       docket token revoke NAME|ID

Bearer tokens for 'docket serve'. create prints the token once on stdout:
only its SHA-256 is kept ($DOCKET_HOME/keys/tokens.json, mode 0600), so a
lost token is revoked and replaced, never recovered. Roles:
  runtime   recall, evaluate, write and read decisions, poll approvals, events
  reviewer  also the review queue, the inspector, approvals and sessions
  admin     also tokens
--workspace binds a runtime token to workspaces (repeat it, or give a
comma list): each request naming another workspace_id is refused with 403,
and decisions and approvals stored under another are not found. Ids are
compared byte for byte. A token created without it may name any workspace.
A running server sees new and revoked tokens on its next request.

Exit codes: 0 done, 1 failed (a taken name, an unknown token), 2 usage error.
`

func init() {
	commands["token"] = command{summary: "create, list and revoke bearer tokens for docket serve", run: runToken}
}

func runToken(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return exitCode(2, nil)
	}
	sub, args := args[0], args[1:]
	fs := flagSet("token "+sub, tokenUsage, stderr)
	role := fs.String("role", "", "")
	name := fs.String("name", "", "")
	asJSON := fs.Bool("json", false, "")
	var workspaces []string
	fs.Func("workspace", "", func(v string) error {
		for _, w := range strings.Split(v, ",") {
			workspaces = append(workspaces, strings.TrimSpace(w))
		}
		return nil
	})
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return parseErr(err)
	}
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	toks := server.OpenTokens(h)
	switch sub {
	case "create":
		if len(pos) > 0 || *asJSON {
			return usageError("token create takes only --role, --name and --workspace", "")
		}
		if *name == "" || *role == "" {
			return usageError("token create needs --role and --name", "e.g. docket token create --role runtime --name openclaw")
		}
		if !server.Role(*role).Valid() {
			return usageError(fmt.Sprintf("unknown role %q", *role), "roles: runtime, reviewer, admin")
		}
		if workspaces != nil && server.Role(*role) != server.RoleRuntime {
			return usageError("--workspace binds only runtime tokens", "a reviewer's routes (the review queue, sessions, events) are not partitioned by workspace")
		}
		if err := server.ValidateWorkspaces(server.Role(*role), workspaces); err != nil {
			return usageError(err.Error(), "e.g. --workspace billing --workspace support, or --workspace billing,support")
		}
		t, secret, err := toks.CreateBound(*name, server.Role(*role), workspaces, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, secret)
		bound := ""
		if t.Bound() {
			bound = " bound to workspaces " + strings.Join(t.Workspaces, ", ")
		}
		fmt.Fprintf(stderr, "docket: created %s token %q (%s)%s; it is shown only this once\n", t.Role, t.Name, t.ID, bound)
		return nil
	case "list":
		if len(pos) > 0 || *role != "" || *name != "" || workspaces != nil {
			return usageError("token list takes only --json", "")
		}
		ts, err := toks.List()
		if err != nil {
			return err
		}
		if *asJSON {
			out := make([]map[string]any, 0, len(ts))
			for _, t := range ts {
				m := map[string]any{"id": t.ID, "name": t.Name, "role": t.Role, "created_at": t.CreatedAt, "active": t.Active()}
				if !t.Active() {
					m["revoked_at"] = t.RevokedAt
				}
				if t.Bound() {
					m["workspaces"] = t.Workspaces
				}
				out = append(out, m)
			}
			return printJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tROLE\tWORKSPACES\tCREATED\tSTATE")
		for _, t := range ts {
			state := "active"
			if !t.Active() {
				state = "revoked " + t.RevokedAt.Format(time.RFC3339)
			}
			ws := "*"
			if t.Bound() {
				// %q: an id with spaces or look-alike letters shows as one
				ws = fmt.Sprintf("%q", t.Workspaces)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Role, ws, t.CreatedAt.Format(time.RFC3339), state)
		}
		return tw.Flush()
	case "revoke":
		if len(pos) != 1 || *role != "" || *name != "" || *asJSON || workspaces != nil {
			return usageError("token revoke takes one token name or id", "see 'docket token list'")
		}
		t, err := toks.Revoke(pos[0], time.Now())
		if errors.Is(err, server.ErrNoToken) {
			return err
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s (%s)\n", t.Name, t.ID)
		return nil
	}
	fmt.Fprint(stderr, tokenUsage)
	return usageError(fmt.Sprintf("unknown token command %q", sub), "create, list or revoke")
}
