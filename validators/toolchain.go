package validators

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

// SystemPath is the fixed search path for toolchains nobody configured
// or recorded, and the tail of the PATH every validator runs with. The
// agent's PATH is never used: a `go` shim earlier on it would otherwise
// answer for the real toolchain.
var SystemPath = []string{"/usr/local/go/bin", "/usr/local/bin", "/usr/bin", "/bin"}

// Tool is one resolved toolchain binary.
type Tool struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Source says where Path came from: "policy", "recorded" (docket
	// init) or "system" (SystemPath).
	Source string `json:"source,omitempty"`
	// broken is why the configured or recorded binary did not answer.
	broken error
}

// usable returns an error when the tool did not answer its probe.
func (t *Tool) usable(name, setting string) error {
	if t.broken == nil {
		return nil
	}
	return fmt.Errorf("%s toolchain %s (%s) does not run: %v; a human runs 'docket init --toolchains' or sets %s in claim_binding.yaml", name, t.Path, t.Source, t.broken, setting)
}

// ToolchainRecord is $DOCKET_HOME/toolchains.json, written by `docket
// init` from the environment of the human who ran it.
type ToolchainRecord struct {
	Version int             `json:"version"`
	Tools   map[string]Tool `json:"tools"` // "go", "python3"
	// GoEnv holds the few go settings module downloads need (GOPROXY,
	// GOPRIVATE, GONOSUMDB, GONOPROXY, GOSUMDB, GOINSECURE) and the
	// user's GOMODCACHE, whose download cache serves as a read-only proxy.
	GoEnv map[string]string `json:"go_env,omitempty"`
}

// recordedGoEnv are the go settings RecordToolchains keeps.
var recordedGoEnv = []string{"GOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOPROXY", "GOSUMDB", "GOINSECURE", "GOMODCACHE"}

// Toolchain is what validators run with: absolute toolchain paths and
// the directories of the harness's own build caches.
type Toolchain struct {
	Go     *Tool // nil when no go was found
	Python *Tool // nil when no python3 was found
	// Path is the fixed PATH: the toolchains' directories, the policy's
	// extra directories, then SystemPath.
	Path []string
	// GoCache and GoModCache are the harness's own caches (under the
	// state root): the user's GOCACHE is writable by anything the agent
	// runs, and a forged build-cache entry can stand in for the package
	// under test.
	GoCache, GoModCache string
	GoEnv               map[string]string
}

// ResolveTool finds name (go or python3) on SystemPath and asks it for
// its real path and version. The caller's PATH is not consulted.
func ResolveTool(ctx context.Context, name string) (*Tool, error) {
	for _, d := range SystemPath {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return probeTool(ctx, name, p, "system")
		}
	}
	return nil, fmt.Errorf("%s not found in %s", name, strings.Join(SystemPath, string(os.PathListSeparator)))
}

