package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportDispatch: a subcommand registered in reportSubcommands gets
// its arguments; flags go to the session report; an unknown name is a
// usage error.
func TestReportDispatch(t *testing.T) {
	var got []string
	reportSubcommands["probe"] = reportSubcommand{summary: "test probe", run: func(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
		got = args
		_, err := io.WriteString(stdout, "probed\n")
		return err
	}}
	defer delete(reportSubcommands, "probe")
	if out, _, code := docket(t, "report", "probe", "--since", "7d"); code != 0 || out != "probed\n" || strings.Join(got, " ") != "--since 7d" {
		t.Errorf("report probe: exit %d %q %q", code, out, got)
	}
	if _, errs, code := docket(t, "report", "nosuch"); code != 2 || !strings.Contains(errs, `unknown report "nosuch"`) {
		t.Errorf("unknown report: exit %d %q", code, errs)
	}
	if _, errs, code := docket(t, "report", "-h"); code != 0 || !strings.Contains(errs, "probe        test probe") {
		t.Errorf("report -h lists no subcommands: %q", errs)
	}
	if _, errs, code := docket(t, "report"); code != 2 || !strings.Contains(errs, "report needs --session") || !strings.Contains(errs, "or docket report probe") {
		t.Errorf("report without session: exit %d %q", code, errs)
	}
}

// TestImportReportCommands runs import, report and inspect --raw in
// process on one state root.
func TestImportReportCommands(t *testing.T) {
	storeEnv(t)
	if _, errs, code := docket(t, "init"); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	file := filepath.Join("..", "..", "adapters", "eventcontract", "testdata", "operator.json")
	out, errs, code := docket(t, "import", "openclaw", file, "--json")
	if code != 0 || !strings.Contains(out, `"projected": 1`) {
		t.Fatalf("import: exit %d %s %s", code, out, errs)
	}
	out, _, code = docket(t, "report", "--session", "demo-openclaw-session-001", "--format", "json")
	if code != 0 || !strings.Contains(out, `"next_action": "Verify lock-time risk before promotion."`) {
		t.Errorf("report: exit %d %s", code, out)
	}
	out, _, code = docket(t, "inspect", "--raw", "demo-openclaw-session-001")
	if code != 0 || !strings.Contains(out, "raw evidence only: session_started is not projected") || !strings.Contains(out, "projected pf_") {
		t.Errorf("inspect --raw: exit %d %s", code, out)
	}
	if _, errs, code := docket(t, "inspect", "--raw", "demo-openclaw-session-001", "mem_x"); code != 2 || !strings.Contains(errs, "takes a session") {
		t.Errorf("inspect --raw with a memory id: exit %d %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"contract_name":"openclaw_appleseed.runtime_event","contract_version":"1.0","event":{"event_kind":"session_started","session_id":"s","task":"t","occurred_at":"noon"}}`), 0o600)
	if _, errs, code := docket(t, "import", "openclaw", bad); code != 1 || !strings.Contains(errs, "event.occurred_at: not an ISO 8601 timestamp") {
		t.Errorf("invalid import: exit %d %q", code, errs)
	}
	if _, errs, code := docket(t, "export", "openclaw"); code != 2 || !strings.Contains(errs, "export needs --session") {
		t.Errorf("export without session: exit %d %q", code, errs)
	}
	if _, errs, code := docket(t, "export", "openclaw", "--session", "nobody"); code != 1 || !strings.Contains(errs, "no runtime events stored") {
		t.Errorf("export of an unknown session: exit %d %q", code, errs)
	}
}
