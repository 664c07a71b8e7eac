//go:build !nostore

package judgehook

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/judge"
)

// pipeStore starts ServeStore on st in this process and returns a client
// of it, as docket-judge's child would be reached.
func pipeStore(t *testing.T, open func(context.Context) (StoreBackend, error)) (*remoteStore, *int) {
	t.Helper()
	starts := 0
	r := &remoteStore{start: func() (io.WriteCloser, io.Reader, func(bool), error) {
		starts++
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		go func() {
			ServeStore(context.Background(), inR, outW, open)
			outW.Close()
			close(done)
		}()
		return inW, outR, func(kill bool) {
			inW.Close()
			if kill { // a killed child's call is not waited for
				inR.CloseWithError(errors.New("killed"))
				outR.CloseWithError(errors.New("killed"))
				return
			}
			<-done
		}, nil
	}}
	t.Cleanup(r.close)
	return r, &starts
}

func TestRemoteStoreRoundTrip(t *testing.T) {
	mem := &judge.MemStore{}
	mem.AddMemory(judge.Memory{ID: "mem_1", Summary: "git push needs a review", Provenance: "user_confirmed", UsePolicy: "can_use_as_instruction", Confidence: 1})
	r, starts := pipeStore(t, func(context.Context) (StoreBackend, error) { return mem, nil })
	ctx := context.Background()

	rec, err := r.Recall(ctx, judge.RecallQuery{ToolName: "Bash", Target: "git push", Summary: "git push", MaxItems: 5})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := mem.Recall(ctx, judge.RecallQuery{ToolName: "Bash", Target: "git push", Summary: "git push", MaxItems: 5})
	if len(rec.Memories) != len(want.Memories) || len(want.Memories) == 0 || rec.Memories[0].ID != "mem_1" {
		t.Fatalf("recall through the child = %+v, in process %+v", rec, want)
	}
	if err := r.WriteDecision(ctx, judge.DecisionRecord{DecisionID: "dec_1", IdempotencyKey: "k1", Decision: judge.Block}); err != nil {
		t.Fatal(err)
	}
	if d := mem.Decisions(); len(d) != 1 || d[0].DecisionID != "dec_1" || d[0].Decision != judge.Block {
		t.Fatalf("decisions written: %+v", d)
	}
	id, err := r.Submit(ctx, judge.ApprovalItem{SessionID: "s", ActionID: "a1", ToolName: "Bash", ExpiresAt: time.Now().Add(time.Minute)})
	if err != nil || id == "" {
		t.Fatalf("submit: %q, %v", id, err)
	}
	go func() {
		for !mem.Resolve(id, judge.Resolution{Status: judge.ApprovalDenied, By: "ana", Note: "no"}) {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := r.Wait(ctx, id, 10*time.Second)
	if err != nil || res.Status != judge.ApprovalDenied || res.By != "ana" || res.Note != "no" {
		t.Fatalf("wait: %+v, %v", res, err)
	}
	if *starts != 1 {
		t.Errorf("%d children started for four calls", *starts)
	}
}

// The store's errors reach the caller; a store that cannot open answers
// every call with its error.
func TestRemoteStoreErrors(t *testing.T) {
	r, _ := pipeStore(t, func(context.Context) (StoreBackend, error) { return nil, errors.New("open store: disk on fire") })
	if _, err := r.Recall(context.Background(), judge.RecallQuery{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("recall error = %v", err)
	}
	if _, err := r.Submit(context.Background(), judge.ApprovalItem{ActionID: "a"}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("submit error = %v", err)
	}
	r2, _ := pipeStore(t, func(context.Context) (StoreBackend, error) { return &judge.MemStore{}, nil })
	if _, err := r2.Wait(context.Background(), "apr_unknown", time.Second); err == nil {
		t.Fatal("wait on an unknown item: no error")
	}
}

// A call whose context ends returns ctx.Err() at once (the approval queue
// relies on it). A deadline travels with the call and the child answers
// by it; a cancellation kills the child, and later calls fail.
func TestRemoteStoreContext(t *testing.T) {
	mem := &judge.MemStore{}
	r, _ := pipeStore(t, func(context.Context) (StoreBackend, error) { return mem, nil })
	id, err := r.Submit(context.Background(), judge.ApprovalItem{ActionID: "a", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = r.Wait(ctx, id, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
		t.Fatalf("wait past its deadline: %v after %v", err, time.Since(t0))
	}
	if _, err := r.Recall(context.Background(), judge.RecallQuery{}); err != nil {
		t.Fatalf("the child answered by the deadline, yet the next call fails: %v", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	t0 = time.Now()
	_, err = r.Wait(ctx, id, time.Hour)
	if !errors.Is(err, context.Canceled) || time.Since(t0) > 5*time.Second {
		t.Fatalf("wait past its cancellation: %v after %v", err, time.Since(t0))
	}
	if _, err := r.Recall(context.Background(), judge.RecallQuery{}); err == nil {
		t.Fatal("a call after an abandoned one succeeded")
	}
}

// With no docket to start, the store is unreachable: recall reports it
// and a headless escalation fails closed.
func TestRemoteStoreUnreachable(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r := &remoteStore{start: startDocketStore}
	defer r.close()
	if _, err := r.Recall(context.Background(), judge.RecallQuery{}); err == nil || !strings.Contains(err.Error(), "store unreachable") {
		t.Fatalf("recall with no docket: %v", err)
	}
}

// A child that answers garbage is dead: no answer is made up.
func TestRemoteStoreGarbage(t *testing.T) {
	dir := t.TempDir()
	fake := "#!/bin/sh\nread line; echo '{\"recall\": nope'\n"
	if err := os.WriteFile(filepath.Join(dir, "docket"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	r := &remoteStore{start: startDocketStore}
	defer r.close()
	if _, err := r.Recall(context.Background(), judge.RecallQuery{}); err == nil {
		t.Fatal("garbage answer accepted")
	}
}

// Starting the child and opening the store does not count against the
// first call's deadline (recall's is 250 ms, store open included, which
// a child on a loaded machine can exceed by itself); a start that takes
// too long fails on its own bound.
func TestRemoteStoreSlowStart(t *testing.T) {
	mem := &judge.MemStore{}
	r, _ := pipeStore(t, func(context.Context) (StoreBackend, error) {
		time.Sleep(300 * time.Millisecond)
		return mem, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.Recall(ctx, judge.RecallQuery{ToolName: "Bash"}); err != nil {
		t.Fatalf("recall after a slow start: %v", err)
	}
	// a cancellation (not a deadline) still ends the call
	r2, _ := pipeStore(t, func(context.Context) (StoreBackend, error) { return mem, nil })
	id, err := r2.Submit(context.Background(), judge.ApprovalItem{ActionID: "b", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	_ = id
	r3, _ := pipeStore(t, func(context.Context) (StoreBackend, error) { return mem, nil })
	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, ccancel)
	if _, err := r3.Wait(cctx, id, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("first call cancelled: %v", err)
	}
}
