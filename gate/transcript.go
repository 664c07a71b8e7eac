package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/docket/docket/internal/regular"
)

// Bounds of the transcript reader. A transcript is read from its end in
// chunks of ChunkSize; a line longer than MaxLineSize is skipped without
// being held in memory (an assistant text line that long is not a final
// message anyone reads); the reader gives up after MaxScanBytes.
const (
	ChunkSize    = 64 << 10
	MaxLineSize  = 8 << 20
	MaxScanBytes = 1 << 30
)

// TranscriptMessage is the final assistant message found in a transcript.
type TranscriptMessage struct {
	// ID is the message.id shared by the message's lines.
	ID string
	// Text is the message's text blocks joined in order by blank lines;
	// empty when no main-chain assistant text was found.
	Text string
	// Size is the transcript's size in bytes; Scanned how much of it was
	// read; Lines how many lines were looked at; Skipped how many were
	// over MaxLineSize.
	Size    int64
	Scanned int64
	Lines   int
	Skipped int
}

// ErrScanLimit means MaxScanBytes were read without finding the message.
var ErrScanLimit = errors.New("transcript scan limit reached")

// Chain selects which assistant lines of a transcript count.
type Chain int

const (
	// MainChain: lines with isSidechain false, as in a session transcript
	// read for Stop.
	MainChain Chain = iota
	// Sidechain: lines with isSidechain true, as in a subagent transcript
	// (agent_transcript_path, every line a sidechain line) or, before
	// Claude Code 2.0, a subagent's turns inline in the session file.
	Sidechain
)

// ReadLastAssistant finds the last assistant message with text on the
// given chain of the Claude Code transcript at path: the last line of
// type "assistant" on that chain, not meta, with a text block, plus every
// earlier line sharing its message.id, text blocks joined in file order.
// The file is read backwards in bounded chunks and never whole. A
// transcript with no such message yields an empty Text and no error.
func ReadLastAssistant(path string, chain Chain) (*TranscriptMessage, error) {
	f, size, err := openTranscript(regular.Open, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return lastAssistant(f, size, chain, MaxScanBytes)
}

// lastAssistant is ReadLastAssistant over any ReaderAt of known size.
func lastAssistant(r io.ReaderAt, size int64, chain Chain, maxScan int64) (*TranscriptMessage, error) {
	m := &TranscriptMessage{Size: size}
	var texts []string // in reverse file order
	found := false
	sc := newBackScanner(r, size, MaxLineSize)
	for {
		if sc.scanned > maxScan {
			m.Scanned = sc.scanned
			return m, ErrScanLimit
		}
		line, err := sc.prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read transcript: %w", err)
		}
		if line == nil { // oversized, skipped
			m.Skipped++
			continue
		}
		m.Lines++
		l, ok := parseLine(line)
		if !ok || !l.assistant || l.sidechain != (chain == Sidechain) {
			continue
		}
		if !found {
			if len(l.texts) == 0 {
				continue
			}
			found = true
			m.ID = l.id
		} else if l.id != m.ID || l.id == "" {
			break
		}
		for i := len(l.texts) - 1; i >= 0; i-- {
			texts = append(texts, l.texts[i])
		}
		if m.ID == "" { // no id to group by: the one line is the message
			break
		}
	}
	m.Scanned = sc.scanned
	for i, j := 0, len(texts)-1; i < j; i, j = i+1, j-1 {
		texts[i], texts[j] = texts[j], texts[i]
	}
	m.Text = strings.Join(texts, "\n\n")
	return m, nil
}

// MaxTurnBytes bounds how far before the final message ReadTurn reads
// for the turn's earlier messages.
const MaxTurnBytes = 32 << 20

