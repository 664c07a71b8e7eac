package worktree

import (
	"bufio"
	"bytes"
	"strings"
	"unicode/utf8"
)

// pattern is one line of a .gitignore (or info/exclude) file.
type pattern struct {
	base     string // directory of the file it came from, "" for the root; slash-separated
	glob     string
	negate   bool
	dirOnly  bool
	anchored bool // contains a slash: matched against the path from base
}

// parseIgnore reads gitignore lines. base is the directory (relative to
// the tree root, slash-separated, "" for the root) the patterns apply to.
func parseIgnore(data []byte, base string) []pattern {
	var out []pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		line = trimTrailingSpace(line)
		if line == "" {
			continue
		}
		p := pattern{base: base}
		if line[0] == '!' {
			p.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			p.anchored = true
			line = strings.TrimPrefix(line, "/")
		}
		if !utf8.ValidString(line) || line == "" {
			continue
		}
		p.glob = line
		out = append(out, p)
	}
	return out
}

// trimTrailingSpace drops trailing spaces unless escaped with a backslash.
func trimTrailingSpace(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		if len(s) >= 2 && s[len(s)-2] == '\\' {
			return s[:len(s)-2] + " "
		}
		s = s[:len(s)-1]
	}
	return s
}

// ignored reports whether rel (slash-separated, relative to the tree root)
// is excluded by patterns, in precedence order (later wins).
func ignored(patterns []pattern, rel string, isDir bool) bool {
	for i := len(patterns) - 1; i >= 0; i-- {
		p := patterns[i]
		if p.dirOnly && !isDir {
			continue
		}
		sub := rel
		if p.base != "" {
			if !strings.HasPrefix(rel, p.base+"/") {
				continue
			}
			sub = rel[len(p.base)+1:]
		}
		var ok bool
		if p.anchored {
			ok = wildmatch(p.glob, sub)
		} else {
			name := sub
			if i := strings.LastIndexByte(sub, '/'); i >= 0 {
				name = sub[i+1:]
			}
			ok = wildmatch(p.glob, name)
		}
		if ok {
			return !p.negate
		}
	}
	return false
}

// maxMatchSteps bounds the backtracking of one match: a pathological
// pattern then fails to match (the file stays in the digest) instead of
// stalling the gate.
const maxMatchSteps = 100000

// wildmatch matches a gitignore glob against a slash-separated path:
// "*" and "?" never match "/", "**" as a whole segment matches any number
// of directories, "[...]" is a class, "\\" escapes.
func wildmatch(p, s string) bool {
	budget := maxMatchSteps
	return match(p, s, true, &budget)
}

// match matches p against s; segStart says p begins a path segment (the
// start of the pattern, or just after a "/"), where "**" is special.
func match(p, s string, segStart bool, budget *int) bool {
	for len(p) > 0 {
		*budget--
		if *budget < 0 {
			return false
		}
		switch p[0] {
		case '*':
			if segStart && strings.HasPrefix(p, "**") && (len(p) == 2 || p[2] == '/') {
				if len(p) == 2 {
					return true // "x/**" matches everything below x
				}
				rest := p[3:]
				for i := 0; ; {
					if match(rest, s[i:], true, budget) {
						return true
					}
					j := strings.IndexByte(s[i:], '/')
					if j < 0 {
						return false
					}
					i += j + 1
				}
			}
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			if p == "" {
				return !strings.Contains(s, "/")
			}
			for i := 0; i <= len(s); i++ {
				if match(p, s[i:], false, budget) {
					return true
				}
				if i < len(s) && s[i] == '/' {
					return false
				}
			}
			return false
		case '?':
			if s == "" || s[0] == '/' {
				return false
			}
			_, n := utf8.DecodeRuneInString(s)
			p, s = p[1:], s[n:]
		case '[':
			if s == "" || s[0] == '/' {
				return false
			}
			r, n := utf8.DecodeRuneInString(s)
			ok, rest, valid := matchClass(p[1:], r)
			switch {
			case !valid: // no closing bracket: a literal "["
				if s[0] != '[' {
					return false
				}
				p, s = p[1:], s[1:]
			case !ok:
				return false
			default:
				p, s = rest, s[n:]
			}
		default:
			c := p[0]
			if c == '\\' && len(p) >= 2 {
				p = p[1:]
				c = p[0]
			}
			if s == "" || s[0] != c {
				return false
			}
			p, s = p[1:], s[1:]
			segStart = c == '/'
			continue
		}
		segStart = false
	}
	return s == ""
}

// matchClass matches r against the class starting after "[". It returns
// the pattern after "]" and valid=false when the class never closes.
func matchClass(p string, r rune) (ok bool, rest string, valid bool) {
	negate := false
	if len(p) > 0 && (p[0] == '!' || p[0] == '^') {
		negate, p = true, p[1:]
	}
	first := true
	for len(p) > 0 {
		if p[0] == ']' && !first {
			return ok != negate, p[1:], true
		}
		first = false
		lo, n := classChar(p)
		if n == 0 {
			return false, "", false
		}
		p = p[n:]
		hi := lo
		if len(p) >= 2 && p[0] == '-' && p[1] != ']' {
			h, m := classChar(p[1:])
			if m == 0 {
				return false, "", false
			}
			hi, p = h, p[1+m:]
		}
		if lo <= r && r <= hi {
			ok = true
		}
	}
	return false, "", false
}

func classChar(p string) (rune, int) {
	if p[0] == '\\' && len(p) >= 2 {
		r, n := utf8.DecodeRuneInString(p[1:])
		return r, n + 1
	}
	r, n := utf8.DecodeRuneInString(p)
	return r, n
}
