package eval

import (
	"os"
	"testing"

	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
)

// The docket CLI installs the write-back firewall's secret detector at
// start; the tests do the same, else every token-shaped lesson is refused.
func TestMain(m *testing.M) {
	firewall.UseDetector(gitleaks.Detect)
	os.Exit(m.Run())
}
