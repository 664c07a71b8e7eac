package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/sqlstore"
)

const reviewUsage = `usage: docket review [list] [--status pending|escalated|resolved] [--limit N] [--json]
       docket review show ID [--json]
       docket review confirm ID [--as instruction|evidence] [--behavior B]
       docket review edit ID [--summary TEXT] [--content TEXT] [--behavior B]
       docket review evidence_only ID
       docket review restrict_scope ID [--visibility personal|project|workspace] [--project P]
       docket review mark_stale ID
       docket review merge ID --into OTHER
       docket review reject ID
       docket review dispute ID [--with OTHER]
       docket review supersede ID --with NEWER
       docket review escalate ID

The review queue holds memories that wait for a human before a judge may
use them: instruction candidates, inferred or generated lessons, human
corrections (high priority first). ID is a review item (rev_…) or a memory
(mem_…). Nothing becomes instruction-grade without 'confirm'; when in
doubt use evidence_only. Every action is recorded with --by (default: the
login name) and shown by 'docket inspect'.

Flags for actions:
  --behavior B  what an instruction-grade memory requires of the judge:
                allow, block, revise, escalate or human_review (a lesson
                starts with its source decision's outcome; an allow never
                relaxes the built-in protections or a policy rule)
  --by NAME     the reviewer (default: $USER)
  --note TEXT   why, kept in the memory's history

The store is $DOCKET_HOME/store.db, or the database named by
DOCKET_STORE_DSN (sqlite:PATH or postgres://…).

Exit codes: 0 done, 1 the action failed (unknown id, already resolved,
would break an invariant), 2 usage error.
`

func init() {
	commands["review"] = command{summary: "review memories before judges may use them", run: runReview}
}

// openCLIStore opens the store the environment names.
func openCLIStore(ctx context.Context) (store.Store, error) {
	h, err := home.Resolve()
	if err != nil {
		return nil, err
	}
	return sqlstore.Open(ctx, h, os.Getenv(sqlstore.EnvDSN))
}

// parseInterleaved parses flags that may follow positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func loginName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

func flagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return fs
}

func parseErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return exitCode(2, nil)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runReview(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := flagSet("review "+sub, reviewUsage, stderr)
	var (
		asJSON                                 bool
		status, as, by, note, summary, content string
		behavior                               string
		visibility, project, into, with        string
		limit                                  int
	)
	fs.BoolVar(&asJSON, "json", false, "")
	fs.StringVar(&status, "status", "", "")
	fs.IntVar(&limit, "limit", 0, "")
	fs.StringVar(&as, "as", "", "")
	fs.StringVar(&by, "by", loginName(), "")
	fs.StringVar(&note, "note", "", "")
	fs.StringVar(&summary, "summary", "", "")
	fs.StringVar(&content, "content", "", "")
	fs.StringVar(&behavior, "behavior", "", "")
	fs.StringVar(&visibility, "visibility", "", "")
	fs.StringVar(&project, "project", "", "")
	fs.StringVar(&into, "into", "", "")
	fs.StringVar(&with, "with", "", "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return parseErr(err)
	}
	isAction := slices.Contains(store.ReviewActions, sub)
	switch {
	case sub != "list" && sub != "show" && !isAction:
		return usageError(fmt.Sprintf("unknown review action %q", sub), "one of list, show, "+strings.Join(store.ReviewActions, ", "))
	case sub == "list" && len(pos) > 0:
		return usageError("review list takes no arguments", "use 'docket review show ID' for one item")
	case sub != "list" && len(pos) != 1:
		return usageError("review "+sub+" needs exactly one ID", "IDs are listed by 'docket review list'")
	case status != "" && !slices.Contains([]string{"pending", "escalated", "resolved"}, status):
		return usageError("--status is pending, escalated or resolved", "")
	case sub == store.ActMerge && into == "":
		return usageError("merge needs --into OTHER", "OTHER is the memory that survives")
	case sub == store.ActSupersede && with == "":
		return usageError("supersede needs --with NEWER", "NEWER is the memory that replaces this one")
	case into != "" && sub != store.ActMerge, with != "" && sub != store.ActSupersede && sub != store.ActDispute:
		return usageError("--into goes with merge, --with with supersede and dispute", "")
	case behavior != "" && sub != store.ActConfirm && sub != store.ActEdit:
		return usageError("--behavior goes with confirm and edit", "")
	case behavior != "" && !slices.Contains(store.Behaviors, behavior):
		return usageError("--behavior is one of "+strings.Join(store.Behaviors, ", "), "")
	case as != "" && sub != store.ActConfirm:
		return usageError("--as goes with confirm", "")
	case as != "" && as != "instruction" && as != "evidence":
		return usageError("--as is instruction or evidence", "")
	case isAction && strings.TrimSpace(by) == "":
		return usageError("who is reviewing?", "pass --by NAME")
	}
	s, err := openCLIStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	switch sub {
	case "list":
		items, err := s.ListReview(ctx, store.ReviewFilter{Status: store.ReviewStatus(status), Limit: limit})
		if err != nil {
			return err
		}
		return printReviewList(ctx, s, stdout, items, asJSON)
	case "show":
		return showReview(ctx, s, stdout, pos[0], asJSON)
	}
	a := store.ReviewAction{ID: pos[0], Action: sub, Actor: by, Note: note, Summary: summary, Content: content, Behavior: behavior,
		Visibility: store.Visibility(visibility), Project: project, Other: into + with}
	switch as {
	case "instruction":
		a.As = store.Instruction
	case "evidence":
		a.As = store.Evidence
	}
	m, it, err := s.Review(ctx, a)
	if err != nil {
		if store.IsInvalid(err) {
			return usageError(err.Error(), "")
		}
		return err
	}
	if ev := cliEvents(ctx, s, stderr); ev != nil {
		if err := ev.AppendReview(ctx, a, m, it); err != nil {
			fmt.Fprintf(stderr, "docket: warning: the review is recorded but not in the event stream: %v\n", err)
		}
	}
	if asJSON {
		return printJSON(stdout, map[string]any{"memory": m, "item": it})
	}
	fmt.Fprintf(stdout, "%s %s: %s, %s, %s", sub, m.ID, m.Provenance.Status, m.UsePolicy, m.Lifecycle)
	if it.ID != "" {
		fmt.Fprintf(stdout, " (item %s %s)", it.ID, it.Status)
	}
	fmt.Fprintln(stdout)
	return nil
}

