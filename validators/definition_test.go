package validators

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

func TestDefaultDefinitions(t *testing.T) {
	files := DefaultDefinitions()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{
		"command_must_match_objective_keywords.yaml", "command_zero_exit.yaml", "fetch_attempt_proof.yaml",
		"file_diff_present.yaml", "go_test_pass.yaml", "http_2xx.yaml", "ladder_exhaustion_proof.yaml", "pytest_pass.yaml",
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("default definitions = %v, want %v", names, want)
	}
	h, _ := home.At(t.TempDir())
	defs, err := LoadDefinitions(h)
	if err != nil {
		t.Fatal(err)
	}
	// Every validator the default binding names has a definition.
	b, err := policies.LoadBinding(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range policies.ClaimTypes {
		for _, rule := range b.Validators(c) {
			d, ok := defs[rule.Name]
			if !ok {
				t.Errorf("claim %s: no definition for %s", c, rule.Name)
				continue
			}
			// The policy's example passes the schema, min_args and the
			// class's own checks.
			args, err := parseArgs(d, []byte(rule.Example))
			if err == nil {
				err = policies.CheckMinArgs(rule.MinArgs, jsonArgs(args))
			}
			if err == nil {
				err = d.cls.check(args, d)
			}
			if err != nil {
				t.Errorf("claim %s: example %s for %s is refused: %v", c, rule.Example, rule.Name, err)
			}
		}
	}
	if d := defs["go_test_pass"]; d.Origin != "embedded:go_test_pass.yaml" || !strings.HasPrefix(d.Digest, "sha256:") {
		t.Errorf("go_test_pass origin %q digest %q", d.Origin, d.Digest)
	}
}

func TestLoadDefinitionsInstalled(t *testing.T) {
	h, _ := home.At(t.TempDir())
	if err := os.MkdirAll(h.ValidatorsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	src := DefaultDefinitions()["go_test_pass.yaml"]
	edited := strings.Replace(string(src), "max: 10", "max: 3", 1)
	p := filepath.Join(h.ValidatorsDir(), "go_test_pass.yaml")
	if err := os.WriteFile(p, []byte(edited), 0o444); err != nil {
		t.Fatal(err)
	}
	defs, err := LoadDefinitions(h)
	if err != nil {
		t.Fatal(err)
	}
	// A hidden file is not pinned by the approval, so it is not loaded
	// (nor does it break loading).
	if err := os.WriteFile(filepath.Join(h.ValidatorsDir(), ".go_test_pass.yaml"), []byte("version: 1\nname: [\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	pinned, err := policies.PolicyFiles(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pinned {
		if strings.HasPrefix(path.Base(f.Name), ".") {
			t.Fatalf("hidden file pinned: %s", f.Name)
		}
	}
	if defs, err = LoadDefinitions(h); err != nil {
		t.Fatalf("hidden file loaded: %v", err)
	}
	// The installed set is the whole set: nothing is topped up.
	if len(defs) != 1 || defs["go_test_pass"].Origin != p || defs["go_test_pass"].Params["required_runs"].Max != int64(3) {
		t.Fatalf("installed definitions not in force: %v", defs)
	}
	if defs["go_test_pass"].Digest == mustParse(t, "embedded:go_test_pass.yaml", src).Digest {
		t.Error("digest does not follow the file's bytes")
	}
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte("version: 1\nname: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var de *DefinitionError
	if _, err := LoadDefinitions(h); !errors.As(err, &de) || de.Origin != p {
		t.Fatalf("malformed installed definition: err = %v", err)
	}
}

func mustParse(t *testing.T, origin string, b []byte) *Definition {
	t.Helper()
	d, err := ParseDefinition(origin, b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseDefinitionErrors(t *testing.T) {
	base := string(DefaultDefinitions()["go_test_pass.yaml"])
	tests := []struct {
		name, origin, yaml, want string
	}{
		{"ok", "go_test_pass.yaml", base, ""},
		{"unknown key", "go_test_pass.yaml", base + "extra: 1\n", "unknown field"},
		{"unknown param key", "go_test_pass.yaml", strings.Replace(base, "doc: per run", "docs: per run", 1), "unknown field"},
		{"malformed", "go_test_pass.yaml", "version: 1\nargs: [\n", "decode"},
		{"bad version", "go_test_pass.yaml", strings.Replace(base, "version: 1", "version: 2", 1), "version"},
		{"name mismatch", "other.yaml", base, "does not match file name"},
		{"unknown class", "go_test_pass.yaml", strings.Replace(base, "class: go_test_pass", "class: magic", 1), "unknown class"},
		{"arg the class lacks", "go_test_pass.yaml", base + "  verbose:\n    type: string\n", "takes no such argument"},
		{"wrong type", "go_test_pass.yaml", strings.Replace(base, "type: integer", "type: string", 1), "needs \"integer\""},
		{"required not required", "command_zero_exit.yaml", strings.Replace(string(DefaultDefinitions()["command_zero_exit.yaml"]), "    required: true\n", "", 1), "declared required"},
		{"default out of range", "go_test_pass.yaml", strings.Replace(base, "default: 1\n", "default: 20\n", 1), "above the maximum"},
		{"bad duration", "go_test_pass.yaml", strings.Replace(base, "default: 10m", "default: ten", 1), "duration"},
		{"config on configless", "go_test_pass.yaml", base + "config: {a: 1}\n", "no configuration"},
		{"bad http config", "http_2xx.yaml", strings.Replace(string(DefaultDefinitions()["http_2xx.yaml"]), "allowed_hosts: []", "allowed_hosts: [\"http://x/\"]", 1), "allowed_hosts[0]"},
		{"unknown config key", "http_2xx.yaml", strings.Replace(string(DefaultDefinitions()["http_2xx.yaml"]), "allowed_hosts: []", "hosts: []", 1), "unknown field"},
		{"bad fetch regexp", "fetch_attempt_proof.yaml", strings.Replace(string(DefaultDefinitions()["fetch_attempt_proof.yaml"]), `bash_fetch: '(`, `bash_fetch: '((`, 1), "bash_fetch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDefinition(tt.origin, []byte(tt.yaml))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
