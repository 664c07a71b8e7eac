package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/judgehook"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/llmjudge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/store/sqlstore"
)

// docket-judge links neither the store drivers nor the model client; it
// asks this binary for them: `docket judge-store` serves its store calls
// and `docket judge-hook` judges a call whose policy configures a model.

const judgeStoreUsage = `usage: docket judge-store

Serves docket-judge's store calls (recall, write-back, approvals) on
stdin and stdout, one JSON object a line, for as long as stdin is open.
The store is the one under $DOCKET_HOME, or $DOCKET_STORE_DSN.
`

func init() {
	judgehook.NewModelJudge = func(set *judge.PolicySet, getenv func(string) string) (judge.JudgeBackend, func()) {
		llm := llmjudge.NewLLMJudge(llmjudge.LLMConfigFrom(set, getenv))
		return llm, func() { llm.Close() }
	}
	commands["judge-store"] = command{summary: "serve docket-judge's store calls on stdin (used by docket-judge)", run: runJudgeStore}
	commands["judge-hook"] = command{summary: "judge one PreToolUse payload with the model judge (used by docket-judge)", run: runJudgeHook}
}

func runJudgeStore(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprint(stderr, judgeStoreUsage)
		return exitCode(2, nil)
	}
	var closeStore func()
	defer func() {
		if closeStore != nil {
			closeStore()
		}
	}()
	return judgehook.ServeStore(ctx, stdin, stdout, func(ctx context.Context) (judgehook.StoreBackend, error) {
		h, err := home.Resolve()
		if err != nil {
			return nil, err
		}
		s, err := sqlstore.Open(ctx, h, os.Getenv(sqlstore.EnvDSN))
		if err != nil {
			return nil, err
		}
		ad := storeadapter.New(s)
		closeStore = func() { ad.Close() }
		return ad, nil
	})
}

func runJudgeHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	l := &localJudgeStore{}
	defer l.close()
	code := judgehook.Main(ctx, args, stdin, stdout, stderr, judgehook.Options{Wire: func(e *judge.Engine) func() {
		e.OpenRecall = func(context.Context) (judge.Recaller, error) { return l, nil }
		e.Writer, e.Approvals = l, l
		return nil
	}})
	if code != 0 {
		return exitCode(code, nil)
	}
	return nil
}

// localJudgeStore opens the store on first use, so calls whose class
// needs no recall never pay for it.
type localJudgeStore struct {
	once sync.Once
	ad   *storeadapter.Adapter
	err  error
}

func (l *localJudgeStore) open(ctx context.Context) (*storeadapter.Adapter, error) {
	l.once.Do(func() {
		h, err := home.Resolve()
		if err != nil {
			l.err = err
			return
		}
		s, err := sqlstore.Open(ctx, h, os.Getenv(sqlstore.EnvDSN))
		if err != nil {
			l.err = err
			return
		}
		l.ad = storeadapter.New(s)
	})
	return l.ad, l.err
}

func (l *localJudgeStore) close() {
	if l.ad != nil {
		l.ad.Close()
	}
}

func (l *localJudgeStore) Recall(ctx context.Context, q judge.RecallQuery) (judge.Recall, error) {
	ad, err := l.open(ctx)
	if err != nil {
		return judge.Recall{}, err
	}
	return ad.Recall(ctx, q)
}

func (l *localJudgeStore) WriteDecision(ctx context.Context, d judge.DecisionRecord) error {
	ad, err := l.open(ctx)
	if err != nil {
		return err
	}
	return ad.WriteDecision(ctx, d)
}

func (l *localJudgeStore) Submit(ctx context.Context, it judge.ApprovalItem) (string, error) {
	ad, err := l.open(ctx)
	if err != nil {
		return "", err
	}
	return ad.Submit(ctx, it)
}

func (l *localJudgeStore) Wait(ctx context.Context, id string, timeout time.Duration) (judge.Resolution, error) {
	ad, err := l.open(ctx)
	if err != nil {
		return judge.Resolution{}, err
	}
	return ad.Wait(ctx, id, timeout)
}
