//go:build !nostore

package judgehook

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/store/sqlstore"
)

// lazyStore opens the store on first use, so calls whose class needs no
// recall (and whose decision is a plain allow) never pay for it. If the
// store cannot open, recall is empty and the decision records why; the
// policy judge still decides and escalations fail closed.
type lazyStore struct {
	h    home.Home
	once sync.Once
	ad   *storeadapter.Adapter
	err  error
}

func (l *lazyStore) open(ctx context.Context) (*storeadapter.Adapter, error) {
	l.once.Do(func() {
		s, err := sqlstore.Open(ctx, l.h, os.Getenv(sqlstore.EnvDSN))
		if err != nil {
			l.err = err
			return
		}
		l.ad = storeadapter.New(s)
	})
	return l.ad, l.err
}

func (l *lazyStore) Recall(ctx context.Context, q judge.RecallQuery) (judge.Recall, error) {
	ad, err := l.open(ctx)
	if err != nil {
		return judge.Recall{}, err
	}
	return ad.Recall(ctx, q)
}

func (l *lazyStore) WriteDecision(ctx context.Context, d judge.DecisionRecord) error {
	ad, err := l.open(ctx)
	if err != nil {
		return err
	}
	return ad.WriteDecision(ctx, d)
}

func (l *lazyStore) Submit(ctx context.Context, it judge.ApprovalItem) (string, error) {
	ad, err := l.open(ctx)
	if err != nil {
		return "", err
	}
	return ad.Submit(ctx, it)
}

func (l *lazyStore) Wait(ctx context.Context, id string, timeout time.Duration) (judge.Resolution, error) {
	ad, err := l.open(ctx)
	if err != nil {
		return judge.Resolution{}, err
	}
	return ad.Wait(ctx, id, timeout)
}

func (l *lazyStore) close() {
	if l.ad != nil {
		l.ad.Close()
	}
	stopScanner()
}

var errNoStore = errors.New("store disabled (-no-store)")

// wireStore connects recall, write-back and the approval queue to the
// store under h, opened lazily.
func wireStore(e *judge.Engine, h home.Home, noStore bool) *lazyStore {
	if noStore {
		e.OpenRecall = func(context.Context) (judge.Recaller, error) { return nil, errNoStore }
		return nil
	}
	l := &lazyStore{h: h}
	e.OpenRecall = func(context.Context) (judge.Recaller, error) { return l, nil }
	e.Writer, e.Approvals = l, l
	return l
}
