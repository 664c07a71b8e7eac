package validators

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/internal/home"
)

//go:embed defs/*.yaml
var defsFS embed.FS

// DefinitionVersion is the version every definition file declares.
const DefinitionVersion = 1

// maxDefinitionSize bounds a definition file.
const maxDefinitionSize = 256 << 10

// Definition is one validator definition: a name the claim binding policy
// refers to, the Go class that implements it, the argument schema and
// class configuration. Definitions live in YAML files named <name>.yaml.
type Definition struct {
	Name        string
	Class       string
	Description string
	Params      map[string]Param
	// Origin is the file it came from, or "embedded:<file>".
	Origin string
	// Digest is "sha256:<hex>" of the file's bytes.
	Digest string

	cls    class
	config any // the class's decoded configuration
}

// Param is one argument in a definition's schema.
type Param struct {
	Type     string // string, integer, duration, strings, command
	Required bool
	Doc      string
	// Default, Min and Max are normalized to the Param's Go type: string,
	// int64, time.Duration, []string.
	Default any
	Min     any
	Max     any
}

// DefaultDefinitions returns the embedded default definition files, file
// name to bytes, for `docket init` to install read-only.
func DefaultDefinitions() map[string][]byte {
	out := map[string][]byte{}
	ents, _ := fs.ReadDir(defsFS, "defs")
	for _, e := range ents {
		b, err := defsFS.ReadFile("defs/" + e.Name())
		if err == nil {
			out[e.Name()] = b
		}
	}
	return out
}

// LoadDefinitions loads the definitions under h.ValidatorsDir() when that
// directory holds any *.yaml file, else the embedded defaults. The set in
// force is all-or-nothing: one malformed file is an error, and an
// installed set is never topped up with embedded files (deleting a file
// disables that validator).
func LoadDefinitions(h home.Home) (map[string]*Definition, error) {
	dir := h.ValidatorsDir()
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("load validator definitions: %w", err)
	}
	files := map[string][]byte{}
	origin := map[string]string{}
	if len(names) > 0 {
		for _, p := range names {
			if strings.HasPrefix(filepath.Base(p), ".") {
				// a hidden file is not pinned by the policy approval
				// (policies.PolicyFiles), so it is not policy either
				continue
			}
			b, err := readLimited(p)
			if err != nil {
				return nil, fmt.Errorf("load validator definitions: %w", err)
			}
			files[filepath.Base(p)] = b
			origin[filepath.Base(p)] = p
		}
	} else {
		files = DefaultDefinitions()
		for n := range files {
			origin[n] = "embedded:" + n
		}
	}
	defs := map[string]*Definition{}
	keys := make([]string, 0, len(files))
	for n := range files {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	for _, n := range keys {
		d, err := ParseDefinition(origin[n], files[n])
		if err != nil {
			return nil, err
		}
		defs[d.Name] = d
	}
	return defs, nil
}

func readLimited(p string) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxDefinitionSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, maxDefinitionSize)
	}
	return os.ReadFile(p)
}

// DefinitionError is a definition file that cannot be used.
type DefinitionError struct {
	Origin string
	Err    error
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("validator definition %s: %v", e.Origin, e.Err)
}
func (e *DefinitionError) Unwrap() error { return e.Err }

type defFile struct {
	Version     int                  `yaml:"version"`
	Name        string               `yaml:"name"`
	Class       string               `yaml:"class"`
	Description string               `yaml:"description"`
	Args        map[string]paramFile `yaml:"args"`
	Config      yaml.RawMessage      `yaml:"config"`
}

