package ledger

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentAppends runs writers with separate Ledger values (separate
// lock file descriptions, as separate hook processes have) against one
// session: no entry may be lost or duplicated and the chain must verify.
func TestConcurrentAppends(t *testing.T) {
	l := newTestLedger(t)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		lw, err := Open(l.home)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := lw.Append("s1", Record{Kind: KindToolCall, Tool: "Bash",
					Body:      map[string]any{"writer": w, "i": i},
					Artifacts: []Artifact{{Name: "stdout", Data: strings.NewReader(fmt.Sprint(w, i))}}})
				if err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	es, err := l.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != writers*each {
		t.Fatalf("%d entries, want %d", len(es), writers*each)
	}
	seen := map[string]bool{}
	for _, e := range es {
		if seen[string(e.Body)] {
			t.Fatalf("duplicate entry %s", e.Body)
		}
		seen[string(e.Body)] = true
	}
}

// TestLockHeldDuringWrite checks, without sleeps, that a second appender
// cannot interleave while the first holds the lock between computing and
// writing its entry.
func TestLockHeldDuringWrite(t *testing.T) {
	l := newTestLedger(t)
	other, err := Open(l.home)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	l.testingOnlyBeforeWrite = func([]byte) {
		l.testingOnlyBeforeWrite = nil
		go func() {
			_, err := other.Append("s1", Record{Kind: KindToolCall, Tool: "second"})
			done <- err
		}()
		// The second append must still be waiting on the lock.
		select {
		case err := <-done:
			t.Errorf("second append finished inside the first's critical section: %v", err)
		default:
		}
	}
	if _, err := l.Append("s1", Record{Kind: KindToolCall, Tool: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	es, err := l.ReadVerified("s1")
	if err != nil || len(es) != 2 || es[0].Tool != "first" || es[1].Tool != "second" {
		t.Fatalf("entries = %v, %v", es, err)
	}
}
