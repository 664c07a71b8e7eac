package ledger

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The verified-prefix state (<session>.vstate2 beside the ledger) lets a
// reader check only the entries no key holder has vouched for yet. It is
// written by readers after they verify and advanced by appends (see
// startState), and MAC'd with the HMAC key, so only a key holder can
// vouch for a prefix:
//
//	docket-ledger-state v2
//	session <S>
//	size <entries in the prefix>
//	end <byte length of the prefix>
//	lastoff <offset of the prefix's last line>
//	last <hash of the prefix's last entry>
//	pack <where the prefix's bundles end in the pack>
//	prefix <base64 of the SHA-256 state after the prefix's bytes>
//	recent <toolsfrom> <gatesfrom>
//	index <kind> <seq> <offset>        (zero or more, seq order)
//	tool <kind> <seq> <offset>         (up to maxRecentTools, seq order)
//	gate <tag> <seq> <offset>          (up to maxGateTags, seq order)
//	mac <key_id> <hex HMAC-SHA256(K, "docket-ledger-state-v2\n" || all lines above)>
//
// The index lists every entry of the kinds a stop decision reasons about
// (indexedKinds) with the offset of its line, so the gate reads them
// without scanning the ledger. The tool and gate lines are what it needs
// of the entries after its oldest relevant pass, so it does not read the
// gate decisions that pile up there, one per stop: the last tool calls
// (every tool entry with a seq of at least toolsfrom is listed), and the
// last gate decision of each event and agent (tag; every tag whose last
// decision has a seq of at least gatesfrom is listed). See FORMAT.md,
// "Verified-prefix state".

const stateHeader = "docket-ledger-state v2"

// stateDomain separates the state's MAC from every other use of the key.
const stateDomain = "docket-ledger-state-v2\n"

// maxRecentTools and maxGateTags bound the state's tool and gate lines:
// the state is rewritten at every append.
const (
	maxRecentTools = 32
	maxGateTags    = 16
)

// indexedKinds are the kinds the verified-prefix state indexes: the
// validator results a stop decision rests on, and seals. (Not the gate's
// own decisions: one per stop, they would make every stop read all the
// earlier ones.)
var indexedKinds = map[Kind]bool{
	KindValidatorPass: true, KindValidatorFail: true, KindSeal: true,
}

// indexRef locates one indexed entry.
type indexRef struct {
	Kind Kind
	Seq  int64
	Off  int64
}

// gateRef locates the last gate decision of one event and agent.
type gateRef struct {
	Tag      string // gateTag(event, agent)
	Seq, Off int64
}

// vstate is a parsed verified-prefix state.
type vstate struct {
	Size, End, LastOff int64
	Last               string
	Pack               int64
	Prefix             []byte // marshaled SHA-256 state after End bytes
	Index              []indexRef
	// Tools are the prefix's last tool_call and tool_failure entries:
	// every one with a seq of at least ToolsFrom.
	Tools     []indexRef
	ToolsFrom int64
	// Gates are the last gate_decision of each event and agent: every
	// tag whose last decision has a seq of at least GatesFrom.
	Gates     []gateRef
	GatesFrom int64
}

// gateTag names the event and agent of a gate decision: the gate looks
// for the last decision of its own event and agent.
func gateTag(event, agent string) string {
	sum := sha256.Sum256([]byte(event + "\x00" + agent))
	return hex.EncodeToString(sum[:16])
}

// Superseded reports whether a stop that reads entries after e no
// longer needs e: a stop reads the indexed kinds, the tool calls, and
// of the gate decisions only the last of each event and agent — what the
// verified-prefix state lists — so any other entry is superseded by any
// later one, and a gate decision by a later one of its event and agent.
func Superseded(e, later *Entry) bool {
	switch {
	case indexedKinds[e.Kind], e.Kind == KindToolCall, e.Kind == KindToolFailure:
		return false
	case e.Kind == KindGateDecision:
		return later.Kind == KindGateDecision && later.Event == e.Event && later.AgentID == e.AgentID
	}
	return true
}

// note records the entry e at seq and offset off in the index, the
// recent tools or the gate decisions, as its kind asks.
func (s *vstate) note(e *Entry, seq, off int64) {
	switch e.Kind {
	case KindToolCall, KindToolFailure:
		if len(s.Tools) >= maxRecentTools {
			s.ToolsFrom = s.Tools[0].Seq + 1
			s.Tools = append(s.Tools[:0], s.Tools[1:]...)
		}
		s.Tools = append(s.Tools, indexRef{e.Kind, seq, off})
	case KindGateDecision:
		tag := gateTag(e.Event, e.AgentID)
		for i, g := range s.Gates {
			if g.Tag == tag {
				s.Gates = append(s.Gates[:i], s.Gates[i+1:]...)
				break
			}
		}
		if len(s.Gates) >= maxGateTags {
			s.GatesFrom = s.Gates[0].Seq + 1
			s.Gates = append(s.Gates[:0], s.Gates[1:]...)
		}
		s.Gates = append(s.Gates, gateRef{tag, seq, off})
	default:
		if indexedKinds[e.Kind] {
			s.Index = append(s.Index, indexRef{e.Kind, seq, off})
		}
	}
}

