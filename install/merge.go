package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
)

// Options says what to wire and where.
type Options struct {
	Runtime    hooks.Runtime
	Scope      Scope
	BinDir     string // absolute directory holding the hook binaries
	HomeDir    string // the user's home directory (user scope)
	ProjectDir string // the project root (project and local scope)
	// JudgeTimeout, when set, replaces the judge's timeout of Wiring
	// (callers pass JudgeTimeoutFor the judges.md in force).
	JudgeTimeout time.Duration
	// Socket, when set, is passed to every hook as --socket PATH (sealed
	// mode: the hooks are thin clients of the daemon there).
	Socket string
	// Thin, with Socket, wires docket-hook (HookBin) instead of the
	// hook binaries: it links only the client, so it starts faster.
	Thin bool
}

// Change is a planned edit of one settings file. Old and New are equal
// when there is nothing to do.
type Change struct {
	Path    string
	Existed bool
	Old     []byte
	New     []byte
	Added   int // docket handlers written
	Removed int // docket handlers taken out (replaced ones included)
}

// Changed reports whether applying c would touch the file.
func (c *Change) Changed() bool { return string(c.Old) != string(c.New) }

// Diff renders the change as a unified diff.
func (c *Change) Diff() string {
	from := c.Path
	if !c.Existed {
		from = "/dev/null"
	}
	return unifiedDiff(from, c.Path, string(c.Old), string(c.New))
}

// SettingsError reports a settings file docket will not edit because it
// cannot read it as it expects. The file is left alone.
type SettingsError struct {
	Path string
	Err  error
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("settings file %s: %v", e.Path, e.Err)
}

func (e *SettingsError) Unwrap() error { return e.Err }

// PlanInstall computes the edit that wires docket into o's settings
// file: every docket handler already there is taken out, and the wiring
// of Wiring(o.Runtime) is put in, at the position of the first old docket
// entry of each event or else at the end. Everything else is kept as it
// was. Running it on its own output plans no change.
func PlanInstall(o Options) (*Change, error) {
	if !filepath.IsAbs(o.BinDir) {
		return nil, fmt.Errorf("binary directory %q is not absolute", o.BinDir)
	}
	return plan(o, true)
}

// PlanUninstall computes the edit that removes every docket handler from
// o's settings file, and the groups, event lists and hooks object that
// held only docket handlers. A missing file plans no change.
func PlanUninstall(o Options) (*Change, error) { return plan(o, false) }

func plan(o Options, install bool) (*Change, error) {
	path, err := SettingsPath(o.Runtime, o.Scope, o.HomeDir, o.ProjectDir)
	if err != nil {
		return nil, err
	}
	c := &Change{Path: path}
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		c.Existed = true
		c.Old = old
	case errors.Is(err, fs.ErrNotExist):
		if !install {
			return c, nil
		}
	default:
		return nil, &SettingsError{Path: path, Err: err}
	}
	if err := edit(c, o, install); err != nil {
		return nil, err
	}
	return c, nil
}

// edit computes c.New from c.Old: docket's handlers stripped, and for an
// install the wiring of o put in. It touches no file.
func edit(c *Change, o Options, install bool) error {
	path, old := c.Path, c.Old
	doc, err := parseDocument(old)
	if err != nil {
		note := ""
		if bytes.Contains(old, []byte("//")) || bytes.Contains(old, []byte("/*")) {
			note = "; comments are not JSON, and docket edits only files it can write back whole"
		}
		return &SettingsError{Path: path, Err: fmt.Errorf("%w (fix it or move it aside; docket will not overwrite it%s)", err, note)}
	}
	var hooksObj *object
	if v, ok := doc.get("hooks"); ok {
		if hooksObj, ok = v.(*object); !ok {
			return &SettingsError{Path: path, Err: errors.New(`"hooks" is not an object`)}
		}
	}
	cursor := o.Runtime == hooks.Cursor
	var pos map[string]int
	if hooksObj != nil {
		pos, c.Removed = strip(hooksObj, cursor)
		if !install && c.Removed > 0 && len(hooksObj.members) == 0 {
			doc.del("hooks")
		}
	} else if install {
		hooksObj = &object{}
		doc.set("hooks", hooksObj)
	}
	if install {
		for _, w := range Wiring(o.Runtime) {
			if o.Socket != "" {
				w.Args = append(append([]string(nil), w.Args...), "--socket", o.Socket)
				w.Thin = o.Thin
			}
			if err := insertWire(hooksObj, w, o, pos); err != nil {
				return &SettingsError{Path: path, Err: err}
			}
			c.Added++
		}
	}
	if install && cursor {
		if _, ok := doc.get("version"); !ok {
			doc.members = append([]member{{"version", json.Number("1")}}, doc.members...)
		}
	}
	c.New = c.Old
	if out := encodeDocument(doc, detectIndent(old)); !c.Existed || !sameJSON(old, out) {
		c.New = out
	}
	return nil
}

