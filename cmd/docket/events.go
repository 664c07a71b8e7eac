package main

import (
	"context"
	"fmt"
	"io"

	"github.com/docket/docket/server"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/sqlstore"
)

// cliEvents opens the event log `docket serve` streams, a table in the
// store's own database, so that a review or approval taken at the
// terminal reaches the console and every runtime's event stream like one
// taken through the API. Nil (after a warning) when it cannot be opened.
func cliEvents(ctx context.Context, s store.Store, stderr io.Writer) *server.EventLog {
	st, ok := s.(*sqlstore.Store)
	if !ok {
		return nil
	}
	ev, err := server.OpenEventLog(ctx, st.DB(), st.Postgres())
	if err != nil {
		fmt.Fprintf(stderr, "docket: warning: event stream: %v\n", err)
		return nil
	}
	return ev
}
