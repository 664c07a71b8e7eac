package judgehook

import (
	"context"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/judge"
)

// A decision stuck past its deadline (a read in a system call, which no
// context interrupts) is answered with a deny before the runtime's
// timeout; one that returns in time is answered as it decided.
func TestDecideBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	stuck := make(chan struct{})
	defer close(stuck)
	start := time.Now()
	a, d, ok := decideBounded(ctx, 50*time.Millisecond, func() (hooks.Answer, *judge.Decision) {
		<-stuck
		return hooks.Answer{Decision: hooks.Allow}, &judge.Decision{}
	})
	if ok || d != nil || a.Decision != hooks.Deny || time.Since(start) > 5*time.Second {
		t.Fatalf("stuck decision: ok %v, %s after %v; want a deny", ok, a.Decision, time.Since(start))
	}
	a, d, ok = decideBounded(ctx, time.Second, func() (hooks.Answer, *judge.Decision) {
		return hooks.Answer{Decision: hooks.Allow}, &judge.Decision{Outcome: judge.Allow}
	})
	if !ok || d == nil || a.Decision != hooks.Allow {
		t.Fatalf("prompt decision: ok %v, %s; want its allow", ok, a.Decision)
	}
}
