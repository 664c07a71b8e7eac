package validators

import (
	"strings"
	"testing"
)

func TestAnalyzeScript(t *testing.T) {
	tests := []struct {
		script string
		want   status
		err    string // substring of the refusal, "" for none
	}{
		// Trivially successful commands.
		{"true", stOK, ""},
		{"/bin/true", stOK, ""},
		{":", stOK, ""},
		{"echo done", stOK, ""},
		{"echo 'all tests pass'", stOK, ""},
		{"printf ok", stOK, ""},
		{"test 1", stOK, ""},
		{"[ -f go.mod ]", stOK, ""},
		{"sh -c true", stOK, ""},
		{"bash -c 'echo hi'", stOK, ""},
		{"bash -lc ':'", stOK, ""},
		{"sh -c \"sh -c 'true'\"", stOK, ""},
		{"env FOO=1 true", stOK, ""},
		{"FOO=1 true", stOK, ""},
		{"FOO=1", stOK, ""},
		{"timeout 10 true", stOK, ""},
		{"nice -n 5 echo x", stOK, ""},
		{"command true", stOK, ""},
		{"exec true", stOK, ""},
		{"eval true", stOK, ""},
		{"go test ./... || true", stOK, ""},
		{"go test ./... || :", stOK, ""},
		{"go test ./... | tee out.txt", stOK, ""},
		{"go test ./... 2>&1 | cat", stOK, ""},
		{"go test ./...; echo done", stOK, ""},
		{"go test ./...\necho done", stOK, ""},
		{"go test ./... &", stOK, ""},
		{"! false", stOK, ""},
		{"false || true", stOK, ""},
		{"true && true", stOK, ""},
		{"go --version", stOK, ""},
		{"pytest -h", stOK, ""},
		{"git status", stOK, ""},
		{"git diff", stOK, ""},
		{"exit", stOK, ""},
		{"ls -la", stOK, ""},
		{"# go test ./...", stOK, ""},
		{"", stOK, ""},
		// Commands whose status depends on the work.
		{"go test ./...", stReal, ""},
		{"go test ./... && echo ok", stReal, ""},
		{"true && go test ./...", stReal, ""},
		{"cd sub && go test ./...", stReal, ""},
		{"go vet ./... && go test ./...", stReal, ""},
		{"make test", stReal, ""},
		{"FOO=1 go test ./... > out.txt 2>&1", stReal, ""},
		{"go test ./... 2>&1 | grep -q PASS", stReal, ""},
		{"set -o pipefail; go test ./... | tee out.txt", stReal, ""},
		{"set -e; go test ./...; echo done", stReal, ""},
		{"sh -c 'go test ./...'", stReal, ""},
		{"env CGO_ENABLED=0 go build ./...", stReal, ""},
		{"timeout -s KILL 60 go test ./...", stReal, ""},
		{"git diff --exit-code", stReal, ""},
		{"git ls-remote --exit-code origin refs/heads/main", stReal, ""},
		{"go test $(go list ./...)", stReal, ""},
		{"go test ./... && exit", stReal, ""},
		{"bash scripts/check.sh", stReal, ""},
		{"curl -fsS http://127.0.0.1:8080/healthz", stReal, ""},
		// Always failing: allowed to run (it will FAIL), never a pass.
		{"false", stFail, ""},
		{"exit 1", stFail, ""},
		{"go test ./... && false", stFail, ""},
		// Refused: forced success or shell the analysis cannot follow.
		{"go test ./...; exit 0", 0, "forces exit status 0"},
		{"go test ./... || exit 0", 0, "forces exit status 0"},
		{"exit 256", 0, "forces exit status 0"},
		{"if go test; then :; fi", 0, "shell keyword"},
		{"(go test ./...)", 0, "subshells"},
		{"{ go test ./...; }", 0, "subshells"},
		{"$CMD ./...", 0, "computed"},
		{"cat <<EOF\nx\nEOF", 0, "here-documents"},
		{"trap 'exit 0' EXIT; go test ./...", 0, "shell keyword"},
		{"echo 'unterminated", 0, "unterminated"},
		{"go test ./... &&", 0, "missing command"},
		{"sh -c", 0, "without a script"},
		{"exit $X", 0, "exit"},
		{"go test > ", 0, "without a target"},
	}
	for _, tt := range tests {
		v, err := analyzeScript(tt.script)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("analyzeScript(%q) error = %v, want %q", tt.script, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("analyzeScript(%q): unexpected error %v", tt.script, err)
			continue
		}
		if v.st != tt.want {
			t.Errorf("analyzeScript(%q) = %v (%s), want %v", tt.script, v.st, v.why, tt.want)
		}
	}
}

func TestAnalyzeArgv(t *testing.T) {
	tests := []struct {
		argv []string
		want status
	}{
		{[]string{"true"}, stOK},
		{[]string{"echo", "go", "test"}, stOK},
		{[]string{"sh", "-c", "true"}, stOK},
		{[]string{"bash", "-c", "go test ./... || true"}, stOK},
		{[]string{"/usr/bin/env", "true"}, stOK},
		{[]string{"go", "test", "./..."}, stReal},
		{[]string{"sh", "-c", "go test ./..."}, stReal},
		// An argv element is never parsed as shell: this runs `go` with
		// one argument "test || true", and go decides the status.
		{[]string{"go", "test || true"}, stReal},
		{[]string{"false"}, stFail},
	}
	for _, tt := range tests {
		v, err := analyzeArgv(tt.argv)
		if err != nil {
			t.Errorf("analyzeArgv(%q): %v", tt.argv, err)
			continue
		}
		if v.st != tt.want {
			t.Errorf("analyzeArgv(%q) = %v, want %v", tt.argv, v.st, tt.want)
		}
	}
	if _, err := analyzeArgv(nil); err == nil {
		t.Error("empty argv accepted")
	}
}

func TestAnalyzeWords(t *testing.T) {
	v, err := analyzeScript("echo hello && go test -run TestLogin ./auth | grep ok")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(v.words, " ")
	if !strings.Contains(got, "TestLogin") || !strings.Contains(got, "grep") || strings.Contains(got, "hello") {
		t.Errorf("words = %q: want the real commands' words, not echo's", got)
	}
}
