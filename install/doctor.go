package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/store/sqlstore"
)

// Status is a check result's verdict.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // works, but weaker than it should be
	Fail Status = "fail" // docket is not protecting the agent as configured
	Skip Status = "skip" // could not be checked; Detail says why
)

// Result is one finding of one check. Fix is what to do about a Warn or
// Fail.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Env is what the checks look at.
type Env struct {
	Home       home.Home
	UserHome   string // the user's home directory, for user-scope settings
	ProjectDir string // the project whose settings apply
	Now        time.Time
	// RecentWindow bounds the judge-availability check (default 7 days).
	RecentWindow time.Duration
	// Getenv reads the environment (default os.Getenv): OpenClaw's
	// config is found through OPENCLAW_CONFIG_PATH and OPENCLAW_HOME.
	Getenv func(string) string

	ledgerRead bool
	entries    map[string][]*ledger.Entry // verified ledgers, by session
	ledgerErrs map[string]error           // sessions that did not verify
	ledgerErr  error                      // the ledger could not be opened
}

// Check is one doctor check: a name and a function returning one or more
// results. Add a check by appending to Checks.
type Check struct {
	Name string
	Run  func(*Env) []Result
}

// Checks is the doctor's table, run in order.
var Checks = []Check{
	{"keys", checkKeys},
	{"state-root", checkSyncedFolder},
	{"hooks", checkHooks},
	{"codex-trust", checkCodexTrust},
	{"openclaw", checkOpenClaw},
	{"policies", checkPolicies},
	{"toolchains", checkToolchains},
	{"ledgers", checkLedgers},
	{"store", checkStore},
	{"judge-family", checkJudgeFamily},
	{"judge-availability", checkJudgeAvailability},
}

// Doctor runs every check of Checks against env.
func Doctor(env *Env) []Result {
	if env.Now.IsZero() {
		env.Now = time.Now()
	}
	if env.RecentWindow == 0 {
		env.RecentWindow = 7 * 24 * time.Hour
	}
	var out []Result
	for _, c := range Checks {
		for _, r := range c.Run(env) {
			if r.Check == "" {
				r.Check = c.Name
			}
			out = append(out, r)
		}
	}
	return out
}

// Healthy reports whether no result failed.
func Healthy(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Fail {
			return false
		}
	}
	return true
}

func ok(detail string) Result            { return Result{Status: OK, Detail: detail} }
func skip(detail string) Result          { return Result{Status: Skip, Detail: detail} }
func fail(detail, fix string) Result     { return Result{Status: Fail, Detail: detail, Fix: fix} }
func warn(detail, fix string) Result     { return Result{Status: Warn, Detail: detail, Fix: fix} }
func one(r Result) []Result              { return []Result{r} }
func named(name string, r Result) Result { r.Check = name; return r }
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// checkKeys: both secret keys exist and no one but the owner can read
// them.
func checkKeys(env *Env) []Result {
	var out []Result
	for _, p := range []string{env.Home.HMACKeyPath(), env.Home.CheckpointKeyPath()} {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, fail(p+" is missing", "run 'docket init' (it never overwrites an existing key)"))
		case err != nil:
			out = append(out, fail(err.Error(), "check the permissions of "+filepath.Dir(p)))
		case !st.Mode().IsRegular():
			out = append(out, fail(p+" is not a regular file", "move it aside and run 'docket init'"))
		case st.Mode().Perm()&0o077 != 0:
			out = append(out, fail(fmt.Sprintf("%s has mode %04o: group or others can read it", p, st.Mode().Perm()),
				"chmod 600 "+shellQuote(p)+", and rotate the key if someone else may have read it"))
		default:
			out = append(out, ok(fmt.Sprintf("%s present, mode %04o", p, st.Mode().Perm())))
		}
	}
	if _, err := os.Stat(env.Home.VerifierKeyPath()); err != nil {
		out = append(out, warn(env.Home.VerifierKeyPath()+" is missing: auditors have no public key to check checkpoints with",
			"run 'docket init' to write it again"))
	}
	return out
}

// syncMarkers are directory names and marker files of folder-syncing
// services. A ledger inside one is uploaded (keys included), and the
// sync client's own renames and conflict copies break locking and the
// hash chain.
var syncDirNames = []string{"Mobile Documents", "iCloud Drive", "iCloudDrive", "Dropbox", "Google Drive", "GoogleDrive", "My Drive", "Box", "Box Sync", "pCloudDrive", "MEGA"}
var syncMarkerFiles = []string{".stfolder", ".dropbox", ".dropbox.cache", ".sync", ".tresorit", ".nextcloudsync.log", ".owncloudsync.log"}

