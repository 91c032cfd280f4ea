package store

import (
	"context"
	"errors"
	"io"
)

// Backup writes a consistent copy of the journal to path, which must not
// exist yet; serve may keep running meanwhile. A journal on PostgreSQL is
// dumped by pg_dump (custom format, for pg_restore) when it is installed.
func (s *Store) Backup(ctx context.Context, path string) error {
	return s.be.backup(ctx, s, path)
}

// Restored is what Restore did.
type Restored struct {
	Version uint   // the restored journal's schema version
	Kept    string // where the replaced journal was set aside; "" when there was none
}

// Restore puts the backup file in place of the SQLite journal at journal.
// No gateway or command may have the journal open: the caller holds
// serve's lock throughout. The backup is copied beside the journal first
// and checked there (the file named stays as it was): SQLite's integrity
// check, and a schema this binary knows (older is fine, serve migrates it
// up; newer is refused). The journal it replaces is checkpointed, so its
// -wal holds nothing, and kept as journal.db.replaced-<time>. Before
// anything is swapped it tells out how recent each is; a journal with
// operations newer than the backup's is replaced only with replaceNewer,
// for the restored journal forgets them.
func Restore(ctx context.Context, journal, file string, replaceNewer bool, out io.Writer) (Restored, error) {
	if IsPostgres(journal) {
		return Restored{}, errors.New("restore: the journal is in PostgreSQL: restore a pg_dump backup with pg_restore (oncegate backup makes one with pg_dump)")
	}
	return restoreSQLite(ctx, journal, file, replaceNewer, out)
}
