package validators

import "github.com/docket/docket/internal/worktree"

// recordTree digests the project tree a validator is about to run in;
// Finish, after the run, gives what the entry records. With a ledger
// under a state root it uses that root's stat cache and keeps the
// manifest; the state root itself is never part of a tree.
func recordTree(l Ledger, cwd string) *worktree.Recording {
	return worktree.LedgerStore(l).Begin(cwd)
}
