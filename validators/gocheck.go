package validators

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The check test: a run is only as good as the test binary's report of
// it, and code in the package runs before the tests and can print a
// report of a run that never happened (an init in a source file, a
// package variable's initializer, a TestMain that never calls m.Run).
// So go_test_pass adds a test of its own to every tested package that
// has tests, through the go command's -overlay (nothing is written into
// the project), under a name drawn at random for each validation: the
// run must report it passed. Code that prints results without running
// the tests cannot know the name. A -run filter leaves the check out
// (the name would not match it).

// goCheck is the check test of one validation.
type goCheck struct {
	name string            // TestDocketCheck<random>
	pkgs map[string]string // import path -> the package's name, for each package checked
}

// newGoCheck draws the check test's name; the packages are added by add.
func newGoCheck() (*goCheck, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("go_test_pass: draw the check test's name: %w", err)
	}
	return &goCheck{name: "TestDocketCheck" + strings.ToUpper(hex.EncodeToString(b[:])), pkgs: map[string]string{}}, nil
}

// add checks p, when it has tests and a name (from go list).
func (c *goCheck) add(p *goListPackage) bool {
	if c == nil || p.Name == "" || len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
		return false
	}
	c.pkgs[p.ImportPath] = p.Name
	return true
}

// overlay writes the check test of each package into dir and the go
// command's overlay file naming them as files of the packages, and
// returns the overlay file's path.
func (c *goCheck) overlay(dir string, pkgs []*goListPackage) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { // the caller's go reads it
		return "", err
	}
	replace := map[string]string{}
	src := "\n\nimport \"testing\"\n\n// " + c.name + " is go_test_pass's check that the tests ran.\nfunc " + c.name + "(*testing.T) {}\n"
	for i, p := range pkgs {
		name, ok := c.pkgs[p.ImportPath]
		if !ok {
			continue
		}
		f := filepath.Join(dir, fmt.Sprintf("check%d_test.go", i))
		if err := os.WriteFile(f, []byte("package "+name+src), 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(p.Dir, "zz_docket_check_"+strings.ToLower(c.name[len("TestDocketCheck"):])+"_test.go")] = f
	}
	b, _ := json.Marshal(map[string]any{"Replace": replace})
	f := filepath.Join(dir, "overlay.json")
	return f, os.WriteFile(f, b, 0o644)
}

// missing returns "" when every checked package reported its check test
// passed, else why the run cannot be trusted.
func (c *goCheck) missing(passed map[string]bool) string {
	if c == nil {
		return ""
	}
	var pkgs []string
	for path := range c.pkgs {
		if !passed[path] {
			pkgs = append(pkgs, path)
		}
	}
	if len(pkgs) == 0 {
		return ""
	}
	sort.Strings(pkgs)
	return fmt.Sprintf("the test binary of %s reported without running the tests: the check test the validator added to the run (%s) did not pass. Code that runs before the tests (a TestMain that does not call m.Run, an init, a package variable) decided the report", clipNames(pkgs), c.name)
}