// Turn is what the gate reads of a transcript at a stop: the final
// assistant message and every assistant message of the same turn.
type Turn struct {
	// TranscriptMessage is the final message, as ReadLastAssistant
	// finds it.
	TranscriptMessage
	// Messages are the text blocks of the turn's assistant messages, in
	// file order, after the last user prompt on the chain; the final
	// message is the last of them.
	Messages [][]string
	// Truncated: MaxTurnBytes were read before the start of the turn.
	Truncated bool
}

// Texts returns each message's text blocks joined by blank lines.
func (t *Turn) Texts() []string {
	out := make([]string, len(t.Messages))
	for i, m := range t.Messages {
		out[i] = strings.Join(m, "\n\n")
	}
	return out
}

// ReadTurn reads the turn that ends the transcript at path on the given
// chain: the final assistant message (as ReadLastAssistant) and the
// assistant messages before it back to the last user prompt. Claude Code
// transcripts and Codex rollouts (event_msg agent_message, user_message)
// are understood.
func ReadTurn(path string, chain Chain) (*Turn, error) {
	return readTurnFile(regular.Open, path, chain, MaxScanBytes)
}

// readTurnFile is ReadTurn opening the file with open and giving up
// (ErrScanLimit) when no assistant text is found in the last maxScan
// bytes.
func readTurnFile(open func(string) (*os.File, error), path string, chain Chain, maxScan int64) (*Turn, error) {
	f, size, err := openTranscript(open, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readTurn(f, size, chain, maxScan, MaxTurnBytes)
}

// openTranscript opens a transcript with open, which must yield a
// regular file, and returns its size.
func openTranscript(open func(string) (*os.File, error), path string) (*os.File, int64, error) {
	f, err := open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open transcript: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("stat transcript: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("open transcript: %s is not a regular file", path)
	}
	return f, st.Size(), nil
}

func readTurn(r io.ReaderAt, size int64, chain Chain, maxScan, maxTurn int64) (*Turn, error) {
	t := &Turn{TranscriptMessage: TranscriptMessage{Size: size}}
	var (
		msgs    [][]string // the turn's messages, newest first
		cur     []string   // blocks of the open message, newest first
		curID   string
		open    bool
		found   bool // the final message is complete
		turnOff int64
		// promptInside: a prompt was met while the final message was
		// open; the turn is that message alone.
		promptInside bool
	)
	closeMsg := func() {
		if !open {
			return
		}
		open = false
		for i, j := 0, len(cur)-1; i < j; i, j = i+1, j-1 {
			cur[i], cur[j] = cur[j], cur[i]
		}
		if !found {
			found = true
			t.ID, t.Text = curID, strings.Join(cur, "\n\n")
		}
		msgs = append(msgs, cur)
		cur = nil
	}
	sc := newBackScanner(r, size, MaxLineSize)
	for {
		if !found && sc.scanned > maxScan {
			t.Scanned = sc.scanned
			return t, ErrScanLimit
		}
		if found && sc.scanned-turnOff > maxTurn {
			t.Truncated = true
			break
		}
		ln, err := sc.prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read transcript: %w", err)
		}
		if ln == nil {
			t.Skipped++
			continue
		}
		t.Lines++
		if !mayMatter(ln) {
			continue // a tool result or other line, not even parsed
		}
		l, ok := parseLine(ln)
		if !ok || l.sidechain != (chain == Sidechain) {
			continue
		}
		if l.prompt {
			if found {
				break
			}
			// A prompt queued after the final message, or inside it: the
			// final message is read whole (as ReadLastAssistant does) and
			// the turn ends with it.
			promptInside = promptInside || open
			continue
		}
		if !l.assistant {
			continue
		}
		if open && (l.id != curID || l.id == "") {
			wasFound := found
			closeMsg()
			if !wasFound {
				turnOff = sc.scanned
				if promptInside {
					break
				}
			}
		}
		if len(l.texts) == 0 {
			continue
		}
		if !open {
			open, curID = true, l.id
		}
		for i := len(l.texts) - 1; i >= 0; i-- {
			cur = append(cur, l.texts[i])
		}
	}
	closeMsg()
	t.Scanned = sc.scanned
	for i := len(msgs) - 1; i >= 0; i-- {
		t.Messages = append(t.Messages, msgs[i])
	}
	return t, nil
}

