package transcript

import (
	"os"
	"path/filepath"
	"testing"
)

// The real transcripts the replays use yield their calls, results and a
// final message.
func TestStepsOfRealTranscripts(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/hooks/transcripts/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no real transcripts in testdata/hooks/transcripts")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := Steps(b)
		if err != nil {
			t.Fatal(err)
		}
		uses, results := 0, 0
		for _, s := range steps {
			switch s.Kind {
			case Use:
				uses++
			case Result:
				results++
				if s.Tool == "" {
					t.Errorf("%s: result %s has no tool", filepath.Base(f), s.ID)
				}
			}
		}
		last := steps[len(steps)-1]
		if uses == 0 || results != uses || last.Kind != Stop || last.Text == "" {
			t.Errorf("%s: %d uses, %d results, last %q %q", filepath.Base(f), uses, results, last.Kind, last.Text)
		}
	}
}

func TestStepsSkipsSidechainsAndJunk(t *testing.T) {
	in := `not json
{"type":"assistant","isSidechain":true,"message":{"id":"m0","content":[{"type":"tool_use","id":"t0","name":"Bash","input":{}}]}}
{"type":"assistant","isSidechain":false,"message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"a"}}]}}
{"type":"user","isSidechain":false,"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Error: boom","is_error":true}]},"toolUseResult":"Error: boom"}
{"type":"assistant","isSidechain":false,"message":{"id":"m2","content":[{"type":"text","text":"Done."}]}}
{"type":"assistant","isSidechain":false,"message":{"id":"m2","content":[{"type":"text","text":"Tests pass."}]}}
`
	steps, err := Steps([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || steps[0].Tool != "Edit" || !steps[1].Failed || steps[1].Error != "Error: boom" || steps[2].Text != "Done.\nTests pass." {
		t.Fatalf("steps = %+v", steps)
	}
}
