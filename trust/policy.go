// Package trust computes monitoring levels (0 Review-All to 4 Autonomous)
// per agent and per tool or risk class from the alignment signals the
// ledger already holds: human approvals and rejections, judge blocks,
// gate blocks followed by evidence, gate releases of unsupported claims,
// failed validations of claimed work, and critical violations.
//
// Levels are evaluated lazily, when read: State.Advance replays new
// signals in time order and then moves the clock to now, graduating a key
// whose score held the next threshold long enough and demoting one whose
// score fell or whose misalignments came in a burst. Nothing runs on a
// timer, and with an injected clock every result is deterministic.
//
// The state lives in two MAC'd files under the state root (see
// docs/FORMAT.md, "Trust state"): state.json, the whole state with the
// per-session read positions and the history of level changes, and
// levels.json, the small summary the judge hook reads on every call. A
// file whose MAC does not verify is ignored: every key is then at level
// 0 until the state is rebuilt from the ledger.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/internal/home"
)

// Levels.
const (
	ReviewAll       = 0
	PreExecSampling = 1
	PostExecReview  = 2
	SpotCheck       = 3
	Autonomous      = 4
	MaxLevel        = Autonomous
)

// LevelName names a level as the RABS architecture does.
func LevelName(l int) string {
	switch l {
	case ReviewAll:
		return "review-all"
	case PreExecSampling:
		return "pre-exec-sampling"
	case PostExecReview:
		return "post-exec-review"
	case SpotCheck:
		return "spot-check"
	case Autonomous:
		return "autonomous"
	}
	return "unknown"
}

// Modes of the judge's use of levels.
const (
	// ModeObserve computes and records levels; the judge notes what the
	// level would have done but does not change its answer.
	ModeObserve = "observe"
	// ModeEnforce lets the level escalate and sample calls.
	ModeEnforce = "enforce"
)

// PolicyFile is the trust policy's file name under the policies folder.
const PolicyFile = "trust.yaml"

// Policy configures levels. The zero value is not useful; start from
// DefaultPolicy.
type Policy struct {
	// Mode is observe (default) or enforce.
	Mode string `yaml:"mode" json:"mode"`
	// Thresholds are the alignment scores levels 1 to 4 need.
	Thresholds [4]float64 `yaml:"thresholds" json:"thresholds"`
	// WindowDays is the rolling window of the score (90).
	WindowDays int `yaml:"window_days" json:"window_days"`
	// HalfLifeDays is the recency weighting: a day's signals weigh half
	// as much as those HalfLifeDays later (30).
	HalfLifeDays float64 `yaml:"half_life_days" json:"half_life_days"`
	// GraduationDays is how long the next threshold must hold (30).
	GraduationDays int `yaml:"graduation_days" json:"graduation_days"`
	// MinActions is how many rated actions the window must hold before
	// a key graduates (20).
	MinActions int `yaml:"min_actions" json:"min_actions"`
	// BurstCount misalignments within BurstHours demote by one level (5, 24).
	BurstCount int `yaml:"burst_count" json:"burst_count"`
	BurstHours int `yaml:"burst_hours" json:"burst_hours"`
	// SampleRate is the share of level-1 calls escalated before they run.
	SampleRate float64 `yaml:"sample_rate" json:"sample_rate"`
	// SpotCheckRate is the share of level-3 calls queued for review.
	SpotCheckRate float64 `yaml:"spot_check_rate" json:"spot_check_rate"`
	// CriticalRules are judge rule ids whose block is a critical
	// violation (immediate level 0 for the agent); an entry ending in
	// "*" matches a prefix.
	CriticalRules []string `yaml:"critical_rules" json:"critical_rules"`
	// CriticalEscalations are rule ids whose escalation is critical too
	// (a safety directive asks a human and demotes the agent to level 0).
	CriticalEscalations []string `yaml:"critical_escalations" json:"critical_escalations"`
	// HighPriorityClasses are the risk classes whose misalignments are
	// high-priority (they stop graduation).
	HighPriorityClasses []string `yaml:"high_priority_classes" json:"high_priority_classes"`
}

