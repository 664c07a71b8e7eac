// Package policywatch reloads a judge engine's policy set when its files
// change. It is apart from package judge so that the hooks, which judge
// one call and exit, do not link fsnotify.
package policywatch

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/docket/docket/judge"
)

// Watch reloads e's policy whenever a file in dirs changes,
// until ctx ends. Each reload calls load for a complete new snapshot and
// swaps it in atomically: a decision sees the old set or the new one,
// never a mix. A reload that fails puts the engine in the fail-closed
// state (every call is blocked as policy_invalid) until a later reload
// succeeds; onReload, when set, hears about every attempt. Directories
// that do not exist are skipped.
func Watch(ctx context.Context, e *judge.Engine, dirs []string, load func() (*judge.PolicySet, error), onReload func(*judge.PolicySet, error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	watched := 0
	for _, d := range dirs {
		if err := w.Add(filepath.Clean(d)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		watched++
	}
	if watched == 0 {
		return errors.New("watch policies: no directory to watch")
	}
	reload := func() {
		set, err := load()
		if err != nil {
			e.SetPolicyError(err)
		} else {
			e.SetPolicy(set)
		}
		if onReload != nil {
			onReload(set, err)
		}
	}
	// editors write in bursts (truncate, write, rename): settle first
	const settle = 50 * time.Millisecond
	var timer *time.Timer
	fire := make(chan struct{}, 1)
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Remove|fsnotify.Rename) == 0 {
				continue
			}
			if timer == nil {
				timer = time.AfterFunc(settle, func() {
					select {
					case fire <- struct{}{}:
					default:
					}
				})
			} else {
				timer.Reset(settle)
			}
		case <-fire:
			reload()
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if onReload != nil {
				onReload(nil, err)
			}
		}
	}
}
