//go:build !nostore

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/store/firewall"
)

// The write-back firewall needs a secret detector. Linking gitleaks into
// this hook would cost every tool call its start-up; instead the rare
// token-shaped text a write-back carries is scanned by `docket
// firewall-check`, found beside this binary or on PATH. If that fails,
// the firewall fails closed and refuses the text.
func init() { firewall.UseDetector(execDetector) }

const firewallCheckTimeout = 5 * time.Second

func execDetector(text string) (string, error) {
	bin := "docket"
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "docket"); isExecutable(p) {
			bin = p
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), firewallCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "firewall-check")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