func printReviewList(ctx context.Context, s store.Store, w io.Writer, items []store.ReviewItem, asJSON bool) error {
	type row struct {
		store.ReviewItem
		Memory store.Memory `json:"memory"`
	}
	rows := make([]row, 0, len(items))
	for _, it := range items {
		m, err := s.GetMemory(ctx, it.MemoryID)
		if err != nil {
			return err
		}
		rows = append(rows, row{it, m})
	}
	if asJSON {
		return printJSON(w, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "review queue is empty")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tPRIORITY\tSTATUS\tMEMORY\tPROVENANCE\tCONF\tSUGGESTED\tSUMMARY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\n", r.ID, r.Priority, r.Status, r.Memory.ID, r.Memory.Provenance.Status,
			r.Memory.Provenance.Confidence, r.Suggested, clip(r.Memory.Summary, 60))
	}
	return tw.Flush()
}

func showReview(ctx context.Context, s store.Store, w io.Writer, id string, asJSON bool) error {
	memID := id
	if strings.HasPrefix(id, "rev_") {
		items, err := s.ListReview(ctx, store.ReviewFilter{Limit: 1000})
		if err != nil {
			return err
		}
		resolved, err := s.ListReview(ctx, store.ReviewFilter{Status: store.ReviewResolved, Limit: 1000})
		if err != nil {
			return err
		}
		memID = ""
		for _, it := range append(items, resolved...) {
			if it.ID == id {
				memID = it.MemoryID
			}
		}
		if memID == "" {
			return fmt.Errorf("review item %s: %w", id, store.ErrNotFound)
		}
	}
	in, err := store.Inspect(ctx, s, memID, time.Now())
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, in)
	}
	m := in.Memory
	fmt.Fprintf(w, "memory      %s\n", m.ID)
	for _, it := range in.Review {
		fmt.Fprintf(w, "review      %s %s, %s priority: %s\n", it.ID, it.Status, it.Priority, it.Reason)
		fmt.Fprintf(w, "suggested   %s\n", it.Suggested)
	}
	fmt.Fprintf(w, "source      %s\n", in.Why)
	if d := in.Decision; d != nil {
		fmt.Fprintf(w, "event       %s %s on %s: %s\n", d.Decision, d.ToolName, d.ActionID, clip(d.ReasoningSummary, 200))
	}
	fmt.Fprintf(w, "proposed    %s\n", m.Summary)
	if m.Content != m.Summary {
		fmt.Fprintf(w, "content     %s\n", indent(m.Content))
	}
	fmt.Fprintf(w, "provenance  %s, confidence %.2f, by %s %s\n", m.Provenance.Status, m.Provenance.Confidence, m.Provenance.CreatedBy, m.Provenance.Model)
	fmt.Fprintf(w, "use policy  %s (%s)\n", m.UsePolicy, m.UseReason)
	fmt.Fprintf(w, "scope       %s\n", scopeText(m.Scope))
	fmt.Fprintln(w, "could influence:")
	for _, c := range in.CanInfluence {
		fmt.Fprintf(w, "  - %s\n", c)
	}
	if m.UsePolicy != store.Instruction {
		fmt.Fprintln(w, "if confirmed as instruction:")
		fmt.Fprintf(w, "  - a policy hit requiring %q on matching actions in %s (change it with --behavior)\n", behaviorOrRevise(m.Behavior), scopeText(m.Scope))
	}
	return nil
}

func behaviorOrRevise(b string) string {
	if b == "" {
		return "revise"
	}
	return b
}

func scopeText(sc store.Scope) string {
	s := "workspace " + sc.Workspace
	if sc.Project != "" {
		s += ", project " + sc.Project
	}
	return s + ", visibility " + string(sc.Visibility)
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n            ") }
