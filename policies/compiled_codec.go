package policies

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
)

// The compiled forms of the gate's policies (claims lexicon and claim
// binding) as the compiled-policy cache stores them (compiled.go): a flat
// binary encoding, decoded without reflection, every string a substring
// of the one string the payload is read into. The decoder checks every
// length against what is left and never panics on garbage (a cache that
// passed its MAC check but decodes badly is a miss all the same).

type encoder struct{ b []byte }

func (e *encoder) uint(u uint64) { e.b = binary.AppendUvarint(e.b, u) }
func (e *encoder) int(i int64)   { e.b = binary.AppendVarint(e.b, i) }
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *encoder) str(s string) { e.uint(uint64(len(s))); e.b = append(e.b, s...) }

// strs keeps nil apart from empty: 0 is nil, n+1 a list of n.
func (e *encoder) strs(l []string) {
	if l == nil {
		e.uint(0)
		return
	}
	e.uint(uint64(len(l)) + 1)
	for _, s := range l {
		e.str(s)
	}
}

var errDecode = errors.New("malformed compiled policy")

type decoder struct {
	s    string
	err  error
	slab []string // string lists are carved out of it
	// wasDefault: the last source read was marked the embedded default
	wasDefault bool
}

func (d *decoder) fail() { d.err = errDecode; d.s = "" }

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	var u uint64
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		c := d.s[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			d.s = d.s[i+1:]
			return u
		}
	}
	d.fail()
	return 0
}

func (d *decoder) int() int64 {
	u := d.uint()
	i := int64(u >> 1)
	if u&1 != 0 {
		i = ^i
	}
	return i
}