// probeTool runs the binary at path with a clean environment for its
// version (and, for python3, its real interpreter path: a pyenv or
// virtualenv shim is a script that picks an interpreter from the
// environment).
func probeTool(ctx context.Context, name, path, source string) (*Tool, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%s: %q is not an absolute path", name, path)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var argv []string
	switch name {
	case "go":
		argv = []string{path, "env", "GOVERSION", "GOROOT"}
	case "python3":
		argv = []string{path, "-E", "-s", "-c", "import sys; print(sys.version.split()[0]); print(sys.executable)"}
	default:
		return nil, fmt.Errorf("unknown toolchain %q", name)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + strings.Join(append([]string{filepath.Dir(path)}, SystemPath...), string(os.PathListSeparator)),
		"GOENV=off", "GOTOOLCHAIN=local", "GOFLAGS=", "HOME=" + os.TempDir()}
	if name == "python3" {
		// a pyenv shim needs its own variables to find the interpreter
		for _, k := range []string{"HOME", "PYENV_ROOT", "PYENV_VERSION"} {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("probe %s at %s: %v: %s", name, path, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("probe %s at %s: unexpected output %q", name, path, out)
	}
	t := &Tool{Path: path, Version: strings.TrimSpace(lines[0]), Source: source}
	if name == "python3" {
		exe := strings.TrimSpace(lines[1])
		if filepath.IsAbs(exe) {
			t.Path = exe
		}
	}
	return t, nil
}

// RecordToolchains finds go and python3 with lookPath (the environment
// of the human running `docket init`; nil for exec.LookPath), resolves
// them to their real paths and versions, and returns the record to write
// to $DOCKET_HOME/toolchains.json. A toolchain that is not found is left
// out.
func RecordToolchains(ctx context.Context, lookPath func(string) (string, error)) (*ToolchainRecord, []string) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	rec := &ToolchainRecord{Version: 1, Tools: map[string]Tool{}}
	var notes []string
	for _, name := range []string{"go", "python3"} {
		p, err := lookPath(name)
		if err == nil {
			p, err = filepath.Abs(p)
		}
		if err == nil && name == "go" {
			p, err = filepath.EvalSymlinks(p)
		}
		var t *Tool
		if err == nil {
			t, err = probeTool(ctx, name, p, "recorded")
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: not recorded (%v)", name, err))
			continue
		}
		t.Source = ""
		rec.Tools[name] = *t
	}
	if g, ok := rec.Tools["go"]; ok {
		args := append([]string{"env"}, recordedGoEnv...)
		cmd := exec.CommandContext(ctx, g.Path, args...)
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if out, err := cmd.Output(); err == nil {
			lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			rec.GoEnv = map[string]string{}
			for i, k := range recordedGoEnv {
				if i < len(lines) && lines[i] != "" {
					rec.GoEnv[k] = lines[i]
				}
			}
		}
	}
	return rec, notes
}

// WriteToolchainRecord writes rec to h.ToolchainsPath() unless a record
// exists there; it reports whether it wrote.
func WriteToolchainRecord(h home.Home, rec *ToolchainRecord, replace bool) (bool, error) {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return false, err
	}
	b = append(b, '\n')
	p := h.ToolchainsPath()
	if !replace {
		if _, err := os.Stat(p); err == nil {
			return false, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return false, fmt.Errorf("record toolchains: %w", err)
	}
	if err := home.WriteFileAtomic(p, b, 0o444); err != nil {
		return false, fmt.Errorf("record toolchains: %w", err)
	}
	return true, nil
}

// ReadToolchainRecord reads the record `docket init` wrote; nil and no
// error when there is none.
func ReadToolchainRecord(h home.Home) (*ToolchainRecord, error) {
	b, err := os.ReadFile(h.ToolchainsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read toolchains: %w", err)
	}
	var rec ToolchainRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("read toolchains %s: %w", h.ToolchainsPath(), err)
	}
	for name, t := range rec.Tools {
		if !filepath.IsAbs(t.Path) {
			return nil, fmt.Errorf("read toolchains %s: %s path %q is not absolute", h.ToolchainsPath(), name, t.Path)
		}
	}
	return &rec, nil
}

// LoadToolchain resolves the toolchains for validators under h: the
// policy's toolchains section first, then the record `docket init` wrote,
// then SystemPath. Each is probed for its version now, so the pass
// records the toolchain that really ran. A toolchain found nowhere is
// nil; the validators that need it fail to run, saying so.
func LoadToolchain(ctx context.Context, h home.Home, pol policies.Toolchains) (*Toolchain, error) {
	rec, err := ReadToolchainRecord(h)
	if err != nil {
		return nil, err
	}
	tc := &Toolchain{
		GoCache:    filepath.Join(h.CacheDir(), "go-build"),
		GoModCache: filepath.Join(h.CacheDir(), "mod"),
		GoEnv:      map[string]string{},
	}
	if rec != nil {
		for k, v := range rec.GoEnv {
			tc.GoEnv[k] = v
		}
	}
	resolve := func(name, configured string) *Tool {
		if configured != "" {
			t, err := probeTool(ctx, name, configured, "policy")
			if err != nil {
				return &Tool{Path: configured, Source: "policy", broken: err}
			}
			return t
		}
		if rec != nil {
			if r, ok := rec.Tools[name]; ok {
				t, err := probeTool(ctx, name, r.Path, "recorded")
				if err != nil {
					return &Tool{Path: r.Path, Source: "recorded", broken: err}
				}
				return t
			}
		}
		t, err := ResolveTool(ctx, name)
		if err != nil {
			return nil
		}
		return t
	}
	tc.Go = resolve("go", pol.Go)
	tc.Python = resolve("python3", pol.Python3)
	seen := map[string]bool{}
	add := func(d string) {
		if d != "" && !seen[d] {
			seen[d] = true
			tc.Path = append(tc.Path, d)
		}
	}
	if tc.Go != nil {
		add(filepath.Dir(tc.Go.Path))
	}
	if tc.Python != nil {
		add(filepath.Dir(tc.Python.Path))
	}
	for _, d := range pol.Path {
		add(d)
	}
	for _, d := range SystemPath {
		add(d)
	}
	return tc, nil
}

