// Package testscripts runs docket's binaries end to end with testscript:
// each .txtar file in this folder is one scenario. The real binaries are
// built once into a temporary directory and put on $PATH.
//
// Every script gets a fresh state root ($DOCKET_HOME), $HOME, and
// $PAYLOADS, the real Claude Code hook payloads in testdata/realdata.
package testscripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "docket-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	cmd := exec.Command("go", "build", "-trimpath", "-o", dir+string(os.PathSeparator), "../cmd/...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build binaries: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestScripts(t *testing.T) {
	payloads, err := filepath.Abs("../testdata/realdata/payloads")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: ".",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("DOCKET_HOME", filepath.Join(env.WorkDir, ".docket"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("XDG_STATE_HOME", "")
			// the go command's telemetry, on in a fresh $HOME, writes
			// there from a child that outlives it: the work directory's
			// removal would race with it
			if err := goTelemetryOff(filepath.Join(env.WorkDir, "home")); err != nil {
				return err
			}
			env.Setenv("PAYLOADS", payloads)
			env.Setenv("GOCACHE", goEnv("GOCACHE"))
			env.Setenv("GOPATH", goEnv("GOPATH"))
			env.Setenv("GOFLAGS", "-mod=mod")
			// Validators build with the state root's own cache; share the
			// test process's so each script does not rebuild the standard
			// library.
			cache := filepath.Join(env.WorkDir, ".docket", "cache")
			if err := os.MkdirAll(cache, 0o700); err != nil {
				return err
			}
			if gc := goEnv("GOCACHE"); gc != "" {
				if err := os.Symlink(gc, filepath.Join(cache, "go-build")); err != nil {
					return err
				}
			}
			return os.MkdirAll(filepath.Join(env.WorkDir, "home"), 0o700)
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "linux":
				return runtime.GOOS == "linux", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"editline": cmdEditLine,
		},
	})
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// cmdEditLine replaces old with new in line N (0-based) of a file:
//
//	editline FILE N OLD NEW
//
// With N = "drop" it deletes line OLD instead; with "dup" it repeats it.
func cmdEditLine(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: editline FILE N OLD NEW | editline FILE drop N | editline FILE dup N")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	lines := strings.SplitAfter(string(b), "\n")
	var n int
	switch args[1] {
	case "drop", "dup":
		fmt.Sscan(args[2], &n)
		if n >= len(lines) {
			ts.Fatalf("line %d out of range", n)
		}
		if args[1] == "drop" {
			lines = append(lines[:n], lines[n+1:]...)
		} else {
			lines = append(lines[:n+1], lines[n:]...)
		}
	default:
		if len(args) != 4 {
			ts.Fatalf("usage: editline FILE N OLD NEW")
		}
		fmt.Sscan(args[1], &n)
		if n >= len(lines) || !strings.Contains(lines[n], args[2]) {
			ts.Fatalf("line %d does not contain %q", n, args[2])
		}
		lines[n] = strings.Replace(lines[n], args[2], args[3], 1)
	}
	ts.Check(os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
}

// goTelemetryOff turns the go command's telemetry off for a $HOME.
func goTelemetryOff(home string) error {
	dir := filepath.Join(home, ".config", "go", "telemetry")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "mode"), []byte("off\n"), 0o644)
}
