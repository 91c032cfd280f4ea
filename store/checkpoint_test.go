package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// The writer's COMMIT never waits for a checkpoint: a connection of its
// own copies what the batches wrote to the WAL into the journal's file
// soon after, long before SQLite's own automatic checkpoint (at 1000
// pages of WAL) would have. Read here from the file alone (immutable:
// the WAL unseen).
func TestCheckpointsBesideTheWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 10
	for i := range n {
		req := ClaimRequest{Key: fmt.Sprintf("test:invoice.create:ck-%d:v1", i), Intent: "invoice.create",
			Fingerprint: fmt.Sprintf("%064d", i), TargetSystem: "onec", Agent: "agent", Payload: []byte(`{}`),
			Owner: "run-1", Lease: time.Minute}
		if _, _, err := s.Claim(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	// A new connection each time: an immutable file's pages are cached.
	inFile := func() (got int) {
		file, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		file.QueryRow(`SELECT count(*) FROM operations`).Scan(&got)
		return got
	}
	got := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = inFile(); got == n {
			return
		}
	}
	t.Fatalf("the journal's file holds %d of %d committed operations: nothing checkpointed the WAL", got, n)
}
