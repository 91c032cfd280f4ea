package main

import (
	"regexp"
	"strings"
	"testing"
)

// bench loads the gateway and the reference for real and prints a row per
// path with its rate and latencies, and for new operations the journal's
// batches per second and writes per batch.
func TestBenchCommand(t *testing.T) {
	out := runBinary(t, nil, "bench", "--duration", "300ms", "--connections", "4")
	for _, path := range []string{"bare Echo (reference)", "replay of a final operation", "new operation (1C simulator)", "bare Echo (reference, again)"} {
		row := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, path) {
				row = l
			}
		}
		journal := `(-|[0-9]+ × [0-9.]+)`
		if strings.HasPrefix(path, "new operation") {
			journal = `[1-9][0-9]* × [0-9.]+`
		}
		if !regexp.MustCompile(`\s[1-9][0-9]*\s+[0-9]+\s+[0-9.]+[µm]?s\s+[0-9.]+[µm]?s\s+[0-9.]+×\s+` + journal + `$`).MatchString(row) {
			t.Errorf("no measured row for %q:\n%s", path, out)
		}
	}
}
