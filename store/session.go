package store

// Session owners: the API token that first wrote to a ledger session
// through docket serve (Store.ClaimSession). The store only records the
// first claim and never changes it; who may claim, and what an owner may
// do, is the server's rule.

// MaxSessionKey bounds a claim's scope, session and owner.
const MaxSessionKey = 256

// CheckSessionClaim validates a ClaimSession call: a session and an owner
// are required, and no part is longer than MaxSessionKey.
func CheckSessionClaim(scope, session, owner string) error {
	switch {
	case session == "":
		return invalid("session", "required")
	case owner == "":
		return invalid("owner", "required")
	}
	for _, f := range []struct{ name, v string }{{"scope", scope}, {"session", session}, {"owner", owner}} {
		if len(f.v) > MaxSessionKey {
			return invalid(f.name, "longer than %d bytes", MaxSessionKey)
		}
	}
	return nil
}