// strip removes every docket handler under every event of h. It returns,
// per event, the index at which docket's first entry stood (in the
// stripped list), and how many handlers it removed. An event list that
// held only docket entries is removed. Cursor lists hold handlers; the
// other runtimes' lists hold matcher groups whose "hooks" hold handlers.
func strip(h *object, cursor bool) (map[string]int, int) {
	pos := map[string]int{}
	removed := 0
	var emptied []string
	for i := range h.members {
		m := &h.members[i]
		arr, ok := m.val.([]any)
		if !ok {
			continue // "enabled", "disabled" and other non-list keys
		}
		kept := make([]any, 0, len(arr))
		n := 0
		for _, el := range arr {
			drop, d := stripEntry(el, cursor)
			if d > 0 {
				if n == 0 {
					pos[m.key] = len(kept)
				}
				n += d
			}
			if !drop {
				kept = append(kept, el)
			}
		}
		if n == 0 {
			continue
		}
		removed += n
		m.val = kept
		if len(kept) == 0 {
			emptied = append(emptied, m.key)
		}
	}
	for _, k := range emptied {
		h.del(k)
	}
	return pos, removed
}

// stripEntry removes docket handlers from one list element. It reports
// whether the element itself goes (it was, or held only, docket
// handlers) and how many handlers it removed.
func stripEntry(el any, cursor bool) (drop bool, n int) {
	if cursor {
		if isDocketHandler(el) {
			return true, 1
		}
		return false, 0
	}
	g, ok := el.(*object)
	if !ok {
		return false, 0
	}
	v, _ := g.get("hooks")
	handlers, ok := v.([]any)
	if !ok {
		return false, 0
	}
	kept := make([]any, 0, len(handlers))
	for _, hd := range handlers {
		if !isDocketHandler(hd) {
			kept = append(kept, hd)
		}
	}
	n = len(handlers) - len(kept)
	if n == 0 {
		return false, 0
	}
	if len(kept) == 0 {
		return true, n
	}
	g.set("hooks", kept)
	return false, n
}

// isDocketHandler reports whether el is a command handler running one of
// docket's hook binaries.
func isDocketHandler(el any) bool {
	o, ok := el.(*object)
	if !ok {
		return false
	}
	v, _ := o.get("command")
	cmd, ok := v.(string)
	return ok && DocketBinary(cmd) != ""
}

// insertWire puts w's entry into h's list for w.Event, at pos[w.Event]
// when docket's old entry stood there, else at the end.
func insertWire(h *object, w Wire, o Options, pos map[string]int) error {
	var arr []any
	if v, ok := h.get(w.Event); ok {
		if arr, ok = v.([]any); !ok {
			return fmt.Errorf("hooks.%s is not a list", w.Event)
		}
	}
	i, ok := pos[w.Event]
	if !ok || i > len(arr) {
		i = len(arr)
	}
	arr = append(arr, nil)
	copy(arr[i+1:], arr[i:])
	arr[i] = wireEntry(w, o)
	h.set(w.Event, arr)
	return nil
}

// wireEntry renders one wiring entry in the runtime's settings shape.
func wireEntry(w Wire, o Options) any {
	cmd := w.Command(o.BinDir, o.Runtime)
	if w.Binary == JudgeBin && o.JudgeTimeout > 0 {
		w.Timeout = o.JudgeTimeout
	}
	if o.Runtime == hooks.Cursor {
		return &object{members: []member{
			{"command", cmd},
			{"timeout", seconds(w.Timeout)},
		}}
	}
	handler := &object{members: []member{{"type", "command"}}}
	if o.Runtime == hooks.Gemini {
		handler.members = append(handler.members,
			member{"name", w.Binary},
			member{"command", cmd},
			member{"timeout", json.Number(strconv.FormatInt(w.Timeout.Milliseconds(), 10))})
	} else {
		handler.members = append(handler.members,
			member{"command", cmd},
			member{"timeout", seconds(w.Timeout)})
	}
	g := &object{}
	if w.Matcher != "" {
		g.members = append(g.members, member{"matcher", w.Matcher})
	}
	g.members = append(g.members, member{"hooks", []any{handler}})
	return g
}

func seconds(d time.Duration) json.Number {
	return json.Number(strconv.FormatInt(int64(d/time.Second), 10))
}

// Apply writes c: the parent directory is created when missing, an
// existing file is first copied to a backup beside it
// (<file>.docket-bak, or <file>.docket-bak.<UTC time> when that exists),
// and the new content is written atomically with the old file's mode
// (0600 for a new file). A symlinked settings file is written through
// the link. It returns the backup's path ("" when none was made).
func Apply(c *Change, now time.Time) (backup string, err error) {
	if !c.Changed() {
		return "", nil
	}
	path := c.Path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("create settings directory: %w", err)
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
		// The file on disk must still be what was planned against.
		cur, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reread settings: %w", err)
		}
		if string(cur) != string(c.Old) {
			return "", fmt.Errorf("settings file %s changed while docket was planning; run the command again", c.Path)
		}
		backup = path + ".docket-bak"
		if _, err := os.Lstat(backup); err == nil {
			backup += "." + now.UTC().Format("20060102T150405.000000000Z")
		}
		if err := writeExclusive(backup, cur, mode); err != nil {
			return "", fmt.Errorf("back up settings: %w", err)
		}
	} else if c.Existed {
		return "", fmt.Errorf("settings file %s disappeared while docket was planning; run the command again", c.Path)
	}
	if err := home.WriteFileAtomic(path, c.New, mode); err != nil {
		return backup, fmt.Errorf("write settings: %w", err)
	}
	return backup, nil
}

func writeExclusive(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
