//go:build !unix

package worktree

import "errors"

func syscallMkfifo(string) error { return errors.New("unsupported") }
