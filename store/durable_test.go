//go:build !windows

package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// notYet reports whether ch stays empty for a moment: the call it waits
// for is still held.
func notYet(ch <-chan error) bool {
	select {
	case <-ch:
		return false
	case <-time.After(200 * time.Millisecond):
		return true
	}
}

// The pipelined commit: a write is answered only after the WAL's fsync
// that covers it, and an answer made from a read that saw it waits for
// that fsync too — though the read itself sees the commit at once.
func TestAnswersWaitForTheWALsFsync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t) // closed at cleanup, after the deferred release
	release, syncs := store.HoldSyncs(s)
	defer release() // before Close, should the test fail while held

	var secret string
	wrote := make(chan error, 1)
	go func() {
		var err error
		secret, _, err = s.CreateToken(ctx, "agent-a", []string{"read"})
		wrote <- err
	}()
	if !notYet(wrote) {
		t.Fatal("a write was answered before the WAL's fsync")
	}

	// A reader sees the committed row now; an answer made from that read
	// is held until the fsync.
	read := store.MarkReads(ctx)
	var n int
	for n == 0 {
		toks, err := s.ListTokens(read)
		if err != nil {
			t.Fatal(err)
		}
		n = len(toks)
	}
	settled := make(chan error, 1)
	go func() { settled <- s.Settle(read) }()
	if !notYet(settled) {
		t.Fatal("an answer from a read of an unsynced commit was let out before the fsync")
	}
	// A request that read nothing is not held.
	if err := s.Settle(store.MarkReads(ctx)); err != nil {
		t.Fatal(err)
	}
	// An answer from what an earlier read kept in memory (a replay from
	// the cache) is held as the read is.
	mem := store.MarkReads(ctx)
	store.NoteRead(mem)
	fromMemory := make(chan error, 1)
	go func() { fromMemory <- s.Settle(mem) }()
	if !notYet(fromMemory) {
		t.Fatal("an answer from memory of an unsynced commit was let out before the fsync")
	}

	release()
	if err := <-wrote; err != nil || secret == "" {
		t.Fatalf("the write after its fsync: %v", err)
	}
	if err := <-settled; err != nil {
		t.Fatalf("the read's answer after the fsync: %v", err)
	}
	if err := <-fromMemory; err != nil {
		t.Fatalf("the answer from memory after the fsync: %v", err)
	}
	if syncs.Load() == 0 {
		t.Fatal("no fsync of the WAL ran")
	}
}

// An fsync that fails: the writes it was to cover are answered as not
// durable, later writes are refused, and a read's answer is not let out.
func TestFailedFsyncStopsTheJournal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t) // closed at cleanup, after the deferred release
	store.FailSyncs(s, errors.New("input/output error"))
	if _, _, err := s.CreateToken(ctx, "agent-a", []string{"read"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a write whose fsync failed: %v, want ErrUnavailable", err)
	}
	read := store.MarkReads(ctx)
	if _, err := s.ListTokens(read); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(read); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a read's answer after a failed fsync: %v, want ErrUnavailable", err)
	}
	if _, _, err := s.CreateToken(ctx, "agent-b", []string{"read"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a write after a failed fsync: %v, want ErrUnavailable", err)
	}
}

// While a commit's fsync runs, the writes that queue meanwhile are taken
// into one transaction, committed once the fsync returned, rather than
// committed one by one (each commit writes the pages they share again);
// a write of that batch that fails is undone alone.
func TestWritesGatherDuringTheFsync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t) // closed at cleanup, after the deferred release
	release, _ := store.HoldSyncs(s)
	defer release()

	first := make(chan error, 1)
	go func() {
		_, _, err := s.CreateToken(ctx, "agent-first", []string{"read"})
		first <- err
	}()
	for s.WriteStats().Batches < 1 {
		time.Sleep(time.Millisecond)
	}
	before := s.WriteStats()

	// Five tokens and the same user twice, one after the other, each
	// taken by the writer before the next is sent, while the first
	// fsync is held.
	const tokens = 5
	done := make(chan error, tokens+2)
	for i := range tokens + 2 {
		go func() {
			var err error
			if i < tokens {
				_, _, err = s.CreateToken(ctx, "agent-"+string(rune('a'+i)), []string{"read"})
			} else {
				_, err = s.CreateUser(ctx, "anna", store.RoleAccountant, "a long enough password")
			}
			done <- err
		}()
		for s.WriteStats().Writes < before.Writes+int64(i)+1 {
			time.Sleep(time.Millisecond)
		}
	}
	release()

	if err := <-first; err != nil {
		t.Fatal(err)
	}
	var conflicts int
	for range tokens + 2 {
		switch err := <-done; {
		case errors.Is(err, store.ErrConflict):
			conflicts++
		case err != nil:
			t.Fatal(err)
		}
	}
	if conflicts != 1 {
		t.Fatalf("%d writes refused as a conflict, want the second user alone", conflicts)
	}
	if got, want := s.WriteStats().Batches-before.Batches, int64(1); got != want {
		t.Fatalf("the writes queued during the fsync took %d commits, want %d", got, want)
	}
	toks, err := s.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	users, err := s.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != tokens+1 || len(users) != 1 {
		t.Fatalf("%d tokens and %d users in the journal, want %d and 1", len(toks), len(users), tokens+1)
	}
}
