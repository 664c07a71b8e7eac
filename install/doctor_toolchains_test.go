package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/validators"
)

func TestCheckToolchains(t *testing.T) {
	fakeGo := func(t *testing.T, version string) string {
		t.Helper()
		root := filepath.Join(t.TempDir(), "go")
		os.MkdirAll(filepath.Join(root, "bin"), 0o755)
		p := filepath.Join(root, "bin", "go")
		script := "#!/bin/sh\necho " + version + "\necho " + root + "\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		record   string // toolchains.json; "" = none, "GO" = a fake go recorded as go1.99
		version  string // what the fake go answers now
		writable bool
		want     Status
		detail   string
	}{
		{name: "none recorded", want: Warn, detail: "no toolchains recorded"},
		{name: "unreadable", record: "{", want: Fail, detail: "read toolchains"},
		{name: "recorded, owned by another user", record: "GO", version: "go1.99", want: OK, detail: "go go1.99 at"},
		{name: "recorded, writable by the agent's user", record: "GO", version: "go1.99", writable: true, want: Warn, detail: "writable by this user"},
		{name: "upgraded since recorded", record: "GO", version: "go1.100", want: Warn, detail: "recorded as go1.99"},
		{name: "gone", record: `{"version":1,"tools":{"go":{"path":"/nonexistent/bin/go","version":"go1.99"}}}`, want: Fail, detail: "does not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := doctorEnv(t)
			record := tc.record
			if record == "GO" {
				p := fakeGo(t, tc.version)
				rec := &validators.ToolchainRecord{Version: 1, Tools: map[string]validators.Tool{"go": {Path: p, Version: "go1.99"}}}
				if _, err := validators.WriteToolchainRecord(env.Home, rec, true); err != nil {
					t.Fatal(err)
				}
			} else if record != "" {
				if err := os.WriteFile(env.Home.ToolchainsPath(), []byte(record), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			saved := writable
			writable = func(string) bool { return tc.writable }
			defer func() { writable = saved }()
			rs := checkToolchains(env)
			if len(rs) != 1 || rs[0].Status != tc.want || !strings.Contains(rs[0].Detail, tc.detail) {
				t.Fatalf("got %+v, want one %s containing %q", rs, tc.want, tc.detail)
			}
			if tc.want != OK && rs[0].Fix == "" {
				t.Errorf("%s without a fix", tc.want)
			}
		})
	}
}
