package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
		// the tool vocabulary: every tool event has a kind (its name's, or
		// mcp for a call the runtime says is an MCP server's), and the
		// runtime-neutral views never panic
		want := KindOf(e.ToolName)
		if e.MCPServer != "" {
			want = KindMCP
		}
		if e.IsTool() && (e.ToolKind == "" || e.Kind() != want) {
			t.Fatalf("tool event kind %q for %q", e.ToolKind, e.ToolName)
		}
		if (e.Kind() == KindMCP) != (e.MCPName() != "") {
			t.Fatalf("kind %q with MCP name %q", e.Kind(), e.MCPName())
		}
		if _, ok := e.ShellCommand(); ok && e.Kind() != KindShell {
			t.Fatalf("shell command from a %s call", e.Kind())
		}
		_ = e.Paths()
		if e.ExitUnknown && (e.ExitCode != nil || e.Failed) {
			t.Fatalf("exit unknown with a status: %+v", e)
		}
		if rt == Gemini && e.IsTool() && (e.ToolUseID == "" || !e.ToolUseIDDerived) {
			t.Fatalf("Gemini tool event without a derived id: %+v", e)
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
	seeds = append(seeds, capturedSeeds(f, "codex-")...)
	fuzzDecoder(f, Codex, DecodeCodex, seeds...)
}

func FuzzDecodeGemini(f *testing.F) {
	seeds := append([]string{geminiBeforeTool, geminiAfterTool, geminiAfterFail, geminiAfterAgent, geminiSession}, capturedSeeds(f, "gemini-")...)
	fuzzDecoder(f, Gemini, DecodeGemini, seeds...)
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
	for _, s := range append([]string{geminiAfterAgent, cursorStop, "{}", "x"}, capturedSeeds(f, "")...) {
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

// capturedSeeds are the payloads the real CLIs sent
// (testdata/hooks/captured) whose names start with prefix, answers and
// model inputs left out.
func capturedSeeds(tb testing.TB, prefix string) []string {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "hooks", "captured", prefix+"*.json"))
	var out []string
	for _, f := range files {
		base := filepath.Base(f)
		if strings.Contains(base, "docket-answer") || strings.Contains(base, "model-input") || strings.Contains(base, "hooks-list") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, string(b))
	}
	if len(out) == 0 {
		tb.Fatalf("no captured payloads for %q", prefix)
	}
	return out
}

// FuzzRollout feeds anything to the rollout reader and the patch and
// shell-command readers: they never panic, and an exit status is only
// found for the call asked about.
func FuzzRollout(f *testing.F) {
	for _, s := range []string{rolloutEnd2, rolloutOut2, rolloutEnd0, "", "\n\n", `{"payload":{"item":{}}}`} {
		f.Add([]byte(s), "call_21ab558b63544ed4a47c")
	}
	f.Fuzz(func(t *testing.T, b []byte, id string) {
		if _, ok := rolloutExit(b, id); ok && !strings.Contains(string(b), strconv.Quote(id)) {
			t.Fatalf("status for %q from a rollout that does not name it", id)
		}
		PatchPaths(string(b))
		ShellCommandOf(b)
	})
}
