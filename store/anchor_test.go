package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/docket/docket/store"
)

// TestRecallAnchor: a memory comes back only when it shares with the
// request something more specific than a broad tool or the tool's own
// name, and its match is within min_match_ratio of the best one.
func TestRecallAnchor(t *testing.T) {
	tagged := func(tags ...string) func(*store.Memory) {
		return func(m *store.Memory) { m.Entities = tags }
	}
	tests := []struct {
		name    string
		tool    string
		summary string
		files   []string
		cands   []store.Candidate
		want    []string
	}{
		{
			name: "shell: the tool tag alone is not enough", tool: "Bash", summary: "Bash git push origin main",
			cands: []store.Candidate{
				mem("m_push", "git push to main needs a human", 1, tagged("tool:bash")),
				mem("m_kubectl", "run the tests before kubectl apply", 1, tagged("tool:bash", "system:prod")),
				mem("m_word", "bash scripts must set -e", 1),
			},
			want: []string{"m_push"},
		},
		{
			name: "shell with nothing more specific: the tool anchors", tool: "Bash", summary: "",
			cands: []store.Candidate{
				mem("m_bash", "run the tests before kubectl apply", 1, tagged("tool:bash")),
				mem("m_edit", "edits of generated files are lost", 1, tagged("tool:edit")),
			},
			want: []string{"m_bash"},
		},
		{
			name: "one-purpose tool: its tag anchors, its name's words do not", tool: "mcp__github__merge_pull_request",
			summary: "mcp__github__merge_pull_request pull request 7",
			cands: []store.Candidate{
				mem("m_merge", "merging needs a human approval", 1, tagged("tool:mcp__github__merge_pull_request")),
				mem("m_comment", "ask before commenting on github issues", 1, tagged("tool:mcp__github__add_issue_comment")),
				mem("m_crm", "ask before creating CRM records", 1, tagged("tool:mcp__attio__create-record")),
			},
			want: []string{"m_merge"},
		},
		{
			name: "words of another tool's name alone: nothing comes back", tool: "mcp__github__merge_pull_request",
			summary: "mcp__github__merge_pull_request pull request 7",
			cands: []store.Candidate{
				mem("m_comment", "ask before commenting on github issues", 1, tagged("tool:mcp__github__add_issue_comment")),
			},
		},
		{
			name: "a file tag anchors a broad tool", tool: "Write", summary: "Write config", files: []string{"/repo/.env"},
			cands: []store.Candidate{
				mem("m_env", "never write secrets in plain text", 1, tagged("tool:write", "file:/repo/.env")),
				mem("m_other", "never write secrets in plain text", 1, tagged("tool:write", "file:/repo/main.go")),
			},
			want: []string{"m_env"},
		},
		{
			name: "a weak word match is below the floor", summary: "print the deploy token to the build log",
			cands: []store.Candidate{
				mem("m_best", "never print the deploy token in the build log", 1),
				mem("m_some", "the deploy token expired during the build", 1),
				mem("m_weak", "the build cache is slow", 1),
			},
			want: []string{"m_best", "m_some"},
		},
		{
			name: "an instruction below the floor still comes back", summary: "print the deploy token to the build log",
			cands: []store.Candidate{
				mem("m_best", "never print the deploy token in the build log", 1),
				mem("m_rule", "the build cache is slow", 1, func(m *store.Memory) {
					m.UsePolicy, m.Provenance.Status, m.Provenance.CreatedBy, m.Behavior = store.Instruction, store.UserConfirmed, "human", "escalate"
				}),
				mem("m_weak", "the build cache is slow", 1),
			},
			want: []string{"m_best", "m_rule"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := store.ValidateRecall(store.RecallRequest{Workspace: "ws", Query: store.Query{
				Summary: tt.summary, ToolName: tt.tool, Entities: store.Entities{Files: tt.files}}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.tool != "" {
				req.Query.Entities.Tools = []string{tt.tool}
			}
			resp, _ := store.Select(req, tt.cands, clock)
			var got []string
			for _, m := range resp.Memories {
				got = append(got, m.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("recalled %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRecallAnchorConfig: without broad tools and a floor, the shell's tag
// and any shared word bring memories back (the behaviour before them).
func TestRecallAnchorConfig(t *testing.T) {
	rc := store.DefaultRelevance()
	rc.BroadTools, rc.MinMatchRatio = nil, 0
	req, err := store.ValidateRecall(store.RecallRequest{Workspace: "ws", Query: store.Query{
		Summary: "Bash git push origin main", ToolName: "Bash", Entities: store.Entities{Tools: []string{"Bash"}}}})
	if err != nil {
		t.Fatal(err)
	}
	cands := []store.Candidate{
		mem("m_push", "git push to main needs a human", 1, func(m *store.Memory) { m.Entities = []string{"tool:bash"} }),
		mem("m_kubectl", "run the tests before kubectl apply", 1, func(m *store.Memory) { m.Entities = []string{"tool:bash"} }),
	}
	if resp, _ := store.SelectWith(rc, req, cands, clock); len(resp.Memories) != 2 {
		t.Errorf("no broad tools: recalled %d, want 2", len(resp.Memories))
	}
	if resp, _ := store.SelectWith(store.DefaultRelevance(), req, cands, clock); len(resp.Memories) != 1 {
		t.Errorf("default: recalled %d, want 1", len(resp.Memories))
	}
}

func TestParseRelevanceMinMatchRatio(t *testing.T) {
	for _, v := range []string{"-0.1", "1", "1.5"} {
		_, err := store.ParseRelevance([]byte(`{"fallback":"repo","fallback_severity":2,"buckets":[],"min_match_ratio":` + v + `}`))
		if err == nil || !strings.Contains(err.Error(), "min_match_ratio") {
			t.Errorf("min_match_ratio %s: %v, want error", v, err)
		}
	}
	r, err := store.ParseRelevance([]byte(`{"fallback":"repo","fallback_severity":2,"buckets":[],"min_match_ratio":0.3,"broad_tools":["bash"]}`))
	if err != nil || r.MinMatchRatio != 0.3 || !slices.Equal(r.BroadTools, []string{"bash"}) {
		t.Errorf("parse: %+v %v", r, err)
	}
}
