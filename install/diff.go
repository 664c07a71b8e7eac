package install

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines surround each hunk.
const diffContext = 3

// maxDiffCells bounds the LCS table; larger inputs are shown as a whole
// replacement rather than diffed line by line.
const maxDiffCells = 4 << 20

// UnifiedDiff renders the line difference of a and b in unified format,
// or "" when they are equal.
func UnifiedDiff(fromName, toName, a, b string) string { return unifiedDiff(fromName, toName, a, b) }

// unifiedDiff renders the line difference of a and b in unified format,
// or "" when they are equal.
func unifiedDiff(fromName, toName, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	// Hunks: runs of changes whose gaps of equal lines are at most
	// 2*diffContext, each padded with diffContext equal lines.
	for i := 0; i < len(ops); {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-diffContext, 0)
		end := i // one past the last change of the hunk
		for k := i; k < len(ops); k++ {
			if ops[k].kind != ' ' {
				end = k + 1
			} else if k-end >= 2*diffContext {
				break
			}
		}
		stop := min(end+diffContext, len(ops))
		aStart, bStart := 1, 1
		for _, o := range ops[:start] {
			if o.kind != '+' {
				aStart++
			}
			if o.kind != '-' {
				bStart++
			}
		}
		aN, bN := 0, 0
		for _, o := range ops[start:stop] {
			if o.kind != '+' {
				aN++
			}
			if o.kind != '-' {
				bN++
			}
		}
		if aN == 0 {
			aStart--
		}
		if bN == 0 {
			bStart--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart, aN, bStart, bN)
		for _, o := range ops[start:stop] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		i = stop
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

type diffOp struct {
	kind byte
	text string
}

// diffLines is a longest-common-subsequence line diff.
func diffLines(a, b []string) []diffOp {
	if len(a)*len(b) > maxDiffCells {
		var ops []diffOp
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	// lcs[i][j] = LCS length of a[i:], b[j:]
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		ops = append(ops, diffOp{'-', a[i]})
	}
	for ; j < len(b); j++ {
		ops = append(ops, diffOp{'+', b[j]})
	}
	return ops
}
