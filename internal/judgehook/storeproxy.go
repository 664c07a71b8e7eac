package judgehook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/docket/docket/judge"
)

// The store (SQLite or Postgres) is not linked into docket-judge: its
// drivers' package initialisation alone cost the hook a fifth of its
// time on every call, though a routine call never opens the store. The
// calls that do need it (recall for risky classes, write-back of a
// non-routine decision, a headless escalation's approval) ask one
// `docket judge-store` child, started on first use and kept for the
// process, over JSON lines on its stdin and stdout. docket runs the very
// store code the hook used to run in-process (judge/storeadapter), with
// the write-back firewall's full secret detector.

// StoreRequest is one line a store client sends.
type StoreRequest struct {
	Op string `json:"op"` // open | recall | write_decision | submit | wait
	// Exactly one argument is set, as Op says.
	Query    *judge.RecallQuery    `json:"query,omitempty"`
	Decision *judge.DecisionRecord `json:"decision,omitempty"`
	Item     *judge.ApprovalItem   `json:"item,omitempty"`
	ID       string                `json:"id,omitempty"`
	// TimeoutMS is Wait's timeout; DeadlineMS the caller's remaining
	// context time (0: none), which the server applies to the call.
	TimeoutMS  int64 `json:"timeout_ms,omitempty"`
	DeadlineMS int64 `json:"deadline_ms,omitempty"`
}

// StoreResponse is the answer line: Error set, or the op's result.
type StoreResponse struct {
	Error      string            `json:"error,omitempty"`
	Recall     *judge.Recall     `json:"recall,omitempty"`
	ID         string            `json:"id,omitempty"`
	Resolution *judge.Resolution `json:"resolution,omitempty"`
	// DeadlineExceeded: the call failed because the caller's deadline
	// (StoreRequest.DeadlineMS) passed.
	DeadlineExceeded bool `json:"deadline_exceeded,omitempty"`
}

// StoreBackend is what ServeStore serves; *storeadapter.Adapter is one.
type StoreBackend interface {
	judge.Recaller
	judge.DecisionWriter
	judge.Approvals
}

// ServeStore answers StoreRequests from in on out until in ends. open
// returns the backend, opened on the first request; its error is every
// request's answer.
func ServeStore(ctx context.Context, in io.Reader, out io.Writer, open func(context.Context) (StoreBackend, error)) error {
	var st StoreBackend
	var openErr error
	opened := false
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var rq StoreRequest
		if err := dec.Decode(&rq); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read request: %w", err)
		}
		if !opened {
			st, openErr = open(ctx)
			opened = true
		}
		var rs StoreResponse
		if openErr != nil {
			rs.Error = openErr.Error()
		} else {
			rs = serveOne(ctx, st, rq)
		}
		if err := enc.Encode(rs); err != nil {
			return fmt.Errorf("write answer: %w", err)
		}
	}
}

func serveOne(ctx context.Context, st StoreBackend, rq StoreRequest) (rs StoreResponse) {
	if rq.DeadlineMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(rq.DeadlineMS)*time.Millisecond)
		defer cancel()
	}
	var err error
	switch {
	case rq.Op == "open": // the store opened for the first request
	case rq.Op == "recall" && rq.Query != nil:
		var r judge.Recall
		r, err = st.Recall(ctx, *rq.Query)
		rs.Recall = &r
	case rq.Op == "write_decision" && rq.Decision != nil:
		err = st.WriteDecision(ctx, *rq.Decision)
	case rq.Op == "submit" && rq.Item != nil:
		rs.ID, err = st.Submit(ctx, *rq.Item)
	case rq.Op == "wait" && rq.ID != "":
		var r judge.Resolution
		r, err = st.Wait(ctx, rq.ID, time.Duration(rq.TimeoutMS)*time.Millisecond)
		rs.Resolution = &r
	default:
		err = fmt.Errorf("bad request %q", rq.Op)
	}
	if err != nil {
		return StoreResponse{Error: err.Error(), DeadlineExceeded: errors.Is(ctx.Err(), context.DeadlineExceeded)}
	}
	return rs
}

// remoteStore is the client: a judge.Recaller, DecisionWriter and
// Approvals whose calls go to a `docket judge-store` child. Calls are
// serialised; a call whose context ends kills the child (its answer
// would come too late) and every later call fails.
type remoteStore struct {
	// start starts the server and returns its stdin, stdout and a stop
	// function (close stdin, wait; kill when kill is true).
	start func() (io.WriteCloser, io.Reader, func(kill bool), error)

	mu   sync.Mutex
	in   io.WriteCloser
	out  *json.Decoder
	stop func(kill bool)
	dead error
}

