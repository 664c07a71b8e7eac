//go:build !nostore

package judgehook

import (
	"context"
	"errors"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
)

// lazyStore is the store as docket-judge reaches it: a `docket
// judge-store` child (storeproxy.go), started on first use, so calls
// whose class needs no recall (and whose decision is a plain allow)
// never start it. If the store cannot be reached or opened, recall is
// empty and the decision records why; the policy judge still decides
// and escalations fail closed.
type lazyStore struct{ *remoteStore }

func (l *lazyStore) close() {
	l.remoteStore.close()
	stopScanner()
}

var errNoStore = errors.New("store disabled (-no-store)")

// startStore starts the store server; a test replaces it.
var startStore = startDocketStore

// wireStore connects recall, write-back and the approval queue to the
// store under h (the child finds it through DOCKET_HOME and
// DOCKET_STORE_DSN, which it inherits).
func wireStore(e *judge.Engine, h home.Home, noStore bool) *lazyStore {
	if noStore {
		e.OpenRecall = func(context.Context) (judge.Recaller, error) { return nil, errNoStore }
		return nil
	}
	l := &lazyStore{&remoteStore{start: startStore}}
	e.OpenRecall = func(context.Context) (judge.Recaller, error) { return l, nil }
	e.Writer, e.Approvals = l, l
	return l
}