// baseEnv is the environment every validator process starts from:
// nothing of the caller's but the locale, a fixed PATH, a private
// temporary directory, and the go settings that make the go command
// ignore the user's go env file, GOFLAGS and toolchain switching.
func (tc *Toolchain) baseEnv(tmp string) []string {
	env := []string{
		"PATH=" + strings.Join(tc.Path, string(os.PathListSeparator)),
		"TMPDIR=" + tmp,
		"GOENV=off",
		"GOFLAGS=",
		"GOTOOLCHAIN=local",
		// a validator that writes into the tree records no digest, so
		// the interpreters it runs leave no bytecode behind
		"PYTHONDONTWRITEBYTECODE=1",
	}
	for _, k := range []string{"LANG", "LC_ALL", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// goEnv is the environment of the go command: baseEnv, the harness's
// own GOCACHE and GOMODCACHE, GOPATH and HOME in the private temporary
// directory, and module downloads served first from the user's download
// cache (every zip is checked against go.sum, so a tampered one fails).
func (tc *Toolchain) goEnv(tmp string) []string {
	// -modcacherw: the harness's module cache stays removable; nothing
	// else comes from GOFLAGS.
	env := append(tc.baseEnv(tmp),
		"GOFLAGS=-modcacherw",
		"HOME="+filepath.Join(tmp, "home"),
		"GOPATH="+filepath.Join(tmp, "gopath"),
		"GOCACHE="+tc.GoCache,
		"GOMODCACHE="+tc.GoModCache,
	)
	proxy := tc.GoEnv["GOPROXY"]
	if proxy == "" {
		proxy = "https://proxy.golang.org,direct"
	}
	if mc := tc.GoEnv["GOMODCACHE"]; mc != "" && mc != tc.GoModCache {
		if st, err := os.Stat(filepath.Join(mc, "cache", "download")); err == nil && st.IsDir() {
			proxy = "file://" + filepath.ToSlash(filepath.Join(mc, "cache", "download")) + "," + proxy
		}
	}
	env = append(env, "GOPROXY="+proxy)
	for _, k := range []string{"GOPRIVATE", "GONOSUMDB", "GONOPROXY", "GOSUMDB", "GOINSECURE"} {
		if v := tc.GoEnv[k]; v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// record is the toolchain description a pass body carries.
func (t *Tool) record() map[string]any {
	if t == nil {
		return nil
	}
	return map[string]any{"path": t.Path, "version": t.Version, "source": t.Source}
}

// lookPath finds an executable on the toolchain's fixed PATH (exec's
// own lookup would use the caller's PATH). A name with a slash is taken
// as is, relative to dir.
func (tc *Toolchain) lookPath(name, dir string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return name, nil
	}
	for _, d := range tc.Path {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s", name, strings.Join(tc.Path, string(os.PathListSeparator)))
}

// Reprobe asks the recorded tool name for its version again, as a
// validator would find it now.
func Reprobe(ctx context.Context, name string, recorded Tool) (*Tool, error) {
	return probeTool(ctx, name, recorded.Path, "recorded")
}