func (r *remoteStore) call(ctx context.Context, rq StoreRequest) (StoreResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return StoreResponse{}, r.dead
	}
	if r.in == nil {
		t0 := time.Now()
		in, out, stop, err := r.start()
		if err != nil {
			r.dead = fmt.Errorf("store unreachable: %w", err)
			return StoreResponse{}, r.dead
		}
		r.in, r.out, r.stop = in, json.NewDecoder(bufio.NewReader(out)), stop
		// Starting docket and opening the store is not the call's time:
		// in-process the store opened in a few milliseconds, a child on
		// a loaded machine can take longer than recall's whole deadline.
		// It has its own bound; the call's deadline moves by what it took.
		octx, cancel := context.WithTimeout(context.Background(), storeStartTimeout)
		_, err = r.roundTrip(octx, StoreRequest{Op: "open"})
		cancel()
		if err != nil {
			return StoreResponse{}, err
		}
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = extendDeadline(ctx, dl.Add(time.Since(t0)))
			defer cancel()
		}
	}
	return r.roundTrip(ctx, rq)
}

// storeStartTimeout bounds starting `docket judge-store` and opening the
// store.
const storeStartTimeout = 5 * time.Second

// extendDeadline returns a context with deadline dl that is cancelled
// when ctx is cancelled (not when ctx's own deadline passes).
func extendDeadline(ctx context.Context, dl time.Time) (context.Context, context.CancelFunc) {
	nctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl)
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return nctx, func() { stop(); cancel() }
}

// roundTrip sends rq and reads its answer; r.mu is held.
func (r *remoteStore) roundTrip(ctx context.Context, rq StoreRequest) (StoreResponse, error) {
	if dl, ok := ctx.Deadline(); ok {
		rq.DeadlineMS = max(1, time.Until(dl).Milliseconds())
	}
	type answer struct {
		rs  StoreResponse
		err error
	}
	done := make(chan answer, 1)
	go func() {
		if err := json.NewEncoder(r.in).Encode(rq); err != nil {
			done <- answer{err: err}
			return
		}
		var rs StoreResponse
		err := r.out.Decode(&rs)
		done <- answer{rs, err}
	}()
	result := func(a answer) (StoreResponse, error) {
		if a.err != nil {
			r.dead = fmt.Errorf("store unreachable: %w", a.err)
			r.stop(true)
			return StoreResponse{}, r.dead
		}
		if a.rs.Error != "" {
			if a.rs.DeadlineExceeded {
				return StoreResponse{}, context.DeadlineExceeded // the caller's deadline, applied there
			}
			return StoreResponse{}, errors.New(a.rs.Error)
		}
		return a.rs, nil
	}
	select {
	case a := <-done:
		return result(a)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// the child applies the same deadline and answers by it: give
			// its answer a moment to arrive before giving the child up
			t := time.NewTimer(deadlineGrace)
			defer t.Stop()
			select {
			case a := <-done:
				return result(a)
			case <-t.C:
			}
		}
		r.dead = fmt.Errorf("store call abandoned: %w", ctx.Err())
		r.stop(true)
		<-done
		return StoreResponse{}, ctx.Err()
	}
}

// deadlineGrace is how long past a call's deadline the child's answer
// (which it sends by the deadline) may take to arrive before the child is
// given up as hung.
const deadlineGrace = 250 * time.Millisecond

func (r *remoteStore) Recall(ctx context.Context, q judge.RecallQuery) (judge.Recall, error) {
	rs, err := r.call(ctx, StoreRequest{Op: "recall", Query: &q})
	if err != nil {
		return judge.Recall{}, err
	}
	if rs.Recall == nil {
		return judge.Recall{}, errors.New("store answered no recall")
	}
	return *rs.Recall, nil
}

func (r *remoteStore) WriteDecision(ctx context.Context, d judge.DecisionRecord) error {
	_, err := r.call(ctx, StoreRequest{Op: "write_decision", Decision: &d})
	return err
}

func (r *remoteStore) Submit(ctx context.Context, it judge.ApprovalItem) (string, error) {
	rs, err := r.call(ctx, StoreRequest{Op: "submit", Item: &it})
	if err != nil {
		return "", err
	}
	if rs.ID == "" {
		return "", errors.New("store answered no approval id")
	}
	return rs.ID, nil
}

func (r *remoteStore) Wait(ctx context.Context, id string, timeout time.Duration) (judge.Resolution, error) {
	rs, err := r.call(ctx, StoreRequest{Op: "wait", ID: id, TimeoutMS: max(1, timeout.Milliseconds())})
	if err != nil {
		return judge.Resolution{}, err
	}
	if rs.Resolution == nil {
		return judge.Resolution{}, errors.New("store answered no resolution")
	}
	return *rs.Resolution, nil
}

// close ends the child, if one was started.
func (r *remoteStore) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in != nil && r.dead == nil {
		r.stop(false)
	}
	r.dead = errors.New("store closed")
}

// docketCommand returns a command running docket with args: the docket
// beside this binary, else the one on PATH.
func docketCommand(args ...string) *exec.Cmd {
	bin := "docket"
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "docket"); isExecutable(p) {
			bin = p
		}
	}
	return exec.Command(bin, args...)
}

// startDocketStore starts `docket judge-store`.
func startDocketStore() (io.WriteCloser, io.Reader, func(bool), error) {
	cmd := docketCommand("judge-store")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	stop := func(kill bool) {
		if kill {
			cmd.Process.Kill()
		}
		in.Close()
		cmd.Wait()
	}
	return in, out, stop, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