// cloneRefs returns a state with copies of s's index, tools and gates, for
// a verifier to extend while s is still read.
func (s *vstate) cloneRefs() vstate {
	return vstate{
		Index: append([]indexRef(nil), s.Index...),
		Tools: append([]indexRef(nil), s.Tools...), ToolsFrom: s.ToolsFrom,
		Gates: append([]gateRef(nil), s.Gates...), GatesFrom: s.GatesFrom,
	}
}

func statePath(sf sessionFiles) string {
	return strings.TrimSuffix(sf.ledger, ".jsonl") + stateSuffix
}

func stateMAC(key []byte, text string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateDomain))
	m.Write([]byte(text))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *vstate) text(session string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nsession %s\nsize %d\nend %d\nlastoff %d\nlast %s\npack %d\nprefix %s\n",
		stateHeader, session, s.Size, s.End, s.LastOff, s.Last, s.Pack, base64.StdEncoding.EncodeToString(s.Prefix))
	fmt.Fprintf(&b, "recent %d %d\n", s.ToolsFrom, s.GatesFrom)
	buf := make([]byte, 0, 64)
	ref := func(prefix, name string, seq, off int64) { // rewritten at every append: kept cheap
		buf = append(append(append(append(buf[:0], prefix...), ' '), name...), ' ')
		buf = append(strconv.AppendInt(buf, seq, 10), ' ')
		buf = append(strconv.AppendInt(buf, off, 10), '\n')
		b.Write(buf)
	}
	for _, r := range s.Index {
		ref("index", string(r.Kind), r.Seq, r.Off)
	}
	for _, r := range s.Tools {
		ref("tool", string(r.Kind), r.Seq, r.Off)
	}
	for _, g := range s.Gates {
		ref("gate", g.Tag, g.Seq, g.Off)
	}
	return b.String()
}

var errBadState = errors.New("verified-prefix state invalid")

