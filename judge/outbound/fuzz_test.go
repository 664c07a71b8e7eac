package outbound

import (
	"strings"
	"testing"
)

// FuzzScan: Scan never panics, reports sorted, non-overlapping spans inside
// the text, and the redacted text holds none of the personal data found.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"mail jane.roe@acme-corp.io", "+44 7911 123456", "4539 1488 0343 6467", "DE62370400440532013001",
		"536-22-8145", "lives at 742 Evergreen Terrace", "Y29udGFjdCBvbGdhLnBldHJvdmFAeWFuZGV4LnJ1IGFzYXA=",
		"ghp_R8uPz3LmQw7XvT2nKb9YcHs4JdFa6GeN1oVi", "password: \"M8HGSXrL!PI4lSb#\"", "", "@@@", "+1",
	} {
		f.Add(s)
	}
	pii := Options{Kinds: PIIKinds}
	f.Fuzz(func(t *testing.T, text string) {
		fs := Scan(text, pii)
		end := 0
		for _, x := range fs {
			if x.Start < end || x.End <= x.Start || x.End > len(text) {
				t.Fatalf("bad span %+v (previous end %d) in %q", x, end, text)
			}
			end = x.End
		}
		red := Redact(text, fs)
		for _, x := range fs {
			if m := text[x.Start:x.End]; len(m) >= 8 && strings.Contains(red, m) && !strings.Contains(Marker(x.Kind), m) {
				t.Fatalf("redacted text still holds %q: %q", m, red)
			}
		}
	})
}