type paramFile struct {
	Type     string `yaml:"type"`
	Required bool   `yaml:"required"`
	Doc      string `yaml:"doc"`
	Default  any    `yaml:"default"`
	Min      any    `yaml:"min"`
	Max      any    `yaml:"max"`
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ParseDefinition decodes one definition file strictly: unknown keys,
// unknown classes, arguments the class does not take, and a file name
// that differs from the definition's name are errors.
func ParseDefinition(origin string, data []byte) (*Definition, error) {
	d, err := parseDefinition(origin, data)
	if err != nil {
		return nil, &DefinitionError{Origin: origin, Err: err}
	}
	return d, nil
}

func parseDefinition(origin string, data []byte) (*Definition, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	var f defFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if f.Version != DefinitionVersion {
		return nil, fmt.Errorf("version: %d, want %d", f.Version, DefinitionVersion)
	}
	if !nameRE.MatchString(f.Name) {
		return nil, fmt.Errorf("name: bad name %q", f.Name)
	}
	base := filepath.Base(strings.TrimPrefix(origin, "embedded:"))
	if base != f.Name+".yaml" {
		return nil, fmt.Errorf("name %q does not match file name %q", f.Name, base)
	}
	cls, ok := classes[f.Class]
	if !ok {
		return nil, fmt.Errorf("class: unknown class %q (known: %s)", f.Class, strings.Join(classNames(), ", "))
	}
	sum := sha256.Sum256(data)
	d := &Definition{Name: f.Name, Class: f.Class, Description: f.Description, Params: map[string]Param{},
		Origin: origin, Digest: "sha256:" + hex.EncodeToString(sum[:]), cls: cls}
	takes := cls.params()
	for name, pf := range f.Args {
		want, ok := takes[name]
		if !ok {
			return nil, fmt.Errorf("args.%s: class %s takes no such argument", name, f.Class)
		}
		if pf.Type != want.typ {
			return nil, fmt.Errorf("args.%s: type %q, class %s needs %q", name, pf.Type, f.Class, want.typ)
		}
		p, err := checkParam(pf)
		if err != nil {
			return nil, fmt.Errorf("args.%s: %w", name, err)
		}
		d.Params[name] = p
	}
	for name, want := range takes {
		if want.required {
			p, ok := d.Params[name]
			if !ok || !p.Required {
				return nil, fmt.Errorf("args.%s: class %s needs it declared required", name, f.Class)
			}
		}
	}
	cfg, err := cls.config(f.Config)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	d.config = cfg
	return d, nil
}

func checkParam(pf paramFile) (Param, error) {
	p := Param{Type: pf.Type, Required: pf.Required, Doc: pf.Doc}
	norm := func(field string, v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		out, err := coerce(pf.Type, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return out, nil
	}
	var err error
	if p.Default, err = norm("default", pf.Default); err != nil {
		return p, err
	}
	if p.Min, err = norm("min", pf.Min); err != nil {
		return p, err
	}
	if p.Max, err = norm("max", pf.Max); err != nil {
		return p, err
	}
	if (p.Min != nil || p.Max != nil) && pf.Type != "integer" && pf.Type != "duration" {
		return p, fmt.Errorf("min/max only apply to integer and duration, not %s", pf.Type)
	}
	if p.Required && p.Default != nil {
		return p, errors.New("required and default are exclusive")
	}
	if p.Default != nil {
		if err := inRange(p, p.Default); err != nil {
			return p, fmt.Errorf("default: %w", err)
		}
	}
	return p, nil
}

// coerce converts a decoded YAML or JSON value into a Param type's Go
// value: string; integer → int64; duration → time.Duration (a Go duration
// string or whole seconds); strings → []string; command → string or
// []string.
func coerce(typ string, v any) (any, error) {
	switch typ {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", jsonType(v))
		}
		return s, nil
	case "integer":
		n, ok := toInt(v)
		if !ok {
			return nil, fmt.Errorf("want an integer, got %s", jsonType(v))
		}
		return n, nil
	case "duration":
		if s, ok := v.(string); ok {
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, fmt.Errorf("want a duration like \"90s\": %w", err)
			}
			return d, nil
		}
		n, ok := toInt(v)
		if !ok {
			return nil, fmt.Errorf("want a duration (\"90s\" or whole seconds), got %s", jsonType(v))
		}
		if n > int64(1<<31) {
			return nil, errors.New("duration too large")
		}
		return time.Duration(n) * time.Second, nil
	case "strings":
		return toStrings(v)
	case "command":
		if s, ok := v.(string); ok {
			return s, nil
		}
		l, err := toStrings(v)
		if err != nil {
			return nil, errors.New("want a command string or an argv list of strings")
		}
		return l, nil
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}

func toStrings(v any) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, got %s", jsonType(v))
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("want a list of strings, found %s", jsonType(x))
		}
		out = append(out, s)
	}
	return out, nil
}

func inRange(p Param, v any) error {
	switch x := v.(type) {
	case int64:
		if lo, ok := p.Min.(int64); ok && x < lo {
			return fmt.Errorf("%d is below the minimum %d", x, lo)
		}
		if hi, ok := p.Max.(int64); ok && x > hi {
			return fmt.Errorf("%d is above the maximum %d", x, hi)
		}
	case time.Duration:
		if lo, ok := p.Min.(time.Duration); ok && x < lo {
			return fmt.Errorf("%v is below the minimum %v", x, lo)
		}
		if hi, ok := p.Max.(time.Duration); ok && x > hi {
			return fmt.Errorf("%v is above the maximum %v", x, hi)
		}
	}
	return nil
}