// SyncedFolder returns the synced folder containing dir and the service,
// or "" when there is none. It walks from dir up to the root, looking at
// each directory's name and for the services' marker files.
func SyncedFolder(dir string) (folder, service string) {
	dir = filepath.Clean(dir)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	for d := dir; ; d = filepath.Dir(d) {
		base := filepath.Base(d)
		for _, n := range syncDirNames {
			if strings.EqualFold(base, n) {
				return d, n
			}
		}
		if strings.HasPrefix(base, "OneDrive") {
			return d, "OneDrive"
		}
		if filepath.Base(filepath.Dir(d)) == "CloudStorage" {
			return d, "CloudStorage (" + base + ")"
		}
		for _, m := range syncMarkerFiles {
			if _, err := os.Lstat(filepath.Join(d, m)); err == nil {
				return d, m + " marker"
			}
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

func checkSyncedFolder(env *Env) []Result {
	folder, service := SyncedFolder(env.Home.Root)
	if folder == "" {
		return one(ok(env.Home.Root + " is not inside a synced folder"))
	}
	return one(fail(fmt.Sprintf("state root %s is inside %s, synced by %s: keys get uploaded and sync conflicts break the ledger", env.Home.Root, folder, service),
		"move the state root out (e.g. mv it to ~/.local/state/docket) and set DOCKET_HOME to the new place"))
}

// settingsFile is one settings file that applies to env.
type settingsFile struct {
	rt    hooks.Runtime
	scope Scope
	path  string
	data  []byte
}

// settingsFiles returns every existing settings file of every runtime
// that applies to env's user and project.
func settingsFiles(env *Env) ([]settingsFile, []Result) {
	var files []settingsFile
	var problems []Result
	for _, rt := range hooks.Runtimes {
		for _, sc := range []Scope{User, Project, Local} {
			p, err := SettingsPath(rt, sc, env.UserHome, env.ProjectDir)
			if err != nil {
				continue
			}
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				problems = append(problems, named("hooks", fail(err.Error(), "make "+p+" readable")))
				continue
			}
			files = append(files, settingsFile{rt, sc, p, b})
		}
	}
	return files, problems
}

// checkHooks: each settings file that mentions docket wires every event
// to the right binary with a sane timeout; the binaries exist and are
// executable; and docket is wired somewhere.
func checkHooks(env *Env) []Result {
	files, out := settingsFiles(env)
	wiredAnywhere := false
	var judgeMin time.Duration
	if j, err := policies.LoadJudges(env.Home); err == nil {
		judgeMin = JudgeTimeoutFor(j)
	}
	for _, f := range files {
		entries, err := Wired(f.rt, f.data)
		if err != nil {
			out = append(out, fail(fmt.Sprintf("%s: %v", f.path, err), "fix the file's JSON; docket will not edit it until then"))
			continue
		}
		// A switch in any file of the runtime turns every hook off,
		// docket's in other files included.
		if off := hooksSwitchedOff(f); off != "" {
			out = append(out, fail(fmt.Sprintf("%s (%s, %s): %s", f.path, f.rt, f.scope, off),
				"remove that setting from "+f.path))
		}
		if len(entries) == 0 {
			continue
		}
		wiredAnywhere = true
		fix := fmt.Sprintf("run 'docket install --runtime %s --scope %s'", f.rt, f.scope)
		problems := CheckWiring(f.rt, f.data, "", judgeMin)
		seen := map[string]bool{}
		for _, e := range entries {
			if seen[e.Program] {
				continue
			}
			seen[e.Program] = true
			if !filepath.IsAbs(e.Program) && !strings.HasPrefix(e.Program, "$") {
				problems = append(problems, fmt.Sprintf("%s is not an absolute path", e.Program))
				continue
			}
			if strings.HasPrefix(e.Program, "$") {
				continue // ${CLAUDE_PLUGIN_ROOT}-style: resolved by the runtime
			}
			if err := checkExecutable(e.Program); err != nil {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) > 0 {
			out = append(out, fail(fmt.Sprintf("%s (%s, %s): %s", f.path, f.rt, f.scope, strings.Join(problems, "; ")), fix))
			continue
		}
		out = append(out, ok(fmt.Sprintf("%s (%s, %s): %s wired", f.path, f.rt, f.scope, plural(len(entries), "hook", "hooks"))))
	}
	if !wiredAnywhere {
		out = append(out, fail("docket's hooks are not wired in any settings file for this user and project",
			"run 'docket install' (add --runtime codex|gemini|cursor for another runtime), or install the Claude Code plugin"))
	}
	return out
}

// hooksSwitchedOff says which setting of f turns docket's hooks off:
// Claude Code's disableAllHooks, Gemini CLI's hooksConfig (GeminiOff).
func hooksSwitchedOff(f settingsFile) string {
	if f.rt == hooks.Gemini {
		return strings.Join(GeminiOff(f.data), "; ")
	}
	var s struct {
		DisableAllHooks bool `json:"disableAllHooks"`
	}
	if json.Unmarshal(f.data, &s) != nil {
		return ""
	}
	if f.rt == hooks.Claude && s.DisableAllHooks {
		return "disableAllHooks is true, so no hook runs"
	}
	return ""
}

// checkCodexTrust: for every Codex hooks.json that wires docket, Codex
// will run the hooks (each entry trusted with its current hash and not
// switched off, the project trusted) and `docket validate` can record
// inside its workspace-write sandbox (the state root a writable root).
func checkCodexTrust(env *Env) []Result {
	files, _ := settingsFiles(env)
	var out []Result
	for _, f := range files {
		if f.rt != hooks.Codex {
			continue
		}
		if es, _ := Wired(f.rt, f.data); len(es) == 0 {
			continue
		}
		proj := ""
		if f.scope == Project {
			proj = env.ProjectDir
		}
		cfg := CodexConfigPath(env.UserHome)
		probs, warns, fix := CodexProblems(cfg, f.path, f.data, proj, env.Home.Root)
		where := fmt.Sprintf("%s (%s)", f.path, f.scope)
		switch {
		case len(probs) > 0:
			out = append(out, fail(where+": "+strings.Join(append(probs, warns...), "; "), fix))
		case len(warns) > 0:
			out = append(out, warn(where+": "+strings.Join(warns, "; "), fix))
		default:
			out = append(out, ok(where+": Codex trusts docket's hooks in "+cfg))
		}
	}
	if len(out) == 0 {
		return one(skip("not checked: no Codex hooks.json wires docket here"))
	}
	return out
}

// checkPolicies: every policy file parses, and reports policy_version.
func checkPolicies(env *Env) []Result {
	var out []Result
	var srcs []policies.Source
	current, custom := 0, 0
	for _, n := range policies.Names() {
		s, err := policies.Load(env.Home, n)
		if err != nil {
			out = append(out, fail(err.Error(), "fix the file, or delete it to fall back to the embedded default"))
			continue
		}
		srcs = append(srcs, s)
		def, _ := policies.Default(n)
		switch {
		case strings.HasPrefix(s.Origin, "embedded:") || string(s.Data) == string(def):
			current++
		case readOnly(s.Origin):
			// docket init installs defaults read-only; one that differs
			// from this docket's default was installed by an older one.
			out = append(out, warn(fmt.Sprintf("%s is an older docket's default, not this version's: policy_version is not current", s.Origin),
				"delete it and run 'docket init' to install the current default (copy it first if you meant to keep changes)"))
		default:
			custom++
		}
	}
	type loader struct {
		name string
		load func() error
	}
	for _, l := range []loader{
		{policies.ClaimsFile, func() error { _, err := policies.LoadClaims(env.Home); return err }},
		{policies.BindingFile, func() error { _, err := policies.LoadBinding(env.Home); return err }},
		{policies.ToolsFile, func() error { _, _, err := policies.LoadTools(env.Home); return err }},
		{policies.JudgesFile, func() error { _, err := policies.LoadJudges(env.Home); return err }},
	} {
		if err := l.load(); err != nil {
			out = append(out, fail(fmt.Sprintf("%s does not load: %v", l.name, err), "fix "+filepath.Join(env.Home.PoliciesDir(), l.name)+" or delete it to use the embedded default"))
		}
	}
	if ents, err := os.ReadDir(env.Home.PoliciesDir()); err == nil {
		known := map[string]bool{}
		for _, n := range policies.Names() {
			known[n] = true
		}
		for _, e := range ents {
			if !e.IsDir() && !known[e.Name()] && !strings.HasPrefix(e.Name(), ".") && e.Name() != "README.md" {
				out = append(out, warn(fmt.Sprintf("%s is not a policy docket knows; it is ignored", filepath.Join(env.Home.PoliciesDir(), e.Name())),
					"rename it to one of: "+strings.Join(policies.Names(), ", ")))
			}
		}
	}
	// pinned policy: the files in force must be the approved ones
	if err := policies.CheckApproval(env.Home); err != nil {
		out = append(out, fail(err.Error(), "review the diff with 'docket policy diff', then run 'docket policy approve' (a human, at a terminal)"))
	}
	if len(out) == 0 {
		out = append(out, ok(fmt.Sprintf("%s parse and are approved; policy_version %s (%d current defaults, %d customised)",
			plural(len(srcs), "policy", "policies"), policies.Version(srcs...), current, custom)))
	}
	return out
}

// readOnly reports whether no one may write the file at path.
func readOnly(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().Perm()&0o222 == 0
}

// readLedgers verifies every ledger once and caches the outcome.
func (env *Env) readLedgers() {
	if env.ledgerRead {
		return
	}
	env.ledgerRead = true
	env.entries = map[string][]*ledger.Entry{}
	env.ledgerErrs = map[string]error{}
	paths, _ := filepath.Glob(filepath.Join(env.Home.LedgerDir(), "*.jsonl"))
	if len(paths) == 0 {
		return
	}
	l, err := ledger.Open(env.Home)
	if err != nil {
		env.ledgerErr = err
		return
	}
	for _, p := range paths {
		s := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		es, err := l.ReadVerified(s)
		if err != nil {
			env.ledgerErrs[s] = err
			continue
		}
		env.entries[s] = es
	}
}

// checkLedgers: every ledger under the state root verifies.
func checkLedgers(env *Env) []Result {
	env.readLedgers()
	if env.ledgerErr != nil {
		return one(fail("cannot open the ledger: "+env.ledgerErr.Error(), "run 'docket init'"))
	}
	var out []Result
	sessions := make([]string, 0, len(env.ledgerErrs))
	for s := range env.ledgerErrs {
		sessions = append(sessions, s)
	}
	sort.Strings(sessions)
	for _, s := range sessions {
		out = append(out, fail(env.ledgerErrs[s].Error(),
			"run 'docket verify --session "+s+"' for the first bad entry; keep the file as evidence and restore the session from a copy if you have one"))
	}
	n := 0
	for _, es := range env.entries {
		n += len(es)
	}
	if len(env.entries) == 0 && len(out) == 0 {
		return one(ok("no ledgers yet"))
	}
	if len(env.entries) > 0 {
		out = append(out, ok(fmt.Sprintf("%s verified (%s)", plural(len(env.entries), "ledger", "ledgers"), plural(n, "entry", "entries"))))
	}
	return out
}

// checkStore: the recall store opens (and migrates) where
// $DOCKET_STORE_DSN or the state root puts it. A SQLite store that does
// not exist yet is not created: the judge creates it on first use.
func checkStore(env *Env) []Result {
	dsn := os.Getenv(sqlstore.EnvDSN)
	where := redactDSN(dsn)
	if dsn == "" {
		where = env.Home.StorePath()
		if _, err := os.Stat(where); errors.Is(err, fs.ErrNotExist) {
			return one(ok("no store yet at " + where + " (the judge creates it on first use)"))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sqlstore.Open(ctx, env.Home, dsn)
	if err != nil {
		return one(fail(fmt.Sprintf("the store at %s does not open: %v", where, err),
			"check "+sqlstore.EnvDSN+" and that the database is reachable; for SQLite, move a damaged store.db aside (the judge starts a new one, losing recall history)"))
	}
	st.Close()
	return one(ok("the store at " + where + " opens"))
}

// redactDSN hides a DSN's password.
func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "@"); i > 0 {
		if j := strings.Index(dsn, "://"); j > 0 && j < i {
			return dsn[:j+3] + "…@" + dsn[i+1:]
		}
	}
	return dsn
}

// ModelFamily names the vendor family of a model or provider name:
// "anthropic", "openai", "google", or "" when unknown.
func ModelFamily(s string) string {
	s = strings.ToLower(s)
	switch {
	case strings.Contains(s, "claude"), strings.Contains(s, "anthropic"), strings.Contains(s, "opus"),
		strings.Contains(s, "sonnet"), strings.Contains(s, "haiku"):
		return "anthropic"
	case strings.Contains(s, "gpt"), strings.Contains(s, "openai"), strings.Contains(s, "codex"),
		strings.HasPrefix(s, "o1"), strings.HasPrefix(s, "o3"), strings.HasPrefix(s, "o4"):
		return "openai"
	case strings.Contains(s, "gemini"), strings.Contains(s, "google"), strings.Contains(s, "palm"):
		return "google"
	}
	return ""
}

// runtimeFamily is the model family a runtime's agent runs by default.
var runtimeFamily = map[hooks.Runtime]string{hooks.Claude: "anthropic", hooks.Codex: "openai", hooks.Gemini: "google"}

// checkJudgeFamily: the LLM judge is not the same model family as the
// agents it judges, whose blind spots it would share.
func checkJudgeFamily(env *Env) []Result {
	j, err := policies.LoadJudges(env.Home)
	if err != nil {
		return one(skip("not checked: judges.md does not load (see policies)"))
	}
	if j.Model.Provider == "" || j.Model.Provider == "none" {
		return one(ok("the LLM judge is off (model.provider none): nothing to compare"))
	}
	judge := ModelFamily(j.Model.Name)
	if judge == "" {
		judge = ModelFamily(j.Model.Provider)
	}
	if judge == "" {
		return one(skip(fmt.Sprintf("not checked: cannot tell the family of judge model %q", j.Model.Name)))
	}
	files, _ := settingsFiles(env)
	actors := map[string][]string{}
	for _, f := range files {
		if es, _ := Wired(f.rt, f.data); len(es) > 0 {
			if fam := runtimeFamily[f.rt]; fam != "" {
				actors[fam] = append(actors[fam], string(f.rt))
			}
		}
	}
	if rts, same := actors[judge]; same {
		return one(warn(fmt.Sprintf("judge model %s (%s) is the same family as the %s agent it judges", j.Model.Name, judge, strings.Join(rts, ", ")),
			"set model.provider and model.name in judges.md to another vendor's model"))
	}
	if len(actors) == 0 {
		return one(skip(fmt.Sprintf("not checked: judge model %s (%s), but no wired runtime names the agent's model", j.Model.Name, judge)))
	}
	return one(ok(fmt.Sprintf("judge model %s (%s) differs from the agents' families", j.Model.Name, judge)))
}

// Judge-unavailable rates above these warn and fail.
const (
	unavailableWarn = 0.05
	unavailableFail = 0.25
)

// JudgeUnavailable reports whether a judge_decision entry's body records
// that the judge could not decide: failure_kind "unavailable" (the body
// docket-judge writes), or an "error" or "outcome" of "unavailable".
func JudgeUnavailable(body json.RawMessage) bool {
	var b map[string]any
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	if e, ok := b["error"].(string); ok && e != "" {
		return true
	}
	for _, k := range []string{"failure_kind", "outcome"} {
		if v, ok := b[k].(string); ok && v == "unavailable" {
			return true
		}
	}
	return false
}

// recallUnavailable reports whether a judge_decision body says recall
// from the store failed ("recall": "unavailable: …").
func recallUnavailable(body json.RawMessage) bool {
	var b struct {
		Recall string `json:"recall"`
	}
	return json.Unmarshal(body, &b) == nil && strings.HasPrefix(b.Recall, "unavailable")
}

// window renders a look-back window: "7 days", "36h0m0s".
func window(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return plural(int(d/(24*time.Hour)), "day", "days")
	}
	return d.String()
}

// checkJudgeAvailability: how often the judge could not decide in
// recent sessions.
func checkJudgeAvailability(env *Env) []Result {
	env.readLedgers()
	if env.ledgerErr != nil {
		return one(skip("not checked: the ledger does not open"))
	}
	if env.RecentWindow == 0 {
		env.RecentWindow = 7 * 24 * time.Hour
	}
	if env.Now.IsZero() {
		env.Now = time.Now()
	}
	since := env.Now.Add(-env.RecentWindow)
	total, down, noRecall := 0, 0, 0
	for _, es := range env.entries {
		for _, e := range es {
			if e.Kind != ledger.KindJudgeDecision {
				continue
			}
			if t, err := time.Parse(time.RFC3339Nano, e.Time); err == nil && t.Before(since) {
				continue
			}
			total++
			if JudgeUnavailable(e.Body) {
				down++
			}
			if recallUnavailable(e.Body) {
				noRecall++
			}
		}
	}
	if total == 0 {
		return one(skip(fmt.Sprintf("not checked: no judge decisions in the last %s", window(env.RecentWindow))))
	}
	rate := float64(down) / float64(total)
	detail := fmt.Sprintf("judge unavailable for %d of %d decisions in the last %s (%.1f%%); recall unavailable for %d", down, total, window(env.RecentWindow), 100*rate, noRecall)
	fix := "check the LLM judge's endpoint, key (api_key_env) and model.timeout in judges.md; failures fall to failure_policy.unavailable"
	switch {
	case rate > unavailableFail:
		return one(fail(detail, fix))
	case rate > unavailableWarn:
		return one(warn(detail, fix))
	}
	return one(ok(detail))
}
