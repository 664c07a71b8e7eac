package trust

// pathEscape percent-encodes s as url.PathEscape does: every byte but
// A-Z a-z 0-9 - _ . ~ $ & + : = @ becomes %XX (upper-case hex). It is
// written out so that the hooks, which write and read the summary, need
// not link net/url and, through it, net/netip.
func pathEscape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if escapeByte(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if escapeByte(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// escapeByte reports whether a path segment must percent-encode c
// (RFC 3986 sections 2.2, 2.3 and 3.3, as net/url reads them).
func escapeByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return false
	}
	switch c {
	case '-', '_', '.', '~', '$', '&', '+', ':', '=', '@':
		return false
	}
	return true
}
