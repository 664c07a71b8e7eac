//go:build !linux

package policies

import "github.com/docket/docket/internal/home"

// The approval cache needs ctime (approvalcache.go); elsewhere every
// check runs in full.

type approvalSnapshot struct{}

func approvalCached(home.Home) bool               { return false }
func snapshotApproval(home.Home) approvalSnapshot { return approvalSnapshot{} }
func cacheApproval(home.Home, approvalSnapshot)   {}
