package outbound

import (
	"strings"
	"testing"
)

// BenchmarkScanWorstCase scans MaxScan bytes of text built to keep the
// rules busy (digits and separators, at signs, capitals, base64).
func BenchmarkScanWorstCase(b *testing.B) {
	for _, unit := range []string{"1 2-3 ", "a@b.", "AB12 ", "12 Main St ", "+1 (", "Qm9i"} {
		text := strings.Repeat(unit, MaxScan/len(unit))
		b.Run(strings.TrimSpace(unit), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Scan(text, Options{Kinds: PIIKinds})
			}
		})
	}
}
