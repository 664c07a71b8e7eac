//go:build nostore

package judgehook

import (
	"context"
	"errors"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
)

// Built with -tags nostore, docket-judge does not link the store (whose
// secret-detection dependencies cost ~2 ms of package init per process):
// recall is empty and recorded as unavailable, write-back is skipped and
// headless escalations fail closed. bench/judge.sh measures both builds.

type lazyStore struct{}

// UseDocketDetector does nothing: the store is not linked.
func UseDocketDetector() {}

func (l *lazyStore) close() {}

func wireStore(e *judge.Engine, h home.Home, noStore bool) *lazyStore {
	e.OpenRecall = func(context.Context) (judge.Recaller, error) {
		return nil, errors.New("store not linked (built with -tags nostore)")
	}
	return nil
}
