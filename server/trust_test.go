package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/trust"
)

// setTrustMode writes policies/trust.yaml with mode and approves the
// policy files (an unapproved policy file fails every evaluation closed).
func setTrustMode(t *testing.T, e *env, mode string) {
	t.Helper()
	if err := os.MkdirAll(e.h.PoliciesDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.h.PoliciesDir(), trust.PolicyFile), []byte("mode: "+mode+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := policies.Approve(e.h, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// recordTrust writes signals into the real trust state (and its MAC'd
// level summary) under the state root, as of now.
func recordTrust(t *testing.T, e *env, now time.Time, sigs ...trust.Signal) {
	t.Helper()
	keys, err := ledger.LoadKeys(e.h)
	if err != nil {
		t.Fatal(err)
	}
	p, err := trust.LoadPolicy(e.h)
	if err != nil {
		t.Fatal(err)
	}
	st := &trust.Store{Home: e.h, Keys: keys}
	if err := st.Record(&p, sigs, now); err != nil {
		t.Fatal(err)
	}
}

// The agent a proposalBody names: runtime openclaw, actor coder.
const proposalAgent = "openclaw/coder"

// TestEvaluateTrustLevels: POST /v1/judge/evaluate applies the agent's
// monitoring level as the hook does. In enforce mode an agent at level 0
// gets its calls that are not read-only escalated; a read-only call and
// an agent at level 4 are left alone; in observe mode the level is only
// noted. The server rereads the level summary when it changes: a
// critical violation recorded after a level-4 allow escalates the next
// call.
func TestEvaluateTrustLevels(t *testing.T) {
	// the tools registry makes an unknown API tool external_side_effect
	write := func(key string) string {
		return proposalBody(key, "crm.update", "external_side_effect", "flow-trust", nil)
	}
	read := func(key string) string {
		return proposalBody(key, "Read", "read_only", "flow-trust", json.RawMessage(`{"file_path":"/tmp/x"}`))
	}
	type call struct {
		body     string
		decision string
		level    int
		action   string
		enforced bool
	}
	tests := []struct {
		name  string
		mode  string // "" leaves trust.yaml out (observe by default)
		level int    // -1: no level summary (every agent at level 0)
		calls []call
	}{
		{"no trust policy observes", "", -1, []call{{write("t0"), "allow", 0, "escalate", false}}},
		{"observe mode notes level 0", trust.ModeObserve, -1, []call{{write("t1"), "allow", 0, "escalate", false}}},
		{"enforce mode escalates level 0", trust.ModeEnforce, -1, []call{
			{write("t2"), "escalate", 0, "escalate", true},
			{read("t3"), "allow", 0, "none", false},
		}},
		{"enforce mode, level 4 allows", trust.ModeEnforce, 4, []call{{write("t4"), "allow", 4, "none", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.mode != "" {
				setTrustMode(t, e, tt.mode)
			}
			if tt.level == 4 {
				// 25 approvals 121 days ago: the score held every
				// threshold for four 30-day holds since
				then := time.Now().Add(-121 * 24 * time.Hour)
				var sigs []trust.Signal
				for i := 0; i < 25; i++ {
					sigs = append(sigs, trust.Signal{ID: fmt.Sprintf("ok-%d", i), Time: then, Agent: proposalAgent, Tool: "crm.update", Class: "external_side_effect", Rating: 1, Why: "approved"})
				}
				recordTrust(t, e, then, sigs...)
			}
			for _, c := range tt.calls {
				r := e.must(201, "POST", "/v1/judge/evaluate", RoleRuntime, c.body)
				tr := r.Get("trust")
				if r.Get("decision").Str != c.decision || tr.Get("agent").Str != proposalAgent || int(tr.Get("level").Int()) != c.level ||
					tr.Get("action").Str != c.action || tr.Get("enforced").Bool() != c.enforced {
					t.Fatalf("decision %s, trust %s; want %s at level %d, action %s, enforced %v", r.Get("decision").Str, tr.Raw, c.decision, c.level, c.action, c.enforced)
				}
				if c.enforced {
					if !strings.Contains(r.Get("reason").Str, "trust level 0") || r.Get("approval_status").Str != "pending" {
						t.Fatalf("escalation without its reason or approval: %s", r.Raw)
					}
				}
			}
		})
	}

	// the summary is reread when it changes: a critical violation demotes
	// the level-4 agent and its next call is escalated
	t.Run("summary change is seen", func(t *testing.T) {
		e := newEnv(t)
		setTrustMode(t, e, trust.ModeEnforce)
		then := time.Now().Add(-121 * 24 * time.Hour)
		var sigs []trust.Signal
		for i := 0; i < 25; i++ {
			sigs = append(sigs, trust.Signal{ID: fmt.Sprintf("ok-%d", i), Time: then, Agent: proposalAgent, Tool: "crm.update", Class: "external_side_effect", Rating: 1, Why: "approved"})
		}
		recordTrust(t, e, then, sigs...)
		// files this young are reloaded on every call; let them be kept
		defer func(w time.Duration) { RacyWindow = w }(RacyWindow)
		RacyWindow = 0
		for _, k := range []string{"c0", "c1"} {
			if r := e.must(201, "POST", "/v1/judge/evaluate", RoleRuntime, write(k)); r.Get("decision").Str != "allow" || r.Get("trust.level").Int() != 4 {
				t.Fatalf("before: %s", r.Raw)
			}
		}
		if n := e.srv.levels.Loads; n != 1 {
			t.Fatalf("levels loaded %d times for two calls over unchanged files, want 1", n)
		}
		now := time.Now()
		recordTrust(t, e, now, trust.Signal{ID: "crit-1", Time: now, Agent: proposalAgent, Tool: "crm.update", Class: "external_side_effect",
			Misaligned: true, High: true, Critical: true, Why: "critical: builtin:keys_read"})
		if r := e.must(201, "POST", "/v1/judge/evaluate", RoleRuntime, write("c2")); r.Get("decision").Str != "escalate" || r.Get("trust.level").Int() != 0 {
			t.Fatalf("after the demotion: %s", r.Raw)
		}
		if n := e.srv.levels.Loads; n != 2 {
			t.Fatalf("levels loaded %d times, want 2 (once more after the change)", n)
		}
	})

	// a forged summary is not believed: every agent is at level 0
	t.Run("forged summary fails closed", func(t *testing.T) {
		e := newEnv(t)
		setTrustMode(t, e, trust.ModeEnforce)
		dir := filepath.Join(e.h.Root, trust.Dir)
		os.MkdirAll(dir, 0o700)
		forged := "docket-trust-levels v1\nclock 0\npolicy 30 20 0.7 0.8 0.9 0.95\nkey openclaw%2Fcoder * 4 1.000000 100 0\n" +
			"key openclaw%2Fcoder class:external_side_effect 4 1.000000 100 0\nkey openclaw%2Fcoder tool:crm.update 4 1.000000 100 0\nmac x 00\n"
		if err := os.WriteFile(filepath.Join(dir, trust.LevelsFile), []byte(forged), 0o600); err != nil {
			t.Fatal(err)
		}
		r := e.must(201, "POST", "/v1/judge/evaluate", RoleRuntime, write("f1"))
		if r.Get("decision").Str != "escalate" || r.Get("trust.level").Int() != 0 || r.Get("trust.warning").Str == "" {
			t.Fatalf("forged level 4 believed: %s", r.Raw)
		}
	})
}