// TextDigest is the marker of a text: its hex SHA-256.
func TextDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// matchesMarker reports whether a message (its text blocks in order) is
// the marked text: the blocks joined as the gate or a runtime may join
// them, or any one block.
func matchesMarker(blocks []string, marker string) bool {
	if len(blocks) == 1 {
		return TextDigest(blocks[0]) == marker
	}
	for _, sep := range []string{"\n\n", "\n", ""} {
		if TextDigest(strings.Join(blocks, sep)) == marker {
			return true
		}
	}
	for _, b := range blocks {
		if TextDigest(b) == marker {
			return true
		}
	}
	return false
}

var (
	assistantWord  = []byte(`"assistant"`)
	userWord       = []byte(`"user"`)
	toolResultWord = []byte(`"tool_result"`)
	eventMsgWord   = []byte(`"event_msg"`)
)

// line is what the gate needs from one transcript line.
type line struct {
	assistant bool // type assistant, not meta
	// prompt: a user turn starts here (a typed prompt, not a tool result
	// or meta line); a Codex user_message or task_started event.
	prompt    bool
	sidechain bool
	id        string
	texts     []string
}

// parseLine reads one transcript line. ok is false for a line that is not
// a JSON object; unknown fields and types are ignored.
func parseLine(b []byte) (l line, ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return line{}, false
	}
	// Most lines of a long transcript are tool results: a line that does
	// not even contain the words cannot be an assistant line or a prompt,
	// and is skipped without parsing (a valid JSON object either way is
	// "ok"). In JSON text, "tool_result" with its quotes can only be
	// structure, never a prompt's words.
	if !mayMatter(b) {
		return line{}, gjson.ValidBytes(b)
	}
	if !gjson.ValidBytes(b) {
		return line{}, false
	}
	switch typ := gjson.GetBytes(b, "type").String(); {
	case typ == "event_msg": // Codex rollout
		p := gjson.GetBytes(b, "payload")
		switch p.Get("type").String() {
		case "agent_message":
			l.assistant = true
			if s := p.Get("message").String(); strings.TrimSpace(s) != "" {
				l.texts = []string{s}
			}
		case "user_message", "task_started":
			l.prompt = true
		}
		return l, true
	case typ == "user":
		l.prompt = isPrompt(b)
		l.sidechain = gjson.GetBytes(b, "isSidechain").Bool()
		return l, true
	case typ != "assistant" || gjson.GetBytes(b, "isMeta").Bool():
		return line{}, true
	}
	l.assistant = true
	l.sidechain = gjson.GetBytes(b, "isSidechain").Bool()
	l.id = gjson.GetBytes(b, "message.id").String()
	content := gjson.GetBytes(b, "message.content")
	switch {
	case content.Type == gjson.String:
		if s := content.String(); strings.TrimSpace(s) != "" {
			l.texts = append(l.texts, s)
		}
	case content.IsArray():
		content.ForEach(func(_, blk gjson.Result) bool {
			if blk.Get("type").String() == "text" {
				if s := blk.Get("text").String(); strings.TrimSpace(s) != "" {
					l.texts = append(l.texts, s)
				}
			}
			return true
		})
	}
	return l, true
}

// mayMatter reports whether a transcript line can be an assistant line
// or a prompt: it names "assistant" or "event_msg", or "user" without a
// "tool_result".
func mayMatter(b []byte) bool {
	return bytes.Contains(b, assistantWord) || bytes.Contains(b, eventMsgWord) ||
		bytes.Contains(b, userWord) && !bytes.Contains(b, toolResultWord)
}