// readState returns the session's state when its MAC verifies; any
// problem yields errBadState (or fs.ErrNotExist) and the caller verifies
// from the start.
func (l *Ledger) readState(sf sessionFiles, session string) (*vstate, error) {
	b, err := readFile(statePath(sf))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndex(b, []byte("\nmac "))
	if i < 0 || !bytes.HasSuffix(b, []byte("\n")) {
		return nil, errBadState
	}
	text, macLine := string(b[:i+1]), strings.TrimSuffix(string(b[i+1:]), "\n")
	f := strings.Fields(macLine)
	if len(f) != 3 {
		return nil, errBadState
	}
	key, ok := l.keys.hmacKeyFor(f[1])
	if !ok || !hmac.Equal([]byte(stateMAC(key, text)), []byte(f[2])) {
		return nil, errBadState
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 9 || lines[0] != stateHeader || lines[1] != "session "+session {
		return nil, errBadState
	}
	s := &vstate{}
	nums := []*int64{&s.Size, &s.End, &s.LastOff}
	for j, name := range []string{"size", "end", "lastoff"} {
		v, ok := strings.CutPrefix(lines[2+j], name+" ")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 0 {
			return nil, errBadState
		}
		*nums[j] = n
	}
	var ok1, ok2, ok3 bool
	var pack, prefix string
	s.Last, ok1 = strings.CutPrefix(lines[5], "last ")
	pack, ok2 = strings.CutPrefix(lines[6], "pack ")
	prefix, ok3 = strings.CutPrefix(lines[7], "prefix ")
	if !ok1 || !ok2 || !ok3 || len(s.Last) != 64 {
		return nil, errBadState
	}
	if s.Pack, err = strconv.ParseInt(pack, 10, 64); err != nil || s.Pack < 0 {
		return nil, errBadState
	}
	if s.Prefix, err = base64.StdEncoding.DecodeString(prefix); err != nil {
		return nil, errBadState
	}
	recent, ok := strings.CutPrefix(lines[8], "recent ")
	tf, gf, ok2 := strings.Cut(recent, " ")
	if !ok || !ok2 {
		return nil, errBadState
	}
	s.ToolsFrom, err = strconv.ParseInt(tf, 10, 64)
	if err != nil || s.ToolsFrom < 0 || s.ToolsFrom > s.Size {
		return nil, errBadState
	}
	s.GatesFrom, err = strconv.ParseInt(gf, 10, 64)
	if err != nil || s.GatesFrom < 0 || s.GatesFrom > s.Size {
		return nil, errBadState
	}
	for _, ln := range lines[9:] {
		what, rest, ok1 := strings.Cut(ln, " ")
		name, rest, ok2 := strings.Cut(rest, " ")
		seqs, offs, ok3 := strings.Cut(rest, " ")
		if !ok1 || !ok2 || !ok3 || name == "" {
			return nil, errBadState
		}
		seq, err1 := strconv.ParseInt(seqs, 10, 64)
		off, err2 := strconv.ParseInt(offs, 10, 64)
		if err1 != nil || err2 != nil || seq < 0 || off < 0 || seq >= s.Size || off >= s.End {
			return nil, errBadState
		}
		switch k := Kind(name); {
		case what == "index" && indexedKinds[k]:
			s.Index = append(s.Index, indexRef{k, seq, off})
		case what == "tool" && (k == KindToolCall || k == KindToolFailure) && seq >= s.ToolsFrom:
			s.Tools = append(s.Tools, indexRef{k, seq, off})
		case what == "gate" && len(name) == 32 && seq >= s.GatesFrom:
			s.Gates = append(s.Gates, gateRef{name, seq, off})
		default:
			return nil, errBadState
		}
	}
	if len(s.Tools) > maxRecentTools || len(s.Gates) > maxGateTags {
		return nil, errBadState
	}
	if s.Size == 0 || s.End == 0 || s.LastOff >= s.End {
		return nil, errBadState
	}
	return s, nil
}

func (l *Ledger) stateBytes(session string, s *vstate) []byte {
	text := s.text(session)
	return []byte(text + "mac " + l.keys.hmacID + " " + stateMAC(l.keys.hmacKey, text) + "\n")
}

// writeState replaces the state file atomically: readers hold only the
// shared lock, so one may read while another writes. It is a cache: a
// lost or torn state only costs the next reader a full verification, so
// it is not synced.
func (l *Ledger) writeState(sf sessionFiles, session string, s *vstate) error {
	data := l.stateBytes(session, s)
	path := statePath(sf)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// overwriteState writes the state over the old one in place. Only an
// appender, holding the exclusive lock, does this, so no reader sees it
// half written; it avoids the rename (or truncation to zero), after which
// ext4 starts writing the file back at once, a millisecond per append. A
// crash mid-write leaves a torn state, which fails its MAC; whatever
// passes the MAC is a state a key holder wrote, at worst an older one,
// which only costs the next reader the entries after it.
func (l *Ledger) overwriteState(sf sessionFiles, session string, s *vstate) error {
	data := l.stateBytes(session, s)
	f, err := openFile(statePath(sf), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && st.Size() > int64(len(data)) {
			err = f.Truncate(int64(len(data)))
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// prefixDigest is a running SHA-256 whose state can be saved.
type prefixDigest interface {
	io.Writer
	encoding.BinaryMarshaler
}

// prefixHash resumes the SHA-256 of the prefix bytes from a state.
func prefixHash(marshaled []byte) (prefixDigest, error) {
	h := sha256.New()
	if marshaled != nil {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(marshaled); err != nil {
			return nil, errBadState
		}
	}
	return h.(prefixDigest), nil
}

// Appends advance the state. The appender holds the exclusive lock and
// the key, has checked the signed head, and writes the next entry and its
// bundle itself, so it can vouch for what it writes (and for the entries
// it adopts, which it checks as a reader would): when the state on disk
// describes exactly the head it read (size, end, last hash, pack end), it
// extends the state with each line it commits and saves it after the
// head. Otherwise it leaves the state alone and the next reader verifies
// from the state's end, or from the start. The appender never reads the
// prefix, so it vouches only for its own lines: the readers' checks of
// the prefix (FORMAT.md) are unchanged.

// startState adopts st as the state this append extends, if it describes
// the head the writer read; a nil st starts the state of a new ledger.
func (w *writer) startState(st *vstate) {
	if st == nil {
		w.st = &vstate{Last: zeroHash}
		w.sum, _ = prefixHash(nil)
		return
	}
	if st.Size != w.n || st.End != w.end || st.Last != w.last || w.packEnd < 0 || st.Pack != w.packEnd {
		return
	}
	sum, err := prefixHash(st.Prefix)
	if err != nil {
		return
	}
	w.st, w.sum = st, sum
}

// extendState adds the line the writer commits, entry e, as entry w.n
// at w.end.
func (w *writer) extendState(line []byte, e *Entry) {
	if w.st == nil {
		return
	}
	w.sum.Write(line)
	w.sum.Write([]byte{'\n'})
	w.st.note(e, w.n, w.end)
	w.st.LastOff = w.end
}

// saveState writes the extended state once the head is written. Like a
// reader's, the write is not synced: a lost or stale state only costs the
// next reader the verification of the entries after it.
func (w *writer) saveState() {
	if w.st == nil || w.n == 0 {
		return
	}
	p, err := w.sum.MarshalBinary()
	if err != nil {
		return
	}
	w.st.Size, w.st.End, w.st.Last, w.st.Pack, w.st.Prefix = w.n, w.end, w.last, w.packEnd, p
	w.l.overwriteState(w.sf, w.session, w.st) // a cache: failure only costs speed
}

// readLineAt reads the complete line starting at off (without its
// newline), bounded by MaxEntryLine.
func readLineAt(f io.ReaderAt, off, end int64) ([]byte, error) {
	var out []byte
	buf := make([]byte, 4096)
	for pos := off; pos < end; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-pos)], pos)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return append(out, buf[:i]...), nil
		}
		out = append(out, buf[:n]...)
		pos += int64(n)
		if len(out) > MaxEntryLine {
			return nil, errLineTooLong
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	return nil, errors.New("line not terminated")
}
