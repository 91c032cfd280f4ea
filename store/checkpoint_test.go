package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openFile opens a new journal file, closed when the test ends.
func openFile(t *testing.T) (string, *Store) {
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return path, s
}

// newClaim is the claim of a new invoice under key name.
func newClaim(name string, i int) ClaimRequest {
	return ClaimRequest{Key: "test:invoice.create:" + name + ":v1", Intent: "invoice.create",
		Fingerprint: fmt.Sprintf("%064d", i), TargetSystem: "onec", Agent: "agent", Payload: []byte(`{}`),
		Owner: "run-1", Lease: time.Minute}
}

// The writer's COMMIT never waits for a checkpoint: a connection of its
// own copies what the batches wrote to the WAL into the journal's file
// soon after, long before SQLite's own automatic checkpoint (at 1000
// pages of WAL) would have. Read here from the file alone (immutable:
// the WAL unseen).
func TestCheckpointsBesideTheWriter(t *testing.T) {
	t.Parallel()
	path, s := openFile(t)
	const n = 10
	for i := range n {
		if _, _, err := s.Claim(context.Background(), newClaim(fmt.Sprintf("ck-%d", i), i)); err != nil {
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

// Under writes that never pause, the WAL starts again from its beginning
// after checkpoints, as it does when the load pauses: it does not grow
// for as long as the load lasts (and is not all read again at the next
// start). Each start again counts up the checkpoint sequence in the WAL's
// header.
func TestWALStartsAgainUnderSteadyWrites(t *testing.T) {
	t.Parallel()
	path, s := openFile(t)
	restarts := func() (uint32, int64) {
		f, err := os.Open(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var h [16]byte
		if _, err := io.ReadFull(f, h[:]); err != nil {
			return 0, 0 // not written yet
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return binary.BigEndian.Uint32(h[12:]), fi.Size()
	}
	ctx, stop := context.WithCancel(context.Background())
	var writers sync.WaitGroup
	var written atomic.Int64
	for w := range 8 {
		writers.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				if _, _, err := s.Claim(context.Background(), newClaim(fmt.Sprintf("steady-%d-%d", w, i), i)); err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
			}
		})
	}
	defer func() {
		stop()
		writers.Wait()
	}()
	for written.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	first, _ := restarts()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if seq, _ := restarts(); seq >= first+2 {
			return
		}
	}
	seq, size := restarts()
	t.Fatalf("under steady writes the WAL started again %d times in 20 s and grew to %d bytes (%d operations written)", seq-first, size, written.Load())
}
