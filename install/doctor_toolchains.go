package install

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/docket/docket/validators"
)

// writable reports whether this process may write path; a variable so
// tests running as root can see the unprivileged answer.
var writable = func(path string) bool {
	return syscall.Access(path, 0x2 /* W_OK */) == nil
}

// checkToolchains: toolchains.json exists, each recorded toolchain still
// answers with the version recorded, and none of it is writable by the
// user whose agent the validators judge (an agent that can rewrite the
// compiler or the standard library's testing package can make any test
// pass).
func checkToolchains(env *Env) []Result {
	rec, err := validators.ReadToolchainRecord(env.Home)
	if err != nil {
		return one(fail(err.Error(), "run 'docket init --toolchains' to record the toolchains again"))
	}
	if rec == nil || len(rec.Tools) == 0 {
		return one(warn(fmt.Sprintf("no toolchains recorded in %s: validators use the first go/python3 on %v", env.Home.ToolchainsPath(), validators.SystemPath),
			"run 'docket init --toolchains' as the human who owns the toolchains"))
	}
	names := make([]string, 0, len(rec.Tools))
	for n := range rec.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Result
	for _, name := range names {
		t := rec.Tools[name]
		now, err := validators.Reprobe(context.Background(), name, t)
		switch {
		case err != nil:
			out = append(out, fail(fmt.Sprintf("%s at %s does not run: %v", name, t.Path, err),
				"reinstall it, or run 'docket init --toolchains' to record the one in use now"))
			continue
		case now.Version != t.Version:
			out = append(out, warn(fmt.Sprintf("%s at %s is %s, recorded as %s", name, t.Path, now.Version, t.Version),
				"run 'docket init --toolchains' after an upgrade, then 'docket policy approve'"))
			continue
		}
		if w := writableParts(name, t.Path); len(w) > 0 {
			out = append(out, warn(fmt.Sprintf("%s %s: %s writable by this user, so an agent running as it can change what a validator runs", name, t.Version, w[0]),
				"install the toolchain owned by another user (e.g. root under /usr/local), or run docket in sealed mode (docket install --sealed)"))
			continue
		}
		out = append(out, ok(fmt.Sprintf("%s %s at %s", name, t.Version, t.Path)))
	}
	return out
}

// writableParts lists the parts of a toolchain this user may write: the
// binary and its directory, and for go the GOROOT's testing package and
// tool directory.
func writableParts(name, bin string) []string {
	parts := []string{bin, filepath.Dir(bin)}
	if name == "go" {
		root := filepath.Dir(filepath.Dir(bin))
		parts = append(parts, filepath.Join(root, "src", "testing"), filepath.Join(root, "pkg", "tool"))
	}
	var out []string
	for _, p := range parts {
		if writable(p) {
			out = append(out, p)
		}
	}
	return out
}
