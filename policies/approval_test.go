package policies

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
)

func approvalHome(t testing.TB) home.Home {
	t.Helper()
	h, _ := home.At(filepath.Join(t.TempDir(), "state"))
	for _, d := range []string{h.KeysDir(), h.PoliciesDir(), h.ValidatorsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(h.HMACKeyPath(), []byte("k1"), 0o400); err != nil {
		t.Fatal(err)
	}
	for _, n := range Names() {
		b, _ := Default(n)
		if err := os.WriteFile(filepath.Join(h.PoliciesDir(), n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h.ValidatorsDir(), "v.yaml"), []byte("name: v\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.ToolchainsPath(), []byte(`{"tools":{"go":{"path":"/usr/local/go/bin/go"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

func write(t testing.TB, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustApprove(t testing.TB, h home.Home) {
	t.Helper()
	if _, err := Approve(h, "alice", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := CheckApproval(h); err != nil {
		t.Fatalf("just approved: %v", err)
	}
}

func TestApprovalDefaultsWithoutRecord(t *testing.T) {
	h, _ := home.At(filepath.Join(t.TempDir(), "missing"))
	if err := CheckApproval(h); err != nil {
		t.Errorf("no state root: %v", err)
	}
	h = approvalHome(t)
	if err := CheckApproval(h); err != nil {
		t.Errorf("defaults without a record: %v", err)
	}
	write(t, filepath.Join(h.PoliciesDir(), JudgesFile), "---\nschema: docket.judges.v1\nmode: read_audit\n---\n")
	if err := CheckApproval(h); !errors.Is(err, ErrUnapproved) || !strings.Contains(err.Error(), "policies/judges.md") {
		t.Errorf("custom judges.md without a record: %v", err)
	}
}

func TestApprovalDetectsChanges(t *testing.T) {
	judges := func(h home.Home) string { return filepath.Join(h.PoliciesDir(), JudgesFile) }
	tests := []struct {
		name   string
		tamper func(t *testing.T, h home.Home)
		want   string // "" approved
	}{
		{"unchanged", func(t *testing.T, h home.Home) {}, ""},
		{"judges read_audit", func(t *testing.T, h home.Home) {
			write(t, judges(h), "---\nschema: docket.judges.v1\nmode: read_audit\n---\n")
		}, "policies/judges.md changed"},
		{"claims rewritten", func(t *testing.T, h home.Home) {
			write(t, filepath.Join(h.PoliciesDir(), ClaimsFile), "schema: x\n")
		}, "policies/claims.yaml changed"},
		{"same size, mtime set back", func(t *testing.T, h home.Home) {
			p := filepath.Join(h.ValidatorsDir(), "v.yaml")
			st, _ := os.Stat(p)
			write(t, p, "name: w\n")
			if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, "validators/v.yaml changed"},
		{"edited through a hard link outside, size and mtime kept", func(t *testing.T, h home.Home) {
			p := filepath.Join(h.ValidatorsDir(), "v.yaml")
			st, _ := os.Stat(p)
			link := filepath.Join(filepath.Dir(h.Root), "v-link.yaml")
			if err := os.Link(p, link); err != nil {
				t.Skipf("no hard links here: %v", err)
			}
			f, err := os.OpenFile(link, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("w"), 6)
			f.Close()
			if err := os.Chtimes(link, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, "validators/v.yaml changed"},
		{"validators dir replaced, same names, sizes and mtimes", func(t *testing.T, h home.Home) {
			p := filepath.Join(h.ValidatorsDir(), "v.yaml")
			st, _ := os.Stat(p)
			if err := os.Rename(h.ValidatorsDir(), h.ValidatorsDir()+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(h.ValidatorsDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, p, "name: w\n")
			if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, "validators/v.yaml changed"},
		{"touched, same bytes", func(t *testing.T, h home.Home) {
			p := filepath.Join(h.ValidatorsDir(), "v.yaml")
			if err := os.Chtimes(p, time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"new validator", func(t *testing.T, h home.Home) {
			write(t, filepath.Join(h.ValidatorsDir(), "fake.yaml"), "name: fake\n")
		}, "validators/fake.yaml is new"},
		{"validator edited", func(t *testing.T, h home.Home) {
			write(t, filepath.Join(h.ValidatorsDir(), "v.yaml"), "name: v\ncommand: [true]\n")
		}, "validators/v.yaml changed"},
		{"removed default is the default", func(t *testing.T, h home.Home) {
			os.Remove(judges(h))
		}, ""},
		{"toolchain pointed at a fake go", func(t *testing.T, h home.Home) {
			write(t, h.ToolchainsPath(), `{"tools":{"go":{"path":"/tmp/fake/go"}}}`)
		}, "toolchains.json changed"},
		{"toolchain record removed", func(t *testing.T, h home.Home) {
			os.Remove(h.ToolchainsPath())
		}, "toolchains.json was removed"},
		{"removed validator", func(t *testing.T, h home.Home) {
			os.Remove(filepath.Join(h.ValidatorsDir(), "v.yaml"))
		}, "validators/v.yaml was removed"},
		{"symlink to the same bytes inside", func(t *testing.T, h home.Home) {
			b, _ := os.ReadFile(judges(h))
			write(t, filepath.Join(h.Root, "judges-real.md"), string(b))
			os.Remove(judges(h))
			if err := os.Symlink(filepath.Join(h.Root, "judges-real.md"), judges(h)); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"symlink outside", func(t *testing.T, h home.Home) {
			b, _ := os.ReadFile(judges(h))
			out := filepath.Join(filepath.Dir(h.Root), "proj-judges.md")
			write(t, out, string(b))
			os.Remove(judges(h))
			if err := os.Symlink(out, judges(h)); err != nil {
				t.Fatal(err)
			}
		}, "symlink leading outside the state root"},
		{"policies dir linked outside", func(t *testing.T, h home.Home) {
			out := filepath.Join(filepath.Dir(h.Root), "dotfiles")
			if err := os.Rename(h.PoliciesDir(), out); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(out, h.PoliciesDir()); err != nil {
				t.Fatal(err)
			}
		}, "symlink leading outside the state root"},
		{"forged record", func(t *testing.T, h home.Home) {
			write(t, judges(h), "---\nschema: docket.judges.v1\nmode: read_audit\n---\n")
			b, _ := os.ReadFile(ApprovalPath(h))
			files, _ := PolicyFiles(h)
			var fake []PinnedFile
			for _, f := range files {
				fake = append(fake, PinnedFile{Name: f.Name, SHA256: f.SHA256()})
			}
			s := string(b)
			for _, f := range fake {
				if f.Name == "policies/judges.md" {
					i := strings.Index(s, `"policies/judges.md"`)
					j := strings.Index(s[i:], `"sha256": "`) + i + len(`"sha256": "`)
					s = s[:j] + f.SHA256 + s[j+64:]
				}
			}
			s = strings.Replace(s, `"digest": "`+FilesDigest(mustRead(t, h).Files), `"digest": "`+FilesDigest(fake), 1)
			write(t, ApprovalPath(h), s)
		}, "signature does not verify"},
		{"record deleted", func(t *testing.T, h home.Home) {
			write(t, judges(h), "---\nschema: docket.judges.v1\nmode: read_audit\n---\n")
			os.Remove(ApprovalPath(h))
		}, "policies/judges.md is new"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := approvalHome(t)
			mustApprove(t, h)
			tc.tamper(t, h)
			err := CheckApproval(h)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrUnapproved) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func mustRead(t *testing.T, h home.Home) *Approval {
	t.Helper()
	a, err := ReadApproval(h)
	if err != nil || a == nil {
		t.Fatalf("read approval: %v", err)
	}
	return a
}

func TestApproveRefusesOutsideSymlink(t *testing.T) {
	h := approvalHome(t)
	out := filepath.Join(filepath.Dir(h.Root), "elsewhere.yaml")
	write(t, out, "x: 1\n")
	p := filepath.Join(h.PoliciesDir(), ToolsFile)
	os.Remove(p)
	if err := os.Symlink(out, p); err != nil {
		t.Fatal(err)
	}
	if _, err := Approve(h, "alice", time.Now()); err == nil || !strings.Contains(err.Error(), "outside the state root") {
		t.Errorf("approved a symlink leading outside: %v", err)
	}
}

func TestReapproveAndCopies(t *testing.T) {
	h := approvalHome(t)
	mustApprove(t, h)
	write(t, filepath.Join(h.PoliciesDir(), JudgesFile), "---\nschema: docket.judges.v1\n---\n")
	if CheckApproval(h) == nil {
		t.Fatal("change not detected")
	}
	a := mustRead(t, h)
	if old := ApprovedCopy(h, a, "policies/"+JudgesFile); len(old) == 0 {
		t.Error("no approved copy to diff against")
	}
	mustApprove(t, h)
	if got := string(ApprovedCopy(h, mustRead(t, h), "policies/"+JudgesFile)); got != "---\nschema: docket.judges.v1\n---\n" {
		t.Errorf("approved copy %q", got)
	}
}

func BenchmarkCheckApproval(b *testing.B) {
	h, _ := home.At(filepath.Join(b.TempDir(), "state"))
	os.MkdirAll(h.KeysDir(), 0o700)
	os.MkdirAll(h.PoliciesDir(), 0o700)
	os.WriteFile(h.HMACKeyPath(), []byte("k"), 0o400)
	for _, n := range Names() {
		d, _ := Default(n)
		os.WriteFile(filepath.Join(h.PoliciesDir(), n), d, 0o600)
	}
	// as after docket init: eight validator definitions
	os.MkdirAll(h.ValidatorsDir(), 0o700)
	for i := 0; i < 8; i++ {
		os.WriteFile(filepath.Join(h.ValidatorsDir(), fmt.Sprintf("v%d.yaml", i)), []byte(strings.Repeat("key: value\n", 60)), 0o600)
	}
	if _, err := Approve(h, "b", time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := CheckApproval(h); err != nil {
			b.Fatal(err)
		}
	}
}
