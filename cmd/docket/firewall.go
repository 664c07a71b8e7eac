package main

import (
	"context"
	"fmt"
	"io"

	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
)

const firewallCheckUsage = `usage: docket firewall-check < TEXT

Scans TEXT on stdin for secrets with the write-back firewall's detector
(gitleaks' rule set) and prints the matching rule id, or nothing. The
PreToolUse hook calls it for token-shaped text instead of linking the
detector itself.

Exit codes: 0 scanned, 1 could not scan.
`

func init() {
	firewall.UseDetector(gitleaks.Detect)
	commands["firewall-check"] = command{summary: "scan stdin for secrets (used by docket-judge)", run: runFirewallCheck}
}

func runFirewallCheck(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprint(stderr, firewallCheckUsage)
		return exitCode(2, nil)
	}
	text, err := io.ReadAll(io.LimitReader(stdin, firewall.MaxText+1))
	if err != nil {
		return err
	}
	rule, err := gitleaks.Detect(string(text))
	if err != nil {
		return fmt.Errorf("secret detector: %w", err)
	}
	if rule != "" {
		fmt.Fprintln(stdout, rule)
	}
	return nil
}
