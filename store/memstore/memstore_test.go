package memstore_test

import (
	"testing"

	"github.com/docket/docket/store"
	"github.com/docket/docket/store/memstore"
	"github.com/docket/docket/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) store.Store { return new(memstore.Store) })
}

func TestZeroValue(t *testing.T) {
	var s memstore.Store
	if _, err := s.ListApprovals(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
}
