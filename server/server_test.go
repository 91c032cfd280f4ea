package server_test

import (
	"io"
	"log/slog"
	"maps"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server"
)

// New keeps its own map of the targets: the caller's map holds the same
// targets after it as before.
func TestNewLeavesTargetsAlone(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	targets := simulated(t, cfg).Targets
	before := maps.Clone(targets)
	server.New(cfg, openJournal(t), targets, mustCatalog(t, cfg, targets), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !maps.EqualFunc(targets, before, func(a, b adapters.Target) bool { return a == b }) {
		t.Fatalf("New changed the caller's targets: %v, was %v", targets, before)
	}
}
