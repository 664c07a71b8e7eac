package eventcontract

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
	"github.com/docket/docket/store/memstore"
)

func TestMain(m *testing.M) {
	firewall.UseDetector(gitleaks.Detect)
	os.Exit(m.Run())
}

type root struct {
	led *ledger.Ledger
	st  *memstore.Store
	im  *Importer
}

func newRoot(t *testing.T) *root {
	t.Helper()
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	st := &memstore.Store{}
	return &root{led: led, st: st, im: &Importer{Ledger: led, Store: st, Workspace: "ws", Now: fixedNow}}
}

func (r *root) importBytes(t *testing.T, data []byte) *Result {
	t.Helper()
	in, err := Parse(data, Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.im.Import(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (r *root) entries(t *testing.T, session string) []*ledger.Entry {
	t.Helper()
	es, err := r.led.ReadVerified(LedgerSession(session))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestImportRawFirst: each envelope is a runtime_event entry whose
// envelope.json is the input's bytes, appended before its projection; the
// feedback's memory is observed evidence with lineage to the raw entry.
func TestImportRawFirst(t *testing.T) {
	r := newRoot(t)
	data := readTestdata(t, "envelope.json")
	res := r.importBytes(t, data)
	if res.Imported != 1 || res.Projected != 1 || res.Envelopes[0].Projection != "projected" || res.Envelopes[0].RecordID == "" {
		t.Fatalf("result %+v", res)
	}
	es := r.entries(t, "demo-session-001")
	if len(es) != 2 || es[0].Kind != KindRuntimeEvent || es[1].Kind != KindRuntimeProjection {
		t.Fatalf("entries: %d", len(es))
	}
	f, err := r.led.OpenArtifact(es[0], ArtifactEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(raw, data) {
		t.Fatal("the stored envelope is not the input byte for byte")
	}
	var p ProjectedFeedback
	if err := json.Unmarshal(es[1].Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.ContractName != ContractName || p.ContractVersion != ContractVersion || p.SourceEnvelopeID != "9b1f66ae-5f44-47f8-a1a9-bd5f84d22b70" ||
		p.SourceEventID != "7d4f2fda-36bc-4c47-b1d3-dc1cb8ef04e0" || p.ProjectedAt != "2026-11-23T12:00:00Z" || p.Score != 0.2 || p.Status != "failure" ||
		p.SourceEntry != "ledger:demo-session-001#0" {
		t.Errorf("projection lineage: %+v", p)
	}
	m, err := r.st.GetMemory(context.Background(), p.MemoryID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Provenance.Status != store.Observed || m.UsePolicy != store.Evidence || m.Lineage.Seq != 0 || m.Lineage.EntryHash != es[0].Hash ||
		m.Scope.Workspace != "ws" || !strings.Contains(m.Content, "database migrations") || !strings.Contains(m.Content, "missed rollback coverage") {
		t.Errorf("memory: %+v", m)
	}
	// verify passes over the new kinds
	if rep, err := ledger.Verify(r.led.Home(), "demo-session-001", ledger.VerifyOptions{Keys: r.led.Keys()}); err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestSessionStartedStaysRaw: no projection, no memory.
func TestSessionStartedStaysRaw(t *testing.T) {
	r := newRoot(t)
	data := strings.Replace(string(readTestdata(t, "list.json")), `"status": "success", "score": 1,`, ``, 1)
	data = strings.Replace(data, `"session_feedback"`, `"session_started"`, 1)
	res := r.importBytes(t, []byte(data))
	for _, e := range res.Envelopes {
		if e.Projection != "raw_only" || e.RecordID != "" || e.MemoryID != "" {
			t.Errorf("session_started projected: %+v", e)
		}
	}
	for _, e := range r.entries(t, "list-session") {
		if e.Kind != KindRuntimeEvent {
			t.Errorf("entry of kind %s", e.Kind)
		}
	}
}

// TestImportIdempotent: every form imported twice adds nothing the second
// time, in the ledger or the store.
func TestImportIdempotent(t *testing.T) {
	for _, name := range []string{"envelope.json", "list.json", "batch.json", "operator.json"} {
		t.Run(name, func(t *testing.T) {
			r := newRoot(t)
			data := readTestdata(t, name)
			first := r.importBytes(t, data)
			sess := first.Envelopes[0].SessionID
			n := len(r.entries(t, sess))
			r.im.Now = func() time.Time { return fixedNow().Add(time.Hour) }
			second := r.importBytes(t, data)
			if second.Imported != 0 || second.Projected != 0 || second.Duplicate != len(first.Envelopes) {
				t.Errorf("second import: %+v", second)
			}
			if got := len(r.entries(t, sess)); got != n {
				t.Errorf("entries %d → %d", n, got)
			}
			for i := range first.Envelopes {
				a, b := first.Envelopes[i], second.Envelopes[i]
				if a.EnvelopeID != b.EnvelopeID || a.EventID != b.EventID || a.RecordID != b.RecordID || a.MemoryID != b.MemoryID || a.Seq != b.Seq {
					t.Errorf("ids differ: %+v vs %+v", a, b)
				}
			}
		})
	}
}

// TestImportConflict: an envelope id already stored with other content is
// refused before anything of the input is written.
func TestImportConflict(t *testing.T) {
	r := newRoot(t)
	data := string(readTestdata(t, "envelope.json"))
	r.importBytes(t, []byte(data))
	n := len(r.entries(t, "demo-session-001"))
	// a new envelope first, then the forged one: neither is written
	fresh := strings.Replace(strings.Replace(data, "9b1f66ae-5f44-47f8-a1a9-bd5f84d22b70", "new-envelope", 1), "7d4f2fda-36bc-4c47-b1d3-dc1cb8ef04e0", "new-event", 1)
	forged := strings.Replace(data, `"score": 0.2`, `"score": 1.0`, 1)
	in, err := Parse([]byte("["+fresh+","+forged+"]"), Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.im.Import(context.Background(), in)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Field != "[1].envelope_id" {
		t.Fatalf("forged envelope: %v", err)
	}
	// the same event under another envelope id
	reused := strings.Replace(forged, "9b1f66ae-5f44-47f8-a1a9-bd5f84d22b70", "other-envelope", 1)
	in, _ = Parse([]byte(reused), Options{Now: fixedNow})
	if _, err = r.im.Import(context.Background(), in); !errors.As(err, &ce) || ce.Field != "event.event_id" {
		t.Fatalf("reused event id: %v", err)
	}
	if got := len(r.entries(t, "demo-session-001")); got != n {
		t.Errorf("a refused import wrote %d entries", got-n)
	}
}

// TestImportCompletesProjection: an import that stopped after the raw
// entry is completed by the next one.
func TestImportCompletesProjection(t *testing.T) {
	r := newRoot(t)
	data := readTestdata(t, "envelope.json")
	in, _ := Parse(data, Options{Now: fixedNow})
	s, _ := Load(r.led, "demo-session-001")
	if _, err := r.im.appendRaw(s, in.Items[0], in, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	res := r.importBytes(t, data)
	if res.Duplicate != 1 || res.Projected != 1 {
		t.Fatalf("%+v", res)
	}
	rep := BuildReport(mustLoad(t, r, "demo-session-001"))
	if len(rep.ProjectedSignals) != 1 || len(rep.Notes) != 0 {
		t.Errorf("report: %+v", rep)
	}
}

func mustLoad(t *testing.T, r *root, session string) *Session {
	t.Helper()
	s, err := Load(r.led, session)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSessionKeyWithColons: an OpenClaw session key that cannot name a
// file is stored under its derived ledger name and read back by its id.
func TestSessionKeyWithColons(t *testing.T) {
	r := newRoot(t)
	data := strings.Replace(string(readTestdata(t, "envelope.json")), `"demo-session-001"`, `"agent:main:main"`, 1)
	res := r.importBytes(t, []byte(data))
	if res.Envelopes[0].LedgerSession == "agent:main:main" || !strings.HasPrefix(res.Envelopes[0].LedgerSession, "oc-agent-main-main-") {
		t.Fatalf("ledger session %q", res.Envelopes[0].LedgerSession)
	}
	s := mustLoad(t, r, "agent:main:main")
	if len(s.Envelopes) != 1 || s.Envelopes[0].Projection == nil {
		t.Fatalf("read back: %+v", s)
	}
}

// TestReport covers the operator session's report.
func TestReport(t *testing.T) {
	r := newRoot(t)
	r.importBytes(t, readTestdata(t, "operator.json"))
	rep := BuildReport(mustLoad(t, r, "demo-openclaw-session-001"))
	if !rep.Outcome.Reported || rep.Outcome.Status != "failure" || *rep.Outcome.Score != 0.2 ||
		strings.Join(rep.SelectedSkills, ",") != "code_review" || strings.Join(rep.MissingCapabilities, ",") != "database migrations" ||
		rep.Handoff.State != "open" || rep.NextAction != "Verify lock-time risk before promotion." || rep.NextActionSource != "handoff" ||
		!strings.Contains(string(rep.LastCheckpoint), `"cp-risk"`) || len(rep.ProjectedSignals) != 1 || rep.Operator != "local-demo" ||
		strings.Join(rep.Steps, "|") != "inspect rollback risk" {
		t.Errorf("report: %+v", rep)
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Runtime session demo-openclaw-session-001", "outcome: failure (score 0.20)", "state: open",
		"next action (handoff): Verify lock-time risk", "missing capabilities: database migrations", rep.ProjectedSignals[0].RecordID} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
	// without a handoff the next action is derived
	r2 := newRoot(t)
	r2.importBytes(t, readTestdata(t, "batch.json"))
	rep = BuildReport(mustLoad(t, r2, "demo-session-001"))
	if rep.Handoff.State != "none" || rep.NextActionSource != "derived" || !strings.Contains(rep.NextAction, "review the failure outcome") {
		t.Errorf("derived next action: %+v", rep)
	}
	rep = BuildReport(mustLoad(t, r2, "never-seen"))
	if len(rep.Envelopes) != 0 || len(rep.Notes) != 1 {
		t.Errorf("empty session: %+v", rep)
	}
}

// TestExportReplay: a bundle imported into a fresh state root reproduces
// the ids (envelopes, events, records, memories) and projected_at; a second
// import adds nothing; importing it into the original root adds nothing.
func TestExportReplay(t *testing.T) {
	for _, name := range []string{"operator.json", "batch.json", "list.json", "envelope.json"} {
		t.Run(name, func(t *testing.T) {
			a := newRoot(t)
			if name == "operator.json" || name == "list.json" {
				// another session with the same task and outcome: the
				// replayed session's ids must not depend on it
				a.importBytes(t, readTestdata(t, "envelope.json"))
			}
			a.im.Workspace = "ws-" + name
			first := a.importBytes(t, readTestdata(t, name))
			sess := first.Envelopes[0].SessionID
			bundleA := exportJSON(t, a, sess)

			b := newRoot(t)
			b.im.Workspace = ""
			b.im.Now = func() time.Time { return fixedNow().Add(48 * time.Hour) }
			replay := b.importBytes(t, bundleA)
			if replay.Form != FormBundle || replay.Imported != len(first.Envelopes) {
				t.Fatalf("replay: %+v", replay)
			}
			for i := range first.Envelopes {
				x, y := first.Envelopes[i], replay.Envelopes[i]
				if x.EnvelopeID != y.EnvelopeID || x.EventID != y.EventID || x.RecordID != y.RecordID || x.MemoryID != y.MemoryID || x.Seq != y.Seq {
					t.Errorf("replayed ids differ:\n%+v\n%+v", x, y)
				}
			}
			if bundleB := exportJSON(t, b, sess); !bytes.Equal(bundleA, bundleB) {
				t.Errorf("the replayed root exports another bundle:\n%s\n---\n%s", bundleA, bundleB)
			}
			again := b.importBytes(t, bundleA)
			if again.Imported != 0 || again.Projected != 0 {
				t.Errorf("second replay added: %+v", again)
			}
			back := a.importBytes(t, bundleA)
			if back.Imported != 0 || back.Projected != 0 {
				t.Errorf("replay into the original root added: %+v", back)
			}
			if len(a.entries(t, sess)) != len(b.entries(t, sess)) {
				t.Error("roots differ in entries")
			}
		})
	}
}

func exportJSON(t *testing.T, r *root, session string) []byte {
	t.Helper()
	bd, err := Export(mustLoad(t, r, session))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(bd, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBundleTampering: a bundle whose readable view, projected record,
// generated values or source disagree with its bytes is refused.
func TestBundleTampering(t *testing.T) {
	a := newRoot(t)
	a.importBytes(t, readTestdata(t, "operator.json"))
	bundle := string(exportJSON(t, a, "demo-openclaw-session-001"))
	var bd Bundle
	if err := json.Unmarshal([]byte(bundle), &bd); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b *Bundle)) []byte {
		var c Bundle
		json.Unmarshal([]byte(bundle), &c)
		f(&c)
		out, _ := json.Marshal(c)
		return out
	}
	one := 1.0
	tests := []struct {
		name  string
		data  []byte
		field string // "" = a ConflictError at import
	}{
		{"view says success", edit(func(b *Bundle) { b.Envelopes[1].Envelope.Event.Status = "success" }), "envelopes[1].envelope"},
		{"view score", edit(func(b *Bundle) { b.Envelopes[1].Envelope.Event.Score = &one }), "envelopes[1].envelope"},
		{"raw not base64", edit(func(b *Bundle) { b.Envelopes[0].Raw = "%%%" }), "envelopes[0].raw_base64"},
		{"generated id for a field present", edit(func(b *Bundle) { b.Envelopes[0].Generated["event.task"] = "x" }), "envelopes[0].generated.event.task"},
		{"generated occurred_at bad", edit(func(b *Bundle) {
			b.Envelopes[0].Generated[GenOccurredAt] = "soon"
			b.Envelopes[0].Raw = b64(strings.Replace(string(unb64(b.Envelopes[0].Raw)), `"occurred_at":"2026-03-13T18:20:00+00:00",`, ``, 1))
		}), "envelopes[0].generated.event.occurred_at"},
		{"source digest wrong", edit(func(b *Bundle) { b.Sources[0].Digest = "sha256:00" }), "sources[0].digest"},
		{"unknown source", edit(func(b *Bundle) { b.Envelopes[0].Source = "sha256:ff" }), "envelopes[0].source_digest"},
		{"wrong kind", edit(func(b *Bundle) { b.BundleKind = "other" }), "bundle_kind"},
		{"other session", edit(func(b *Bundle) { b.SessionID = "s2" }), "envelopes[0].event.session_id"},
		{"projected_at bad", edit(func(b *Bundle) { b.ProjectedRecords[0].ProjectedAt = "now" }), "projected_records[0].projected_at"},
		{"projected score", edit(func(b *Bundle) { b.ProjectedRecords[0].Score = 1 }), ""},
		{"projected record id", edit(func(b *Bundle) { b.ProjectedRecords[0].RecordID = "pf_forged" }), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Parse(tc.data, Options{Now: fixedNow})
			if tc.field != "" {
				if !hasField(err, tc.field) {
					t.Fatalf("error does not name %q: %v", tc.field, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b := newRoot(t)
			var ce *ConflictError
			if _, err := b.im.Import(context.Background(), in); !errors.As(err, &ce) {
				t.Fatalf("tampered record imported: %v", err)
			}
			if len(b.entries(t, "demo-openclaw-session-001")) != 0 {
				t.Error("a refused bundle wrote entries")
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
func unb64(s string) []byte {
	b, _ := base64.StdEncoding.DecodeString(s)
	return b
}

// TestProjectionFirewall: a secret in the runtime's comment stays in the
// raw envelope (the evidence) but never reaches the memory.
func TestProjectionFirewall(t *testing.T) {
	r := newRoot(t)
	secret := "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "123456"
	data := strings.Replace(string(readTestdata(t, "envelope.json")), "missed rollback coverage", "pushed with token "+secret, 1)
	res := r.importBytes(t, []byte(data))
	m, err := r.st.GetMemory(context.Background(), res.Envelopes[0].MemoryID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.Content, secret) || !strings.Contains(m.Content, "comment withheld: secret-like content") {
		t.Errorf("memory content: %s", m.Content)
	}
	s := mustLoad(t, r, "demo-session-001")
	if !strings.Contains(string(s.Envelopes[0].Raw), secret) {
		t.Error("the raw envelope was altered")
	}
}

// TestConcurrentImports: imports of the same input racing in one state
// root store each envelope once.
func TestConcurrentImports(t *testing.T) {
	r := newRoot(t)
	data := readTestdata(t, "operator.json")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := Parse(data, Options{Now: fixedNow})
			led, lerr := ledger.Open(r.led.Home()) // one per importer, as separate processes
			if err == nil && lerr == nil {
				im := &Importer{Ledger: led, Store: r.st, Workspace: "ws", Now: fixedNow}
				_, err = im.Import(context.Background(), in)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r.entries(t, "demo-openclaw-session-001")); n != 3 {
		t.Errorf("%d entries, want 3 (two envelopes, one projection)", n)
	}
}

// TestProjectedMemoryRecalled: the judge's recall finds the projected
// outcome as evidence, never as a policy hit.
func TestProjectedMemoryRecalled(t *testing.T) {
	r := newRoot(t)
	res := r.importBytes(t, readTestdata(t, "operator.json"))
	resp, err := r.st.Recall(context.Background(), store.RecallRequest{Workspace: "ws", ActionID: "a1",
		Query: store.Query{Summary: "review the postgres migration rollback", Entities: store.Entities{Topics: []string{"database migrations"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Memories) != 1 || resp.Memories[0].ID != res.Envelopes[1].MemoryID || resp.Memories[0].UsePolicy != store.Evidence || len(resp.PolicyHits) != 0 {
		t.Errorf("recall: %+v hits %+v", resp.Memories, resp.PolicyHits)
	}
}
