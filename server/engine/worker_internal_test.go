package engine

import (
	"bytes"
	"context"
	"github.com/oncegate/oncegate/store/storetest"
	"log/slog"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters"
)

// A take that fails is logged with the key of the row it was for.
func TestReconcilerLogsKeyOfFailedTake(t *testing.T) {
	t.Parallel()
	e, st := scriptedEngine(t, storetest.SQLite, &scripted{lookup: func() (adapters.Result, error) { return adapters.Result{}, adapters.ErrNotFound }})
	var logged bytes.Buffer
	e.log = slog.New(slog.NewTextHandler(&logged, nil))
	const key = "test:payment.charge:take-fails:v1"
	op := claimed(t, e, st, key)
	// The journal cannot be written under a context that is done.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.reconcileOne(ctx, op)
	line := logged.String()
	if !strings.Contains(line, "reconciler: take operation") || !strings.Contains(line, "key="+key+" ") {
		t.Fatalf("log %q does not name the key %s", line, key)
	}
}
