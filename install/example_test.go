package install_test

import (
	"fmt"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/install"
)

func ExampleWiring() {
	for _, w := range install.Wiring(hooks.Gemini) {
		fmt.Printf("%-10s → %-13s %v %s\n", w.Event, w.Binary, w.Timeout, w.Command("/opt/docket/bin", hooks.Gemini))
	}
	// Output:
	// BeforeTool → docket-judge  2m25s /opt/docket/bin/docket-judge --runtime gemini
	// AfterTool  → docket-ledger 5s /opt/docket/bin/docket-ledger --runtime gemini
	// AfterAgent → docket-gate   15s /opt/docket/bin/docket-gate --runtime gemini --timeout 12s
	// BeforeAgent → docket-ledger 10s /opt/docket/bin/docket-ledger --runtime gemini
}