// isPrompt reports whether a user line starts a turn: not meta, and its
// content a non-blank string or blocks with text and no tool result.
func isPrompt(b []byte) bool {
	if gjson.GetBytes(b, "isMeta").Bool() {
		return false
	}
	content := gjson.GetBytes(b, "message.content")
	if content.Type == gjson.String {
		return strings.TrimSpace(content.String()) != ""
	}
	text := false
	ok := true
	content.ForEach(func(_, blk gjson.Result) bool {
		switch blk.Get("type").String() {
		case "tool_result":
			ok = false
			return false
		case "text":
			text = text || strings.TrimSpace(blk.Get("text").String()) != ""
		}
		return true
	})
	return ok && text
}

// backScanner yields a file's lines from last to first, reading chunks
// from the end. Memory is bounded by about twice maxLine plus a chunk.
type backScanner struct {
	r       io.ReaderAt
	off     int64  // file offset of the first byte of pending
	store   []byte // pending bytes live at store[start:]
	start   int
	maxLine int
	chunk   int
	scanned int64
	drop    bool // inside a line over maxLine
	done    bool
	noNL    int // length of the suffix of pending known to hold no newline
}

func newBackScanner(r io.ReaderAt, size int64, maxLine int) *backScanner {
	return &backScanner{r: r, off: size, maxLine: maxLine, chunk: ChunkSize}
}

func (s *backScanner) pending() []byte { return s.store[s.start:] }

// prev returns the previous line without its newline (possibly empty);
// nil and no error for a line longer than maxLine; io.EOF once the first
// line has been returned. The slice is valid until the next call. Each
// byte of the file is read once and searched for newlines once.
func (s *backScanner) prev() ([]byte, error) {
	for {
		p := s.pending()
		// The last noNL bytes of p are known to hold no newline.
		if i := bytes.LastIndexByte(p[:len(p)-s.noNL], '\n'); i >= 0 {
			ln := p[i+1:]
			s.store = s.store[:s.start+i]
			s.noNL = 0
			if s.drop || len(ln) > s.maxLine {
				s.drop = false
				return nil, nil
			}
			return ln, nil
		}
		if s.off == 0 {
			if s.done || s.scanned == 0 {
				return nil, io.EOF
			}
			s.done = true
			s.store = s.store[:s.start]
			s.noNL = 0
			if s.drop || len(p) > s.maxLine {
				s.drop = false
				return nil, nil
			}
			if p == nil {
				p = []byte{}
			}
			return p, nil
		}
		s.noNL = len(p)
		n := int64(s.chunk)
		if s.off < n {
			n = s.off
		}
		if s.start < int(n) {
			s.grow(int(n))
		}
		s.start -= int(n)
		s.off -= n
		if _, err := s.r.ReadAt(s.store[s.start:s.start+int(n)], s.off); err != nil && err != io.EOF {
			return nil, err
		}
		s.scanned += n
		p = s.pending()
		// Only the new chunk can hold a newline; the current line is
		// everything after its last one.
		j := bytes.LastIndexByte(p[:n], '\n')
		if s.drop || len(p)-(j+1) > s.maxLine {
			// The current line is too long: forget its bytes, keep only
			// what precedes it, and report it as skipped when it ends.
			s.drop = true
			s.store = s.store[:s.start+j+1]
			s.noNL = 0
		}
	}
}

// grow makes room for at least n bytes before the pending ones, moving
// them to the end of the store or into a larger one.
func (s *backScanner) grow(n int) {
	p := s.pending()
	need := len(p) + n
	if cap(s.store) >= need {
		full := s.store[:cap(s.store)]
		start := cap(s.store) - len(p)
		copy(full[start:], p)
		s.store, s.start = full, start
		return
	}
	c := 2 * need
	if c < 2*s.chunk {
		c = 2 * s.chunk
	}
	ns := make([]byte, c)
	start := c - len(p)
	copy(ns[start:], p)
	s.store, s.start = ns, start
}
