package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// decodeLine decodes a ledger line that a verified-prefix state vouches
// for, several times faster than encoding/json: the line is known to be
// the canonical encoding (FORMAT.md, "Entries"), so members come in a
// fixed order with no white space. Any surprise is an error, and the
// caller falls back to full verification. Strings with escapes go through
// encoding/json.
func decodeLine(line []byte) (*Entry, error) {
	e := new(Entry)
	p := lineParser{b: line}
	if !p.eat('{') {
		return nil, errNonCanonical
	}
	for first := true; ; first = false {
		if p.eat('}') {
			if p.i != len(p.b) {
				return nil, errNonCanonical
			}
			return e, nil
		}
		if !first && !p.eat(',') {
			return nil, errNonCanonical
		}
		key, ok := p.plainString()
		if !ok || !p.eat(':') {
			return nil, errNonCanonical
		}
		var err error
		switch key {
		case "v":
			var n uint64
			n, err = p.uint()
			e.V = int(n)
		case "seq":
			e.Seq, err = p.uint()
		case "artifacts":
			var n uint64
			n, err = p.uint()
			e.Artifacts = int64(n)
		case "body":
			start := p.i
			if err = p.skipValue(); err == nil {
				e.Body = append(json.RawMessage(nil), p.b[start:p.i]...)
			}
		default:
			var s string
			if s, err = p.string(); err != nil {
				break
			}
			switch key {
			case "session":
				e.Session = s
			case "time":
				e.Time = s
			case "kind":
				e.Kind = Kind(s)
			case "runtime":
				e.Runtime = s
			case "event":
				e.Event = s
			case "tool":
				e.Tool = s
			case "tool_use_id":
				e.ToolUseID = s
			case "agent_id":
				e.AgentID = s
			case "args":
				e.Args = s
			case "manifest":
				e.Manifest = s
			case "prev":
				e.Prev = s
			case "hash":
				e.Hash = s
			case "key_id":
				e.KeyID = s
			case "mac":
				e.MAC = s
			default:
				err = errNonCanonical
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

type lineParser struct {
	b []byte
	i int
}

func (p *lineParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// plainString reads a string without escapes (member names).
func (p *lineParser) plainString() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	j := bytes.IndexByte(p.b[p.i:], '"')
	if j < 0 || bytes.IndexByte(p.b[p.i:p.i+j], '\\') >= 0 {
		return "", false
	}
	s := string(p.b[p.i : p.i+j])
	p.i += j + 1
	return s, true
}

func (p *lineParser) string() (string, error) {
	start := p.i
	if s, ok := p.plainString(); ok {
		return s, nil
	}
	p.i = start
	if err := p.skipString(); err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
		return "", err
	}
	return s, nil
}

func (p *lineParser) skipString() error {
	if !p.eat('"') {
		return errNonCanonical
	}
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '\\':
			p.i += 2
		case '"':
			p.i++
			return nil
		default:
			p.i++
		}
	}
	return errNonCanonical
}

func (p *lineParser) uint() (uint64, error) {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return strconv.ParseUint(string(p.b[start:p.i]), 10, 64)
}

var errDepth = errors.New("body nested too deeply")

// skipValue skips one JSON value (the body), tracking strings and depth.
func (p *lineParser) skipValue() error {
	depth := 0
	for p.i < len(p.b) {
		switch c := p.b[p.i]; c {
		case '"':
			if err := p.skipString(); err != nil {
				return err
			}
			if depth == 0 {
				return nil
			}
			continue
		case '{', '[':
			depth++
			if depth > 10000 {
				return errDepth
			}
		case '}', ']':
			depth--
			if depth < 0 {
				return errNonCanonical
			}
			if depth == 0 {
				p.i++
				return nil
			}
		case ',', ':':
			if depth == 0 {
				return errNonCanonical
			}
		}
		p.i++
		if depth == 0 && (p.i >= len(p.b) || p.b[p.i] == ',' || p.b[p.i] == '}') {
			return nil // a scalar
		}
	}
	return errNonCanonical
}
