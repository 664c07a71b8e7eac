package gate

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realdata is the shared corpus of real Claude Code data, when present.
func realdata(t testing.TB) string {
	t.Helper()
	d := os.Getenv("REALDATA")
	if d == "" {
		d = filepath.Join("..", "..", "shared", "realdata")
	}
	if _, err := os.Stat(filepath.Join(d, "transcripts")); err != nil {
		t.Skipf("no realdata corpus at %s", d)
	}
	return d
}

// backLines collects every line the back scanner yields, restored to
// file order.
func backLines(t testing.TB, data []byte, chunk, maxLine int) (lines []string, skipped int) {
	s := newBackScanner(bytes.NewReader(data), int64(len(data)), maxLine)
	s.chunk = chunk
	for {
		ln, err := s.prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ln == nil {
			skipped++
			lines = append(lines, "<skipped>")
			continue
		}
		lines = append(lines, string(ln))
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return lines, skipped
}

func forwardLines(data []byte, maxLine int) []string {
	if len(data) == 0 {
		return nil
	}
	parts := strings.Split(string(data), "\n")
	for i, p := range parts {
		if len(p) > maxLine {
			parts[i] = "<skipped>"
		}
	}
	return parts
}

func TestBackScanner(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		maxLine int
	}{
		{"empty", "", 100},
		{"one line no newline", "abc", 100},
		{"one line newline", "abc\n", 100},
		{"blank lines", "\n\n\n", 100},
		{"several", "a\nbb\nccc\n", 100},
		{"oversized middle", "a\n" + strings.Repeat("x", 50) + "\nb\n", 10},
		{"oversized first", strings.Repeat("x", 50) + "\nb", 10},
		{"oversized last", "a\n" + strings.Repeat("x", 50), 10},
		{"exactly max", "a\n" + strings.Repeat("x", 10) + "\nb", 10},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 2, 3, 7, 64} {
			got, _ := backLines(t, []byte(tt.data), chunk, tt.maxLine)
			want := forwardLines([]byte(tt.data), tt.maxLine)
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s chunk %d: got %q, want %q", tt.name, chunk, got, want)
			}
		}
	}
}

func TestBackScannerRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		var b bytes.Buffer
		for n := rng.Intn(20); n > 0; n-- {
			b.WriteString(strings.Repeat("y", rng.Intn(40)))
			b.WriteByte('\n')
		}
		if rng.Intn(2) == 0 {
			b.WriteString("tail")
		}
		maxLine := 1 + rng.Intn(30)
		chunk := 1 + rng.Intn(20)
		got, _ := backLines(t, b.Bytes(), chunk, maxLine)
		want := forwardLines(b.Bytes(), maxLine)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("data %q chunk %d max %d: got %q, want %q", b.String(), chunk, maxLine, got, want)
		}
	}
}

func FuzzBackScanner(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), uint8(3), uint8(2))
	f.Add([]byte("{\"type\":\"assistant\"}\n"), uint8(1), uint8(50))
	f.Fuzz(func(t *testing.T, data []byte, chunk, maxLine uint8) {
		c, m := int(chunk)%64+1, int(maxLine)+1
		got, _ := backLines(t, data, c, m)
		want := forwardLines(data, m)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("chunk %d max %d: got %q, want %q", c, m, got, want)
		}
	})
}

// forwardLast is a plain reference implementation of lastAssistant: it
// parses every line from the start.
func forwardLast(data []byte, chain Chain) (id, text string) {
	type msg struct {
		id    string
		texts []string
	}
	var last *msg
	var cur *msg
	for _, ln := range strings.Split(string(data), "\n") {
		l, ok := parseLine([]byte(ln))
		if !ok || !l.assistant || l.sidechain != (chain == Sidechain) {
			continue
		}
		if cur == nil || cur.id != l.id || l.id == "" {
			cur = &msg{id: l.id}
		}
		cur.texts = append(cur.texts, l.texts...)
		if len(l.texts) > 0 {
			last = cur
		}
	}
	if last == nil {
		return "", ""
	}
	return last.id, strings.Join(last.texts, "\n\n")
}

