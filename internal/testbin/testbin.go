// Package testbin builds docket's binaries for the tests that run them as
// real processes next to real clients (e2e/, examples/): once per test
// process, statically (CGO_ENABLED=0, -trimpath), like `make build`.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	err  error

	extraMu sync.Mutex
	extra   = map[string]error{} // Build's packages, by path
)

// Dir returns the directory holding every binary of cmd/, building them
// the first time it is called. Call Cleanup from TestMain after m.Run.
func Dir(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, src, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(src), "..", "..")
		if dir, err = os.MkdirTemp("", "docket-bin-"); err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-o", dir+string(os.PathSeparator), "./cmd/...")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, berr := cmd.CombinedOutput(); berr != nil {
			err = fmt.Errorf("build docket: %v\n%s", berr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Build builds the main package at pkg (a path from the repository's
// root, such as "e2e/mcpterm": a test's helper program) into Dir's
// directory, once, and returns the binary's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	d := Dir(t)
	bin := filepath.Join(d, filepath.Base(pkg))
	extraMu.Lock()
	defer extraMu.Unlock()
	berr, done := extra[pkg]
	if !done {
		_, src, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./"+pkg)
		cmd.Dir = filepath.Join(filepath.Dir(src), "..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, e := cmd.CombinedOutput(); e != nil {
			berr = fmt.Errorf("build %s: %v\n%s", pkg, e, out)
		}
		extra[pkg] = berr
	}
	if berr != nil {
		t.Fatal(berr)
	}
	return bin
}

// Cleanup removes the binaries Dir built, if it built any.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Unavailable ends a test whose real client or server is missing: a skip
// on a developer's machine, a failure under CI=true (a real-client test
// that did not run is not a pass).
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", why)
	}
	t.Skip(why)
}
