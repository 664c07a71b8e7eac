package validators_test

import (
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/validators"
	"github.com/docket/docket/validators/validatorstest"
)

func TestMemLedger(t *testing.T) {
	var l validators.MemLedger // the zero value works
	validatorstest.TestLedger(t, &l)
}

func TestRealLedger(t *testing.T) {
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	validatorstest.TestLedger(t, l)
}
