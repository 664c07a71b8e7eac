package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
)

const firewallCheckUsage = `usage: docket firewall-check < TEXTS

Scans texts on stdin for secrets with the write-back firewall's detector
(gitleaks' rule set). Texts are separated by NUL bytes; for each one it
prints one line: the matching rule id, or "-" for none. The PreToolUse
hook keeps one running for its token-shaped write-back text instead of
linking the detector itself.

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
	br := bufio.NewReader(stdin)
	for {
		text, err := br.ReadString(0)
		if text = strings.TrimSuffix(text, "\x00"); text != "" || err == nil {
			if len(text) > firewall.MaxText {
				text = text[:firewall.MaxText]
			}
			rule, derr := gitleaks.Detect(text)
			if derr != nil {
				return fmt.Errorf("secret detector: %w", derr)
			}
			if rule == "" {
				rule = "-"
			}
			if _, werr := fmt.Fprintln(stdout, rule); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
