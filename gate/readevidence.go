package gate

import "github.com/docket/docket/ledger"

// relevantReader is implemented by *ledger.Ledger: it reads only the
// entries a stop decision uses (every validator pass and fail and every
// seal, the last entry, and the entries after the seq the decision picks),
// so a stop costs the same on a ledger of 100,000 entries as of 10.
type relevantReader interface {
	ReadRelevant(session string, after func(indexed []*ledger.Entry) uint64) ([]*ledger.Entry, error)
}

// readEvidence returns the verified entries Decide, MinRelevantSeq and
// LastWrite need: all validator passes and every entry after
// MinRelevantSeq. Evidence without ReadRelevant returns all entries.
func readEvidence(l Evidence, session string, claims []Claim, b Binding) ([]*ledger.Entry, error) {
	if rr, ok := l.(relevantReader); ok {
		return rr.ReadRelevant(session, func(es []*ledger.Entry) uint64 { return MinRelevantSeq(claims, es, b) })
	}
	return l.ReadVerified(session)
}
