package gate

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

// The lexicon and binding the gate gets from the compiled-policy cache
// decide every labelled message (testdata/gate, gate/testdata) and every
// write command exactly as the ones parsed from the YAML do: for the
// default policies and for an edited lexicon.
func TestCompiledPoliciesDecideAsParsed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the compiled-policy cache needs ctime")
	}
	var texts []string
	for _, name := range []string{"labels.jsonl", "hard_cases.jsonl", "heldout.jsonl"} {
		for _, l := range readLabelled(t, name) {
			texts = append(texts, l.Text)
		}
	}
	for _, name := range []string{"claims_adversarial.jsonl", "claims_adversarial_heldout.jsonl"} {
		for _, l := range readLabelledFile(t, filepath.Join("testdata", name)) {
			texts = append(texts, l.Text)
		}
	}
	commands := []string{"go test ./...", "echo hi > out.txt", "sed -i s/a/b/ f.go", "grep 'a > b' x", "git checkout -- .",
		"python3 -c 'open(\"x\",\"w\").write(\"y\")'", "sponge out.txt", "ls -la", "cat /dev/null > /dev/null", "make"}
	tools := []string{"Write", "Edit", "Read", "Bash", "mcp__fs__write_file", "apply_patch", "write_file", "replace"}

	def, _ := policies.Default(policies.ClaimsFile)
	edited := strings.Replace(string(def), "  bash:\n", "  bash:\n    - '\\bsponge\\s+\\S'\n", 1) + "\n# local\n"
	for _, tc := range []struct{ name, claims string }{{"defaults", ""}, {"edited", edited}} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := home.At(filepath.Join(t.TempDir(), "state"))
			for _, d := range []string{h.KeysDir(), h.PoliciesDir(), h.RunDir()} {
				os.MkdirAll(d, 0o700)
			}
			os.WriteFile(h.HMACKeyPath(), []byte("k1"), 0o400)
			if tc.claims != "" {
				os.WriteFile(filepath.Join(h.PoliciesDir(), policies.ClaimsFile), []byte(tc.claims), 0o600)
			}
			if _, err := policies.Approve(h, "alice", time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(policies.SetCacheClock(func() time.Time { return time.Now().Add(10 * time.Second) }))
			if _, _, err := policies.LoadGate(h); err != nil {
				t.Fatal(err)
			}
			if _, ok := policies.ReadCompiled(h, policies.CompiledKindGate, nil); !ok {
				t.Fatal("not cached")
			}
			cached, cb, err := policies.LoadGate(h)
			if err != nil {
				t.Fatal(err)
			}
			src, _ := policies.Load(h, policies.ClaimsFile)
			// the YAML parsed in full (a trailing comment is not the
			// compiled default)
			src.Data = append(src.Data, "\n# parsed\n"...)
			parsed, err := policies.ParseClaims(src)
			if err != nil {
				t.Fatal(err)
			}
			pb, _ := policies.LoadBinding(h)
			for _, text := range texts {
				if got, want := Extract(text, cached), Extract(text, parsed); !reflect.DeepEqual(got, want) {
					t.Errorf("%q: cached lexicon finds %v, parsed %v", text, got, want)
				}
			}
			for _, c := range append(commands, texts...) {
				if cached.IsWriteCommand(c) != parsed.IsWriteCommand(c) {
					t.Errorf("IsWriteCommand(%q) differs", c)
				}
			}
			for _, tool := range tools {
				if cached.IsWriteTool(tool) != parsed.IsWriteTool(tool) {
					t.Errorf("IsWriteTool(%q) differs", tool)
				}
			}
			if tc.claims != "" && !cached.IsWriteCommand("sponge out.txt") {
				t.Error("the edited lexicon's write pattern is not in force")
			}
			for _, claim := range policies.ClaimTypes {
				if !reflect.DeepEqual(cb.Validators(claim), pb.Validators(claim)) {
					t.Errorf("%s: validators differ", claim)
				}
			}
		})
	}
}
