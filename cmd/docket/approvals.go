package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docket/docket/store"
)

const approvalsUsage = `usage: docket approvals [list] [--status pending|approved|rejected|modified|escalated|expired|all] [--json]
       docket approvals show ID [--json]
       docket approvals approve ID [--note TEXT]
       docket approvals reject ID [--note TEXT]
       docket approvals modify ID --args JSON [--note TEXT]
       docket approvals escalate ID [--owner NAME] [--note TEXT]

Escalated tool calls wait here for a human. The judge's hook waits a
bounded time and fails closed: unless an approval is approved (or modified,
which runs the call with the edited arguments) before the hook gives up,
the call does not run. An approval expires after its timeout (30 minutes by
default); expiry is neutral — not a rejection, nothing is learned from it.
Escalate hands it to another owner and keeps it open.

Flags:
  --by NAME     the human answering (default: $USER)
  --status S    list only approvals in that state (default: pending and escalated)
  --args JSON   modify: the edited tool arguments, a JSON object
  --owner NAME  escalate: the new owner (default: admin)
  --note TEXT   kept with the answer
  --json        print JSON

Exit codes: 0 done, 1 unknown, already decided or expired, or store error,
2 usage error.
`

func init() {
	commands["approvals"] = command{summary: "answer escalated tool calls waiting for a human", run: runApprovals}
}

func runApprovals(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := flagSet("approvals "+sub, approvalsUsage, stderr)
	var asJSON bool
	var status, by, note, argsJSON, owner string
	fs.BoolVar(&asJSON, "json", false, "")
	fs.StringVar(&status, "status", "", "")
	fs.StringVar(&by, "by", loginName(), "")
	fs.StringVar(&note, "note", "", "")
	fs.StringVar(&argsJSON, "args", "", "")
	fs.StringVar(&owner, "owner", "", "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return parseErr(err)
	}
	answers := map[string]store.ApprovalStatus{"approve": store.ApprovalApproved, "reject": store.ApprovalRejected,
		"modify": store.ApprovalModified, "escalate": store.ApprovalEscalated}
	_, isAnswer := answers[sub]
	validStatus := status == "" || status == "all" || slices.Contains(store.ApprovalStatuses, store.ApprovalStatus(status))
	switch {
	case sub != "list" && sub != "show" && !isAnswer:
		return usageError(fmt.Sprintf("unknown approvals command %q", sub), "one of list, show, approve, reject, modify, escalate")
	case sub == "list" && len(pos) > 0:
		return usageError("approvals list takes no arguments", "use 'docket approvals show ID'")
	case sub != "list" && len(pos) != 1:
		return usageError("approvals "+sub+" needs exactly one ID", "IDs are listed by 'docket approvals list'")
	case !validStatus:
		return usageError("unknown --status "+status, "")
	case sub == "modify" && argsJSON == "":
		return usageError("modify needs --args JSON", `e.g. --args '{"command":"git push origin feature"}'`)
	case sub != "modify" && argsJSON != "":
		return usageError("--args goes with modify", "")
	case owner != "" && sub != "escalate":
		return usageError("--owner goes with escalate", "")
	case isAnswer && strings.TrimSpace(by) == "":
		return usageError("who is answering?", "pass --by NAME")
	}
	if argsJSON != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil {
			return usageError("--args must be a JSON object: "+err.Error(), "")
		}
	}
	s, err := openCLIStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	switch sub {
	case "list":
		var as []store.Approval
		if status == "" {
			for _, st := range []store.ApprovalStatus{store.ApprovalPending, store.ApprovalEscalated} {
				part, err := s.ListApprovals(ctx, st)
				if err != nil {
					return err
				}
				as = append(as, part...)
			}
			store.SortApprovals(as)
		} else {
			if status == "all" {
				status = ""
			}
			if as, err = s.ListApprovals(ctx, store.ApprovalStatus(status)); err != nil {
				return err
			}
		}
		return printApprovals(stdout, as, asJSON)
	case "show":
		a, err := s.GetApproval(ctx, pos[0])
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(stdout, a)
		}
		printApproval(stdout, a)
		return nil
	}
	a, err := s.ResolveApproval(ctx, pos[0], store.Resolution{Status: answers[sub], By: by, Note: note, Owner: owner, Arguments: json.RawMessage(argsJSON)})
	if err != nil {
		return err
	}
	if ev := cliEvents(ctx, s, stderr); ev != nil {
		if err := ev.AppendApproval(ctx, a); err != nil {
			fmt.Fprintf(stderr, "docket: warning: the approval is resolved but not in the event stream: %v\n", err)
		}
	}
	if asJSON {
		return printJSON(stdout, a)
	}
	fmt.Fprintf(stdout, "%s %s: %s\n", a.ID, a.Tool, a.Status)
	return nil
}

func printApprovals(w io.Writer, as []store.Approval, asJSON bool) error {
	if asJSON {
		if as == nil {
			as = []store.Approval{}
		}
		return printJSON(w, as)
	}
	if len(as) == 0 {
		fmt.Fprintln(w, "no approvals")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTOOL\tRISK\tWAITING\tEXPIRES\tSUMMARY")
	now := time.Now()
	for _, a := range as {
		exp := "-"
		if a.Status.Open() {
			exp = "in " + a.TimeoutAt.Sub(now).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Status, a.Tool, a.RiskClass, now.Sub(a.CreatedAt).Round(time.Second), exp, clip(a.Summary, 60))
	}
	return tw.Flush()
}

func printApproval(w io.Writer, a store.Approval) {
	fmt.Fprintf(w, "approval   %s (%s)\n", a.ID, a.Status)
	fmt.Fprintf(w, "tool       %s %s\n", a.Tool, a.ToolUseID)
	fmt.Fprintf(w, "summary    %s\n", a.Summary)
	fmt.Fprintf(w, "reason     %s\n", a.Reason)
	if a.RiskClass != "" {
		fmt.Fprintf(w, "risk       %s\n", a.RiskClass)
	}
	if a.ArgumentsDigest != "" {
		fmt.Fprintf(w, "arguments  %s\n", a.ArgumentsDigest)
	}
	if a.Session != "" || a.DecisionID != "" {
		fmt.Fprintf(w, "session    %s decision %s\n", a.Session, a.DecisionID)
	}
	if a.Owner != "" {
		fmt.Fprintf(w, "owner      %s\n", a.Owner)
	}
	fmt.Fprintf(w, "created    %s, times out %s\n", a.CreatedAt.Format(time.RFC3339), a.TimeoutAt.Format(time.RFC3339))
	if a.ResolvedBy != "" {
		fmt.Fprintf(w, "answered   by %s at %s %s\n", a.ResolvedBy, a.ResolvedAt.Format(time.RFC3339), a.Note)
	}
	if len(a.Arguments) > 0 {
		fmt.Fprintf(w, "edited     %s\n", a.Arguments)
	}
	if a.Allows() {
		fmt.Fprintln(w, "the call may run")
	} else {
		fmt.Fprintln(w, "the call does not run (fails closed unless approved or modified)")
	}
}
