package console

import (
	"fmt"
	"io"
	"testing"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/server"
)

// BenchmarkOverview renders the overview over 100 sessions of 20 entries
// each (every session read through the API's session route, the done
// ones verified).
func BenchmarkOverview(b *testing.B) {
	f := newFixture(b)
	for i := 0; i < 100; i++ {
		s := fmt.Sprintf("sess-%03d", i)
		for j := 0; j < 19; j++ {
			f.appendEntry(s, ledger.Record{Kind: ledger.KindToolCall, Runtime: "claude-code", Tool: "Bash", Body: map[string]any{"failed": false}})
		}
		d := "block"
		if i%2 == 0 {
			d = "allow"
		}
		f.appendEntry(s, ledger.Record{Kind: ledger.KindGateDecision, Body: map[string]any{"decision": d}})
	}
	c := f.client(server.RoleReviewer)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Get(f.url + "/")
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err, resp.StatusCode)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
