package ledger

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodeEntryReference is the entry encoding as FORMAT.md states it:
// encoding/json with HTML escaping off. encodeEntry must match it byte
// for byte.
func encodeEntryReference(e *Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func sampleEntry() Entry {
	return Entry{
		V: 1, Seq: 7, Session: "s-1", Time: "2026-01-02T03:04:05.123456789Z", Kind: KindToolCall,
		Runtime: "claude", Event: "PostToolUse", Tool: "Bash", ToolUseID: "toolu_1", AgentID: "a1",
		Args: "sha256:" + zeroHash, Manifest: "sha256:" + zeroHash, Artifacts: 1234,
		Body: json.RawMessage(`{"cwd":"/w","failed":false}`),
		Prev: zeroHash, Hash: zeroHash, KeyID: "k1", MAC: zeroHash,
	}
}

func TestEncodeEntryMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		edit func(e *Entry)
	}{
		{"full", func(e *Entry) {}},
		{"minimal", func(e *Entry) {
			*e = Entry{V: 1, Kind: KindSeal}
		}},
		{"zero", func(e *Entry) { *e = Entry{} }},
		{"negative artifacts", func(e *Entry) { e.Artifacts = -5 }},
		{"html and quotes", func(e *Entry) { e.Tool = `<a href="x">&amp;</a>\` }},
		{"control characters", func(e *Entry) { e.Runtime = "a\x00b\x01\b\f\n\r\t\x1f\x7f" }},
		{"invalid utf-8", func(e *Entry) { e.Event = "a\xffb\xc3" }},
		{"line separators", func(e *Entry) { e.AgentID = "x\u2028y\u2029z" }},
		{"unicode", func(e *Entry) { e.ToolUseID = "é—😀" }},
		{"body with spaces", func(e *Entry) { e.Body = json.RawMessage(" { \"a\" : [ 1 , 2 ] , \"h\":\"<&>\" } ") }},
		{"body escapes", func(e *Entry) { e.Body = json.RawMessage(`{"a":"\u003c\u2028\ud83d\ude00"}`) }},
		{"empty body", func(e *Entry) { e.Body = json.RawMessage{} }},
		{"max seq", func(e *Entry) { e.Seq = ^uint64(0); e.V = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sampleEntry()
			tt.edit(&e)
			want, werr := encodeEntryReference(&e)
			got, gerr := encodeEntry(&e)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("errors differ: reference %v, encodeEntry %v", werr, gerr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encodeEntry differs:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// An invalid body is refused, as encoding/json refuses it.
func TestEncodeEntryRejectsInvalidBody(t *testing.T) {
	for _, body := range []string{`{`, `{"a":1}x`, `{"a":1} {}`, "\xff", `{"a":01}`} {
		e := sampleEntry()
		e.Body = json.RawMessage(body)
		if _, err := encodeEntryReference(&e); err == nil {
			t.Fatalf("reference accepted %q", body)
		}
		if line, err := encodeEntry(&e); err == nil {
			t.Errorf("encodeEntry(%q) = %s, want error", body, line)
		}
	}
}

func FuzzEncodeEntry(f *testing.F) {
	f.Add("s1", "claude", "Bash", "a\xffb", `{"x":"<y>"}`, int64(3), uint64(9))
	f.Add("", "", "", "\u2028", ` [1, 2] `, int64(0), uint64(0))
	f.Fuzz(func(t *testing.T, session, runtime, tool, agent, body string, arts int64, seq uint64) {
		e := sampleEntry()
		e.Session, e.Runtime, e.Tool, e.AgentID, e.Artifacts, e.Seq = session, runtime, tool, agent, arts, seq
		e.Body = json.RawMessage(body)
		want, werr := encodeEntryReference(&e)
		got, gerr := encodeEntry(&e)
		if (werr != nil) != (gerr != nil) {
			if gerr == errEntryTooLong {
				return
			}
			t.Fatalf("errors differ: reference %v, encodeEntry %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("encodeEntry differs:\n got %q\nwant %q", got, want)
		}
		h, err := entryHash(&e)
		if werr == nil && (err != nil || len(h) != 64) {
			t.Fatalf("entryHash: %q, %v", h, err)
		}
	})
}