func TestLastAssistantRealTranscripts(t *testing.T) {
	d := realdata(t)
	var files []string
	for _, sub := range []string{"transcripts", "fixtures", "transcript_lines"} {
		m, _ := filepath.Glob(filepath.Join(d, sub, "*.jsonl"))
		files = append(files, m...)
	}
	if len(files) < 90 {
		t.Fatalf("only %d transcripts found", len(files))
	}
	withText := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		chain := MainChain
		if strings.Contains(filepath.Base(f), "agent-") || strings.Contains(filepath.Base(f), "sidechain_agent") {
			chain = Sidechain
		}
		m, err := ReadLastAssistant(f, chain)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if m.Size != int64(len(data)) {
			t.Errorf("%s: size %d, want %d", filepath.Base(f), m.Size, len(data))
		}
		wid, wtext := forwardLast(data, chain)
		if m.ID != wid || m.Text != wtext {
			t.Errorf("%s: got id %q text %.80q, want id %q text %.80q", filepath.Base(f), m.ID, m.Text, wid, wtext)
		}
		if m.Text != "" && filepath.Base(filepath.Dir(f)) == "transcripts" {
			withText++
		}
	}
	t.Logf("%d transcript files parsed, %d in transcripts/ with a final assistant text", len(files), withText)
	if withText < 88 { // 91 of the 94 hold assistant text (FORMAT.md)
		t.Errorf("only %d transcripts yielded text", withText)
	}
}

func TestLastAssistantShapes(t *testing.T) {
	a := func(id, side, text string) string {
		return `{"type":"assistant","isSidechain":` + side + `,"message":{"id":"` + id + `","content":[{"type":"text","text":"` + text + `"}]}}`
	}
	tool := func(id string) string {
		return `{"type":"assistant","isSidechain":false,"message":{"id":"` + id + `","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`
	}
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"split over lines", []string{a("m1", "false", "old"), a("m2", "false", "part one"), tool("m2"), a("m2", "false", "part two")}, "part one\n\npart two"},
		{"sidechain after", []string{a("m1", "false", "main"), a("s1", "true", "side")}, "main"},
		{"meta skipped", []string{a("m1", "false", "main"), `{"type":"assistant","isMeta":true,"message":{"id":"x","content":[{"type":"text","text":"meta"}]}}`}, "main"},
		{"tool use last", []string{a("m1", "false", "said"), tool("m2")}, "said"},
		{"trailing junk", []string{a("m1", "false", "said"), `{"type":"system","content":"x"}`, `not json`, `{"type":"file-history-snapshot"}`}, "said"},
		{"string content", []string{`{"type":"assistant","message":{"id":"m","content":"plain"}}`}, "plain"},
		{"thinking only", []string{`{"type":"assistant","message":{"id":"m","content":[{"type":"thinking","thinking":"hmm"}]}}`}, ""},
		{"no id lines", []string{`{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]}}`, `{"type":"assistant","message":{"content":[{"type":"text","text":"b"}]}}`}, "b"},
		{"empty", nil, ""},
	}
	for _, tt := range tests {
		data := []byte(strings.Join(tt.lines, "\n") + "\n")
		m, err := lastAssistant(bytes.NewReader(data), int64(len(data)), MainChain, MaxScanBytes)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if m.Text != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, m.Text, tt.want)
		}
	}
}

func TestLastAssistantScanLimit(t *testing.T) {
	data := []byte(strings.Repeat(`{"type":"user"}`+"\n", 1000))
	_, err := lastAssistant(bytes.NewReader(data), int64(len(data)), MainChain, 100)
	if err != ErrScanLimit {
		t.Fatalf("err = %v, want ErrScanLimit", err)
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","isSidechain":false,"message":{"id":"m","content":[{"type":"text","text":"done"}]}}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":"x"}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result"}]}}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"\udc90"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, ok := parseLine(b)
		if !ok && (l.assistant || len(l.texts) > 0) {
			t.Fatal("rejected line carries data")
		}
		if !l.assistant && len(l.texts) > 0 {
			t.Fatal("texts from a non-assistant line")
		}
		for _, s := range l.texts {
			if strings.TrimSpace(s) == "" {
				t.Fatal("blank text kept")
			}
		}
	})
}

// TestLastAssistantTestdata reads the real transcripts copied into
// testdata/gate, so the parser is tested even without the shared corpus.
func TestLastAssistantTestdata(t *testing.T) {
	tests := []struct {
		file   string
		chain  Chain
		prefix string
	}{
		{"claude-code-log__326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl", MainChain, "Perfect! Both type checking issues have been resolved:"},
		{"claude-code-log__agent-a36efb2a1231c41e2.jsonl", Sidechain, "Round 2 done."},
	}
	for _, tt := range tests {
		m, err := ReadLastAssistant(filepath.Join("..", "testdata", "gate", "transcripts", tt.file), tt.chain)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.Text, tt.prefix) {
			t.Errorf("%s: text %.80q, want prefix %q", tt.file, m.Text, tt.prefix)
		}
	}
}
