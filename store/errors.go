package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors of the store. Callers match them with errors.Is.
var (
	// ErrNotFound: no such row.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness rule refused the write.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input breaks a rule of the journal.
	ErrInvalid = errors.New("invalid")
	// ErrLeaseLost: the caller no longer holds the operation's lease (it
	// expired and another attempt took it, or the row moved on), so its
	// transition was refused.
	ErrLeaseLost = errors.New("lease lost")
)

// IsBusy reports whether err is SQLite's "database is locked": another
// process held the journal's write lock for longer than the busy timeout
// (a command run beside a gateway that writes without pause, say). Nothing
// was written; the same call can simply be tried again.
func IsBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// Unavailable reports whether err means the journal could not be read or
// written: ErrUnavailable of a write, or a read that failed for the
// journal itself — its server gone or not answering, its file failing or
// locked, no answer before the deadline — rather than for what was asked.
// The request it served learned nothing of the journal and changed
// nothing there.
func Unavailable(err error) bool {
	return err != nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		pgFailure(err) || sqliteFailure(err))
}

// sqliteFailure reports whether err is SQLite failing for its file: busy
// or locked past the timeout, an I/O error, a full disk, a file it cannot
// open, read or trust.
func sqliteFailure(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// interpretError maps driver errors onto the sentinels.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return errors.Join(ErrConflict, err)
		case "23514", "23502": // check_violation, not_null_violation
			return errors.Join(ErrInvalid, err)
		}
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return errors.Join(ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_CHECK, sqlite3.SQLITE_CONSTRAINT_NOTNULL:
			return errors.Join(ErrInvalid, err)
		}
	}
	return err
}
