package install

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Gemini CLI (0.61) turns its hooks on and off with hooksConfig in
// settings.json: hooksConfig.enabled (default true) switches every hook,
// and hooksConfig.disabled lists hooks, by name, that do not run. docket
// names its Gemini entries after their binaries (docket-judge,
// docket-ledger, docket-gate). A "hooks.enabled" key is not a switch:
// Gemini reads hooks.* as event names.

// GeminiOff says, one line each, what in a Gemini CLI settings file keeps
// docket's hooks from running; nil when nothing does.
func GeminiOff(settings []byte) []string {
	var s struct {
		HooksConfig struct {
			Enabled  *bool `json:"enabled"`
			Disabled []any `json:"disabled"`
		} `json:"hooksConfig"`
	}
	if json.Unmarshal(settings, &s) != nil {
		return nil
	}
	var out []string
	if e := s.HooksConfig.Enabled; e != nil && !*e {
		out = append(out, "hooksConfig.enabled is false, so no hook runs")
	}
	for _, d := range s.HooksConfig.Disabled {
		name, _ := d.(string)
		if b := DocketBinary(name); b != "" || isDocketName(name) {
			out = append(out, fmt.Sprintf("hooksConfig.disabled lists %q, so that docket hook does not run", name))
		}
	}
	return out
}

func isDocketName(s string) bool {
	for _, b := range Binaries {
		if strings.TrimSpace(s) == b {
			return true
		}
	}
	return false
}

// GeminiNotes is what `docket install --runtime gemini` tells the user
// about a settings file (its content after the install).
func GeminiNotes(settings []byte) []string {
	var out []string
	for _, off := range GeminiOff(settings) {
		out = append(out, off+": remove that setting (docket does not override it)")
	}
	return out
}
