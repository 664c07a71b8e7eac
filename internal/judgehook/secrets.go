//go:build !nostore

package judgehook

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/store/firewall"
)

// The write-back firewall needs a secret detector. Linking gitleaks into
// this hook would cost every tool call its start-up; instead the rare
// token-shaped text a write-back carries is scanned by one `docket
// firewall-check` child, found beside this binary or on PATH, started on
// first use and kept for the process. If it fails, the firewall fails
// closed and refuses the text.
//
// UseDocketDetector installs that detector; docket-judge calls it at
// start. A process that links gitleaks itself (docket serve) does not.
func UseDocketDetector() { firewall.UseDetector(detectViaDocket) }

const firewallCheckTimeout = 5 * time.Second

var scanner struct {
	sync.Mutex
	in   io.WriteCloser
	out  *bufio.Reader
	cmd  *exec.Cmd
	dead error
}

func detectViaDocket(text string) (string, error) {
	scanner.Lock()
	defer scanner.Unlock()
	if scanner.dead != nil {
		return "", scanner.dead
	}
	if scanner.cmd == nil {
		if err := startScanner(); err != nil {
			scanner.dead = err
			return "", err
		}
	}
	type answer struct {
		line string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		if _, err := io.WriteString(scanner.in, strings.ReplaceAll(text, "\x00", "")+"\x00"); err != nil {
			done <- answer{err: err}
			return
		}
		line, err := scanner.out.ReadString('\n')
		done <- answer{line, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			scanner.dead = a.err
			return "", a.err
		}
		if rule := strings.TrimSpace(a.line); rule != "-" {
			return rule, nil
		}
		return "", nil
	case <-time.After(firewallCheckTimeout):
		scanner.cmd.Process.Kill()
		scanner.dead = errors.New("docket firewall-check timed out")
		return "", scanner.dead
	}
}

func startScanner() error {
	cmd := docketCommand("firewall-check")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	scanner.cmd, scanner.in, scanner.out = cmd, in, bufio.NewReader(out)
	return nil
}

// stopScanner ends the child, if one was started.
func stopScanner() {
	scanner.Lock()
	defer scanner.Unlock()
	if scanner.cmd != nil {
		scanner.in.Close()
		scanner.cmd.Wait()
		scanner.cmd = nil
	}
}
