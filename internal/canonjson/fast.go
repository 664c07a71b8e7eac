package canonjson

import (
	"bytes"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// canonicalFast is Canonical without reflection for the JSON hooks
// carry (tool arguments): it parses raw itself and writes the canonical
// bytes directly. It handles objects without duplicate keys, arrays,
// numbers, literals and strings whose escapes are not surrogates and
// whose bytes are valid UTF-8; for anything else (invalid JSON included)
// ok is false and Canonical takes the encoding/json path, whose bytes
// these are (FuzzCanonicalFast).
func canonicalFast(raw []byte) (out []byte, ok bool) {
	p := fastParser{b: raw}
	p.ws()
	out, ok = p.value(make([]byte, 0, len(raw)), 0)
	if !ok {
		return nil, false
	}
	p.ws()
	return out, p.i == len(p.b)
}

// maxFastDepth bounds the nesting canonicalFast handles (encoding/json
// allows 10,000).
const maxFastDepth = 500

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) value(dst []byte, depth int) ([]byte, bool) {
	if p.i >= len(p.b) || depth > maxFastDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(dst, depth)
	case c == '[':
		return p.array(dst, depth)
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		return AppendString(dst, s), true
	case c == 't':
		return p.literal(dst, "true")
	case c == 'f':
		return p.literal(dst, "false")
	case c == 'n':
		return p.literal(dst, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(dst)
	}
	return nil, false
}

func (p *fastParser) literal(dst []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
		return nil, false
	}
	p.i += len(lit)
	return append(dst, lit...), true
}

// number copies a number as written, after checking JSON's grammar.
func (p *fastParser) number(dst []byte) ([]byte, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return append(dst, p.b[start:p.i]...), true
}

// str decodes a string at p.i as encoding/json does, within the subset
// canonicalFast handles.
func (p *fastParser) str() (string, bool) {
	p.i++ // the quote
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			p.i += size
		}
	}
	return "", false
}

// escapedStr continues str from the first backslash.
func (p *fastParser) escapedStr(start int) (string, bool) {
	var sb strings.Builder
	sb.Write(p.b[start:p.i])
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return sb.String(), true
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", false
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				if p.i+4 > len(p.b) {
					return "", false
				}
				var r rune
				for _, h := range p.b[p.i : p.i+4] {
					switch {
					case h >= '0' && h <= '9':
						r = r<<4 | rune(h-'0')
					case h >= 'a' && h <= 'f':
						r = r<<4 | rune(h-'a'+10)
					case h >= 'A' && h <= 'F':
						r = r<<4 | rune(h-'A'+10)
					default:
						return "", false
					}
				}
				if r >= 0xD800 && r < 0xE000 { // surrogates: encoding/json's rules
					return "", false
				}
				p.i += 4
				sb.WriteRune(r)
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			sb.Write(p.b[p.i : p.i+size])
			p.i += size
		}
	}
	return "", false
}

func (p *fastParser) array(dst []byte, depth int) ([]byte, bool) {
	p.i++
	dst = append(dst, '[')
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return append(dst, ']'), true
	}
	for {
		var ok bool
		p.ws()
		if dst, ok = p.value(dst, depth+1); !ok {
			return nil, false
		}
		p.ws()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			dst = append(dst, ',')
		case ']':
			p.i++
			return append(dst, ']'), true
		default:
			return nil, false
		}
	}
}

type fastMember struct {
	key        string
	start, end int // the value's canonical bytes in the scratch buffer
}

// sortMembers sorts by key, bytewise: an insertion sort for the few
// members of a tool's arguments, sort.Slice past that (no generic sort
// instantiated for one struct type: every hook binary links this).
func sortMembers(m []fastMember) {
	if len(m) > 24 {
		sort.Slice(m, func(i, j int) bool { return m[i].key < m[j].key })
		return
	}
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && m[j].key < m[j-1].key; j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
}

func (p *fastParser) object(dst []byte, depth int) ([]byte, bool) {
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return append(dst, '{', '}'), true
	}
	var members []fastMember
	var scratch []byte
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.ws()
		start := len(scratch)
		if scratch, ok = p.value(scratch, depth+1); !ok {
			return nil, false
		}
		members = append(members, fastMember{key, start, len(scratch)})
		p.ws()
		if p.i >= len(p.b) {
			return nil, false
		}
		if p.b[p.i] == '}' {
			p.i++
			break
		}
		if p.b[p.i] != ',' {
			return nil, false
		}
		p.i++
	}
	sortMembers(members)
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			if m.key == members[i-1].key {
				return nil, false // a duplicate key: the decoder keeps the last
			}
			dst = append(dst, ',')
		}
		dst = AppendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, scratch[m.start:m.end]...)
	}
	return append(dst, '}'), true
}

// AppendString appends s as a JSON string the way encoding/json encodes
// it with HTML escaping off: '"' and '\\' escaped, control characters as
// \b \f \n \r \t or \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029, everything else as is.
func AppendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// marshalFast is Marshal without reflection for the maps hooks build
// (entry bodies): map[string]any whose values are strings, booleans,
// integers, nil, []string, []any and such maps again. For any other
// value ok is false and Marshal takes the encoding/json path, whose
// bytes these are (TestMarshalFastMatchesEncodingJSON).
func marshalFast(v map[string]any) ([]byte, bool) {
	return appendFastValue(make([]byte, 0, 256), v, 0)
}

func appendFastValue(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return AppendString(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(dst, v, 10), true
	case []string:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, s)
		}
		return append(dst, ']'), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendFastValue(dst, x, depth+1); !ok {
				return nil, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(AppendString(dst, k), ':')
			var ok bool
			if dst, ok = appendFastValue(dst, v[k], depth+1); !ok {
				return nil, false
			}
		}
		return append(dst, '}'), true
	}
	return nil, false
}
