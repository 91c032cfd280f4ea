//go:build !windows

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive lock on the data directory for the life
// of serve, so a second serve on it refuses to start; migrate up and down
// and restore take it too. The other short commands (token, user, backup)
// do not, and work beside a running serve.
func lockDataDir(dir string) (func(), error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s)", errServing, dir)
		}
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	// Unlock before closing: a process another goroutine forks holds a
	// copy of the descriptor until it execs, and closing ours alone would
	// leave the lock held by that copy for a moment.
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
