// Package gitleaks is the write-back firewall's secret detector: gitleaks'
// maintained rule set (github.com/zricethezav/gitleaks/v8/detect), loaded
// once per process on first use (about 20 ms). It lives apart from the
// firewall so that binaries which never scan in-process, such as the
// PreToolUse hook, do not pay for linking it at every start.
package gitleaks

import (
	"sync"

	"github.com/zricethezav/gitleaks/v8/detect"
)

var (
	once sync.Once
	det  *detect.Detector
	err  error
	mu   sync.Mutex // a Detector keeps per-scan state
)

// Detect returns the id of the first gitleaks rule that matches text, or
// "" when none does.
func Detect(text string) (string, error) {
	once.Do(func() { det, err = detect.NewDetectorDefaultConfig() })
	if err != nil {
		return "", err
	}
	mu.Lock()
	findings := det.DetectString(text)
	mu.Unlock()
	if len(findings) == 0 {
		return "", nil
	}
	return findings[0].RuleID, nil
}
