package hooks

import (
	"errors"
	"testing"
)

// fuzzDecoder checks the decoder contract on arbitrary input: it never
// panics; it returns either an error with text, or an event with a name,
// a session and the decoder's runtime; and a tool event has a tool name.
func fuzzDecoder(f *testing.F, rt Runtime, decode func([]byte) (*Event, error), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{"", "{}", "null", `{"hook_event_name":1}`, "{\"a\":\"\xff\"}", `[1,2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decode(b)
		if err != nil {
			if e != nil {
				t.Fatalf("error %v with a non-nil event", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			var fe *FieldError
			if errors.As(err, &fe) && fe.Field == "" {
				t.Fatal("FieldError without a field")
			}
			return
		}
		if e.Runtime != rt || e.Name == "" || e.RawName == "" || e.SessionID == "" {
			t.Fatalf("incomplete event %+v", e)
		}
		if e.IsTool() && e.ToolName == "" {
			t.Fatalf("tool event without tool: %+v", e)
		}
		// Encoding an answer for the decoded event never panics either.
		for _, d := range []string{"", Allow, Deny, Ask, Block} {
			Encode(rt, Answer{Event: e.Name, Decision: d})
		}
	})
}

func FuzzDecodeCodex(f *testing.F) {
	var seeds []string
	for _, p := range realPayloads(f, "codex") {
		seeds = append(seeds, string(p))
	}
	fuzzDecoder(f, Codex, DecodeCodex, seeds...)
}

func FuzzDecodeGemini(f *testing.F) {
	fuzzDecoder(f, Gemini, DecodeGemini, geminiBeforeTool, geminiAfterTool, geminiAfterFail, geminiAfterAgent, geminiSession)
}

func FuzzDecodeCursor(f *testing.F) {
	fuzzDecoder(f, Cursor, DecodeCursor, cursorShell, cursorMCP, cursorEdit, cursorStop)
}

// FuzzDetectAndDecode feeds anything through runtime detection and the
// dispatching Decode.
func FuzzDetectAndDecode(f *testing.F) {
	for _, dir := range []string{"claude", "codex"} {
		for _, p := range realPayloads(f, dir) {
			f.Add(p)
		}
	}
	for _, s := range []string{geminiAfterAgent, cursorStop, "{}", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rt := DetectRuntime(b)
		e, err := Decode(b, "")
		if err != nil {
			if e != nil || err.Error() == "" {
				t.Fatalf("bad error result: %v %v", e, err)
			}
			return
		}
		if e.Runtime != rt {
			t.Fatalf("detected %q but decoded as %q", rt, e.Runtime)
		}
	})
}