// count reads a length, bounded by what is left (each element takes at
// least one byte), so garbage cannot make the decoder allocate much.
func (d *decoder) count() int {
	n := d.uint()
	if n > uint64(len(d.s)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) bool() bool {
	if d.err != nil || len(d.s) == 0 || d.s[0] > 1 {
		d.fail()
		return false
	}
	v := d.s[0] == 1
	d.s = d.s[1:]
	return v
}

func (d *decoder) str() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

func (d *decoder) strs() []string {
	n := d.uint()
	if n == 0 || d.err != nil {
		return nil
	}
	n--
	if n > uint64(len(d.s)) {
		d.fail()
		return nil
	}
	if cap(d.slab)-len(d.slab) < int(n) {
		d.slab = make([]string, 0, max(512, int(n)))
	}
	l := len(d.slab)
	d.slab = d.slab[:l+int(n)]
	out := d.slab[l : l+int(n) : l+int(n)]
	for i := range out {
		out[i] = d.str()
	}
	return out
}

// sub writes s as a part of whole when it is one (whole[i:i+len(s)]),
// else in full.
func (e *encoder) sub(whole, s string) {
	i := strings.Index(whole, s)
	if i < 0 || s == "" {
		e.uint(0)
		e.str(s)
		return
	}
	e.uint(uint64(i) + 1)
	e.uint(uint64(len(s)))
}

func (d *decoder) sub(whole string) string {
	i := d.uint()
	if i == 0 {
		return d.str()
	}
	n := d.uint()
	if d.err != nil || i-1 > uint64(len(whole)) || n > uint64(len(whole))-(i-1) {
		d.fail()
		return ""
	}
	return whole[i-1 : i-1+n]
}

// source: name, origin, and the bytes, or a mark that they are the
// embedded default of that name (the usual case: nothing to store).
func (e *encoder) source(s Source) {
	e.str(s.Name)
	e.str(s.Origin)
	if def, err := Default(s.Name); err == nil && bytes.Equal(def, s.Data) {
		e.bool(true)
		return
	}
	e.bool(false)
	e.str(string(s.Data))
}

// sourceDefault reads a source that must be the embedded default named
// name.
func (d *decoder) sourceDefault(name string) Source {
	s := d.source()
	if d.err == nil && (s.Name != name || !d.wasDefault) {
		d.fail()
	}
	return s
}

func (d *decoder) source() Source {
	s := Source{Name: d.str(), Origin: d.str()}
	d.wasDefault = false
	if d.bool() {
		d.wasDefault = true
		def, err := Default(s.Name)
		if err != nil {
			d.fail()
		}
		s.Data = def
		return s
	}
	s.Data = []byte(d.str())
	return s
}

func (e *encoder) cueSet(c *CueSet) {
	e.bool(c != nil)
	if c == nil {
		return
	}
	c.derived()
	e.strs(c.alts)
	e.uint(uint64(len(c.Cues)))
	for i, cue := range c.Cues {
		alt := ""
		if i < len(c.alts) {
			alt = c.alts[i]
		}
		e.sub(alt, cue)
	}
	e.str(c.pre)
	e.uint(uint64(len(c.lits)))
	for _, l := range c.lits {
		e.strs(l)
	}
}

func (d *decoder) cueSet() *CueSet {
	if !d.bool() {
		return nil
	}
	c := &CueSet{alts: d.strs()}
	if n := d.count(); n == len(c.alts) && d.err == nil {
		c.Cues = make([]string, n)
		for i := range c.Cues {
			c.Cues[i] = d.sub(c.alts[i])
		}
	} else {
		d.fail()
	}
	c.pre = d.str()
	n := d.count()
	if d.err != nil || n != len(c.alts) || len(c.Cues) != len(c.alts) {
		d.fail()
		return nil
	}
	c.lits = make([][]string, n)
	for i := range c.lits {
		c.lits[i] = d.strs()
	}
	c.litsKnown = true
	return c
}

func (e *encoder) patterns(ps []*Pattern) {
	e.uint(uint64(len(ps)))
	for _, p := range ps {
		p.MayMatchFolded("") // derive the folded literals, if not known
		e.str(p.expr)
		e.sub(p.expr, p.Source)
		e.strs(p.Literals)
		e.uint(uint64(len(p.AllOf)))
		for _, set := range p.AllOf {
			e.strs(set)
		}
		e.bool(p.NM)
		e.bool(p.never)
		e.strs(p.fold)
	}
}

func (d *decoder) patterns() []*Pattern {
	n := d.count()
	if n == 0 || d.err != nil {
		return nil
	}
	out := make([]*Pattern, n)
	ps := make([]Pattern, n)
	for i := range ps {
		p := &ps[i]
		p.expr = d.str()
		p.Source = d.sub(p.expr)
		p.Literals = d.strs()
		if k := d.count(); k > 0 && d.err == nil {
			p.AllOf = make([][]string, k)
			for j := range p.AllOf {
				p.AllOf[j] = d.strs()
			}
		}
		p.NM = d.bool()
		p.never = d.bool()
		p.fold = d.strs()
		p.foldKnown = true
		out[i] = p
	}
	return out
}

// encodeClaims writes the lexicon; the default one (claims_compiled.go)
// is written as its source alone.
func encodeClaims(e *encoder, c *Claims) {
	if isDefaultClaims(c.src.Data) {
		e.bool(true)
		e.source(c.src)
		return
	}
	e.bool(false)
	e.int(int64(c.BlockCap))
	e.int(c.AnomalyMinBytes)
	e.int(int64(c.NegationWindow))
	e.int(int64(c.NegationAfterWindow))
	e.int(int64(c.FutureWindow))
	for _, cs := range []*CueSet{c.Negation, c.NegationAfter, c.Future, c.Temporal, c.QuestionStarters, c.QuestionTails} {
		e.cueSet(cs)
	}
	e.uint(uint64(len(c.Types)))
	for _, r := range c.Types {
		e.str(r.Type)
		e.strs(r.Literals)
		e.patterns(r.Patterns)
		e.patterns(r.Exclude)
		e.bool(r.InQuestions)
		e.bool(r.InFuture)
		e.bool(r.Negatable)
	}
	e.patterns(c.WriteTools)
	e.patterns(c.WriteBash)
	e.patterns(c.WriteRaw)
	e.source(c.src)
}

func decodeCompiledClaims(d *decoder) *Claims {
	if d.bool() {
		// the embedded default's bytes, by the source's mark (hashing
		// them again would cost more than the rest of the decode)
		src := d.sourceDefault(ClaimsFile)
		if d.err != nil {
			d.fail()
			return nil
		}
		return defaultClaimsFrom(src)
	}
	c := &Claims{
		BlockCap:            int(d.int()),
		AnomalyMinBytes:     d.int(),
		NegationWindow:      int(d.int()),
		NegationAfterWindow: int(d.int()),
		FutureWindow:        int(d.int()),
	}
	for _, cs := range []**CueSet{&c.Negation, &c.NegationAfter, &c.Future, &c.Temporal, &c.QuestionStarters, &c.QuestionTails} {
		*cs = d.cueSet()
	}
	n := d.count()
	if d.err == nil && n != len(ClaimTypes) {
		d.fail()
	}
	if d.err != nil {
		return nil
	}
	c.Types = make([]ClaimRule, n)
	for i := range c.Types {
		r := &c.Types[i]
		r.Type = d.str()
		r.Literals = d.strs()
		r.Patterns = d.patterns()
		r.Exclude = d.patterns()
		r.InQuestions = d.bool()
		r.InFuture = d.bool()
		r.Negatable = d.bool()
		if d.err == nil && r.Type != ClaimTypes[i] {
			d.fail()
		}
	}
	c.WriteTools = d.patterns()
	c.WriteBash = d.patterns()
	c.WriteRaw = d.patterns()
	c.src = d.source()
	if d.err != nil {
		return nil
	}
	return c
}

// encodeBinding fails (false) on a min_args value it cannot encode; the
// binding is then not cached.
func encodeBinding(e *encoder, b *Binding) bool {
	e.source(b.src)
	names := slices.Sorted(maps.Keys(b.claims))
	e.uint(uint64(len(names)))
	for _, c := range names {
		e.str(c)
		rules := b.claims[c]
		e.bool(rules != nil)
		e.uint(uint64(len(rules)))
		for _, r := range rules {
			e.str(r.Name)
			keys := slices.Sorted(maps.Keys(r.MinArgs))
			e.bool(r.MinArgs != nil)
			e.uint(uint64(len(keys)))
			for _, k := range keys {
				e.str(k)
				switch v := r.MinArgs[k].(type) {
				case bool:
					if !v {
						return false
					}
					e.uint(1)
				case float64:
					e.uint(2)
					e.uint(math.Float64bits(v))
				default:
					return false
				}
			}
			e.str(r.Example)
			e.str(r.Scope)
			e.bool(r.AllowRun)
			e.strs(r.Commands)
			e.strs(r.With)
		}
	}
	e.uint(uint64(len(b.ladder)))
	for _, r := range b.ladder {
		e.str(r.Name)
		e.str(r.Description)
		e.uint(uint64(len(r.Match)))
		for _, m := range r.Match {
			e.str(m.Tool)
			e.str(m.Command)
		}
		e.int(int64(r.MinAttempts))
		e.int(int64(r.MinRoutes))
	}
	e.str(b.Toolchains.Go)
	e.str(b.Toolchains.Python3)
	e.strs(b.Toolchains.Path)
	e.uint(uint64(len(b.projects)))
	for _, p := range b.projects {
		e.str(p.root)
		keys := slices.Sorted(maps.Keys(p.commands))
		e.uint(uint64(len(keys)))
		for _, k := range keys {
			e.str(k)
			e.strs(p.commands[k])
		}
	}
	e.str(b.root)
	return true
}

func decodeCompiledBinding(d *decoder) *Binding {
	b := &Binding{src: d.source(), claims: map[string][]ValidatorRule{}}
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		c := d.str()
		isSet := d.bool()
		m := d.count()
		var rules []ValidatorRule
		if isSet {
			rules = make([]ValidatorRule, 0, m)
		}
		for j := 0; j < m && d.err == nil; j++ {
			r := ValidatorRule{Name: d.str()}
			hasArgs := d.bool()
			k := d.count()
			if hasArgs {
				r.MinArgs = make(map[string]any, k)
			}
			for a := 0; a < k && d.err == nil; a++ {
				key := d.str()
				var v any
				switch d.uint() {
				case 1:
					v = true
				case 2:
					v = math.Float64frombits(d.uint())
				default:
					d.fail()
				}
				if r.MinArgs == nil {
					d.fail()
					break
				}
				r.MinArgs[key] = v
			}
			r.Example = d.str()
			r.Scope = d.str()
			r.AllowRun = d.bool()
			r.Commands = d.strs()
			r.With = d.strs()
			rules = append(rules, r)
		}
		b.claims[c] = rules
	}
	n = d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r := Rung{Name: d.str(), Description: d.str()}
		m := d.count()
		for j := 0; j < m && d.err == nil; j++ {
			r.Match = append(r.Match, RungMatch{Tool: d.str(), Command: d.str()})
		}
		r.MinAttempts = int(d.int())
		r.MinRoutes = int(d.int())
		b.ladder = append(b.ladder, r)
	}
	b.Toolchains.Go = d.str()
	b.Toolchains.Python3 = d.str()
	b.Toolchains.Path = d.strs()
	n = d.count()
	for i := 0; i < n && d.err == nil; i++ {
		p := projectCommands{root: d.str(), commands: map[string][]string{}}
		m := d.count()
		for j := 0; j < m && d.err == nil; j++ {
			k := d.str()
			p.commands[k] = d.strs()
		}
		b.projects = append(b.projects, p)
	}
	b.root = d.str()
	if d.err != nil {
		return nil
	}
	return b
}