// DefaultPolicy returns the RABS defaults.
func DefaultPolicy() Policy {
	return Policy{
		Mode:           ModeObserve,
		Thresholds:     [4]float64{0.70, 0.80, 0.90, 0.95},
		WindowDays:     90,
		HalfLifeDays:   30,
		GraduationDays: 30,
		MinActions:     20,
		BurstCount:     5,
		BurstHours:     24,
		SampleRate:     0.25,
		SpotCheckRate:  0.05,
		CriticalRules: []string{
			"builtin:keys_read", "builtin:state_root_write", "builtin:state_root_read",
			"builtin:state_root_shell", "builtin:hook_binary", "builtin:self_approval",
			"directive:*pii*", "directive:*secret*", "*pii*",
		},
		CriticalEscalations: []string{"directive:*safety*"},
		HighPriorityClasses: []string{"external_side_effect", "high_risk"},
	}
}

// Threshold returns the score level l needs (0 for level 0).
func (p *Policy) Threshold(l int) float64 {
	if l <= 0 {
		return 0
	}
	if l > MaxLevel {
		l = MaxLevel
	}
	return p.Thresholds[l-1]
}

// Digest identifies the policy's content.
func (p *Policy) Digest() string {
	b := fmt.Sprintf("%s|%v|%d|%g|%d|%d|%d|%d|%g|%g|%q|%q|%q", p.Mode, p.Thresholds, p.WindowDays, p.HalfLifeDays,
		p.GraduationDays, p.MinActions, p.BurstCount, p.BurstHours, p.SampleRate, p.SpotCheckRate, p.CriticalRules, p.HighPriorityClasses, p.CriticalEscalations)
	s := sha256.Sum256([]byte(b))
	return "sha256:" + hex.EncodeToString(s[:])
}

var errPolicy = errors.New("invalid trust policy")

// Check rejects a policy whose numbers make no sense.
func (p *Policy) Check() error {
	if p.Mode != ModeObserve && p.Mode != ModeEnforce {
		return fmt.Errorf("%w: mode %q (observe or enforce)", errPolicy, p.Mode)
	}
	prev := 0.0
	for i, t := range p.Thresholds {
		if t <= prev || t > 1 {
			return fmt.Errorf("%w: thresholds must rise within (0, 1] (level %d: %g)", errPolicy, i+1, t)
		}
		prev = t
	}
	if p.WindowDays < 1 || p.HalfLifeDays <= 0 || p.GraduationDays < 0 || p.MinActions < 0 || p.BurstCount < 1 || p.BurstHours < 1 {
		return fmt.Errorf("%w: window_days, half_life_days, burst_count, burst_hours must be positive", errPolicy)
	}
	if p.SampleRate < 0 || p.SampleRate > 1 || p.SpotCheckRate < 0 || p.SpotCheckRate > 1 {
		return fmt.Errorf("%w: sample rates must be within [0, 1]", errPolicy)
	}
	return nil
}

// LoadPolicy reads $DOCKET_HOME/policies/trust.yaml over the defaults;
// a missing file means the defaults. A file that cannot be read or is
// invalid fails closed: the defaults in enforce mode, with the error.
func LoadPolicy(h home.Home) (Policy, error) {
	p := DefaultPolicy()
	b, err := os.ReadFile(filepath.Join(h.PoliciesDir(), PolicyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return closed(), fmt.Errorf("read trust policy: %w", err)
	}
	if len(b) > 64<<10 {
		return closed(), fmt.Errorf("%w: file over 64 KiB", errPolicy)
	}
	if err := yaml.UnmarshalWithOptions(b, &p, yaml.Strict()); err != nil {
		return closed(), fmt.Errorf("parse trust policy: %w", err)
	}
	if err := p.Check(); err != nil {
		return closed(), err
	}
	return p, nil
}

func closed() Policy {
	p := DefaultPolicy()
	p.Mode = ModeEnforce
	return p
}

func (p *Policy) window() time.Duration { return time.Duration(p.WindowDays) * 24 * time.Hour }
func (p *Policy) burst() time.Duration  { return time.Duration(p.BurstHours) * time.Hour }
func (p *Policy) hold() time.Duration   { return time.Duration(p.GraduationDays) * 24 * time.Hour }
