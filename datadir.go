package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/oncegate/oncegate/store"
)

// journalMarker is the file in the data directory that says a journal was
// made there. A journal that is gone while its marker stays was lost
// (deleted, moved, a disk swapped): a new one would forget every key and
// let each execute again, so no command makes one in its place.
const journalMarker = "journal.created"

// errJournalMissing: the data directory held a journal that is gone.
var errJournalMissing = errors.New("the journal is missing")

// journalNotLost refuses to begin a new embedded journal in a data
// directory whose journal was lost: its marker is there, and the journal
// is missing or empty (store.HoldsJournal). The
// operator restores it, or starts serve with --new-journal to begin again.
// A journal on PostgreSQL has no data directory to tell.
func journalNotLost(ctx context.Context, dataDir, journal string) error {
	if store.IsPostgres(journal) {
		return nil
	}
	marker, err := os.ReadFile(filepath.Join(dataDir, journalMarker))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if store.HoldsJournal(ctx, journal) {
		return nil
	}
	return fmt.Errorf("%w: %s held an oncegate journal (%s says: %s) but %s is gone or empty. "+
		"Every key it knew would execute again with a new one, so none is made: put the journal back from a backup "+
		"(oncegate restore --data %s BACKUP), or, to begin a new, empty journal on purpose, start serve once with --new-journal",
		errJournalMissing, dataDir, journalMarker, firstLine(marker), filepath.Base(journal), dataDir)
}

// markJournal writes the data directory's marker once its journal exists;
// an existing marker is kept.
func markJournal(dataDir, journal string) error {
	if store.IsPostgres(journal) {
		return nil
	}
	return writeMarker(dataDir, false)
}

// writeMarker writes the marker, replacing one there when replace is set
// (a journal begun anew, or restored).
func writeMarker(dataDir string, replace bool) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_EXCL
	if replace {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	f, err := os.OpenFile(filepath.Join(dataDir, journalMarker), flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	fmt.Fprintf(f, "journal.db made or restored here at %s; if it is ever missing, restore it from a backup (oncegate restore) instead of starting a new one\n",
		time.Now().UTC().Format(time.RFC3339))
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	syncDir(dataDir)
	return nil
}

// firstLine is b's first line.
func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// noJournalYet refuses serve --new-journal where a journal is in place:
// the flag begins again only where one was lost, so one left in a
// service's command line never replaces a journal.
func noJournalYet(ctx context.Context, journal string) error {
	if store.IsPostgres(journal) {
		return errors.New("--new-journal is for the embedded journal; a journal on PostgreSQL is made by its database")
	}
	if store.HoldsJournal(ctx, journal) {
		return fmt.Errorf("--new-journal: a journal is in place at %s and is not replaced; start serve without --new-journal", journal)
	}
	return nil
}

// syncDir makes renames in dir durable where the system allows it.
func syncDir(dir string) {
	if d, err := os.Open(filepath.Clean(dir)); err == nil {
		d.Sync()
		d.Close()
	}
}
