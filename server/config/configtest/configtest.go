// Package configtest gives tests of the configuration, and of the commands
// that load one, a configuration file and an environment.
package configtest

import (
	"os"
	"path/filepath"
	"testing"
)

// NoEnv is an environment with nothing set.
func NoEnv(string) string { return "" }

// Write writes a configuration file of body, oncegate.yaml readable by its
// owner alone in a directory of tb's own, and returns its path.
func Write(tb testing.TB, body string) string {
	tb.Helper()
	return WriteFile(tb, tb.TempDir(), "oncegate.yaml", body, 0o600)
}

// WriteFile writes a file of body named name into dir with perm, and
// returns its path: a configuration beside its env file, or one a
// service's own user must be able to read.
func WriteFile(tb testing.TB, dir, name, body string, perm os.FileMode) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), perm); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Dir writes files (name → content) into a new directory of tb's own,
// readable by their owner alone, and returns it: an intents_dir of
// definitions.
func Dir(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, body := range files {
		WriteFile(tb, dir, name, body, 0o600)
	}
	return dir
}
