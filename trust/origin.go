package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// The tag trinity (RABS §4). Every judge decision carries three tags:
//
//   - R-Tag, this decision: "rt_" and 24 hex digits of its idempotency key;
//   - O-Tag, the origin of the causal chain it belongs to: the user
//     prompt that started it ("ot_" and the first 24 hex digits of the
//     user_prompt entry's hash), or the runtime's task or flow id for a
//     proposal a runtime sent to `docket serve` ("task:ID", "flow:ID");
//   - V-Pol, the authority: the policy version in force when the chain
//     started, and the rule that governed this decision.
//
// Knock-on calls (every call after the prompt, in the same session)
// inherit the O-Tag and the chain's policy version. The current origin of
// a session is kept in run/origin/<session>.json, MAC'd; it is a pointer
// into the ledger, which holds the prompt entry itself.

// originDomain is the MAC domain of origin files.
const originDomain = "docket-origin-v1"

// Origin is the chain a session's calls currently belong to.
type Origin struct {
	OTag    string `json:"o_tag"`
	Session string `json:"session"`
	// Seq is the user_prompt entry's position in the session's ledger.
	Seq  uint64 `json:"seq"`
	Time string `json:"time"`
	// PolicyVersion is the chain's V-Pol version, set by the chain's
	// first decision and inherited by the rest.
	PolicyVersion string `json:"policy_version,omitempty"`
}

// OTagOf returns the O-Tag of a user_prompt entry.
func OTagOf(e *ledger.Entry) string {
	h := strings.TrimPrefix(e.Hash, "sha256:")
	if len(h) < 24 {
		return ""
	}
	return "ot_" + h[:24]
}

// RTag returns the R-Tag of a decision with the given idempotency key.
func RTag(idempotencyKey string) string {
	k := strings.TrimPrefix(idempotencyKey, "sha256:")
	if len(k) < 24 {
		return ""
	}
	return "rt_" + k[:24]
}

func originPath(h home.Home, session string) string {
	return filepath.Join(h.RunDir(), "origin", session+".json")
}

// WriteOrigin makes o the current origin of its session.
func WriteOrigin(h home.Home, keys *ledger.Keys, o Origin) error {
	if !home.ValidSessionID(o.Session) {
		return fmt.Errorf("write origin: invalid session %q", o.Session)
	}
	p := originPath(h, o.Session)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("write origin: %w", err)
	}
	b, err := seal(keys, originDomain, o)
	if err != nil {
		return err
	}
	return writeFile(p, b)
}

// ReadOrigin returns the session's current origin; ok is false when
// there is none, or when the file does not verify (a forged origin is
// not used: the decision then has no O-Tag, and `docket trace` places it
// by its position in the ledger).
func ReadOrigin(h home.Home, keys *ledger.Keys, session string) (o Origin, ok bool, err error) {
	if !home.ValidSessionID(session) {
		return Origin{}, false, nil
	}
	err = open(keys, originDomain, originPath(h, session), &o)
	if errors.Is(err, fs.ErrNotExist) {
		return Origin{}, false, nil
	}
	if err != nil || o.Session != session {
		return Origin{}, false, err
	}
	return o, true, nil
}

// CurrentOTag is the O-Tag of the session's current causal chain (the
// origin ReadOrigin returns), or "" when there is none or it does not
// verify: what the gate and the validator runner stamp on the entries
// they write, so a stop's decision and the evidence behind it trace back
// to the prompt that started the work, as the judge's decisions do.
func CurrentOTag(h home.Home, keys *ledger.Keys, session string) string {
	if keys == nil {
		return ""
	}
	if o, ok, _ := ReadOrigin(h, keys, session); ok {
		return o.OTag
	}
	return ""
}
