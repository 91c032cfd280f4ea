package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The SQLite journal's restore: a backup file checked and swapped in for
// the journal (Restore).

// restoreSQLite is Restore on SQLite.
func restoreSQLite(ctx context.Context, journal, file string, replaceNewer bool, out io.Writer) (Restored, error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	staging := journal + ".restoring-" + stamp
	if err := copyNew(file, staging); err != nil {
		return Restored{}, fmt.Errorf("restore: copy the backup: %w", err)
	}
	placed := false
	defer func() {
		if !placed {
			removeDB(staging)
		}
	}()
	version, ops, err := checkBackup(ctx, file, staging)
	if err != nil {
		return Restored{}, err
	}
	fmt.Fprintf(out, "backup %s checked: integrity ok, schema version %d (this oncegate's: %d), %d operations\n",
		file, version, LatestVersion(), ops)
	inBackup, err := compareNewest(ctx, out, staging, journal, replaceNewer)
	if err != nil {
		return Restored{}, err
	}
	// The restored journal records its restore: from it the gateway knows
	// that keys it has not seen may have been sent after the backup. Who
	// may act is the firm's decision as it stands now, not as it stood
	// then: the replaced journal's tokens and users are carried over.
	access, err := recordRestore(ctx, staging, filepath.Base(file), inBackup, journal)
	if err != nil {
		return Restored{}, err
	}
	access.report(out)
	version = uint(LatestVersion()) // recording it brought the schema up

	kept := ""
	if _, err := os.Stat(journal); err == nil {
		kept = nextFree(journal + ".replaced-" + stamp)
		if err := setAside(ctx, journal, kept); err != nil {
			return Restored{}, err
		}
	}
	if err := os.Rename(staging, journal); err != nil {
		if kept != "" {
			// Put the journal back as it was.
			renameDB(kept, journal)
		}
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	placed = true
	syncDir(filepath.Dir(journal))
	return Restored{Version: version, Kept: kept}, nil
}

// checkBackup checks the copy of a backup: a SQLite database that passes
// its integrity check, holding an oncegate journal whose schema this
// binary can run. It returns the schema version and the operations held.
// Errors name the file as the user gave it.
func checkBackup(ctx context.Context, file, copyPath string) (uint, int, error) {
	db, err := sql.Open("sqlite", "file:"+copyPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return 0, 0, fmt.Errorf("restore: %w", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		if isCorrupt(err) {
			return 0, 0, fmt.Errorf("restore: %s is damaged (%v); nothing was changed", file, err)
		}
		return 0, 0, fmt.Errorf("restore: %s is not an oncegate journal (SQLite cannot read it: %v); nothing was changed", file, err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("restore: integrity check of %s: %w", file, err)
		}
		problems = append(problems, line)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("restore: %s is damaged (%v); nothing was changed", file, err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		if len(problems) > 3 {
			problems = append(problems[:3], "…")
		}
		return 0, 0, fmt.Errorf("restore: %s is damaged: SQLite's integrity check found %s; nothing was changed", file, strings.Join(problems, "; "))
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('schema_migrations', 'operations')`).Scan(&tables); err != nil || tables != 2 {
		return 0, 0, fmt.Errorf("restore: %s is a SQLite database but not an oncegate journal (no operations or schema version); nothing was changed", file)
	}
	var ops int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM operations`).Scan(&ops); err != nil {
		return 0, 0, fmt.Errorf("restore: read %s: %w", file, err)
	}
	db.Close()

	version, err := Migrate(ctx, copyPath, "version")
	if err != nil {
		return 0, 0, fmt.Errorf("restore: %s: %w; nothing was changed", file, err)
	}
	if latest := LatestVersion(); int(version) > latest {
		return 0, 0, fmt.Errorf("restore: %s has schema version %d, newer than this oncegate's %d: restore it with the oncegate that made it (or a newer one); nothing was changed", file, version, latest)
	}
	if version == 0 {
		return 0, 0, fmt.Errorf("restore: %s holds no schema version; nothing was changed", file)
	}
	return version, ops, nil
}

// compareNewest prints when the backup's newest operation and the
// journal's were last written, and refuses, unless replaceNewer, to
// replace a journal whose newest is newer: the operations after the
// backup would be forgotten, and a key an agent sends again would execute
// again at a target that does not deduplicate keys itself.
func compareNewest(ctx context.Context, out io.Writer, backup, journal string, replaceNewer bool) (time.Time, error) {
	inBackup, err := newestOperation(ctx, backup)
	if err != nil {
		return time.Time{}, err
	}
	fmt.Fprintf(out, "the backup's newest operation: %s\n", describeTime(inBackup))
	if _, err := os.Stat(journal); err != nil {
		return inBackup, nil // nothing is replaced
	}
	inJournal, err := newestOperation(ctx, journal)
	if err != nil {
		return time.Time{}, fmt.Errorf("restore: read the current journal: %w (nothing was changed)", err)
	}
	fmt.Fprintf(out, "the journal's newest operation:  %s\n", describeTime(inJournal))
	if !inJournal.After(inBackup) {
		return inBackup, nil
	}
	if !replaceNewer {
		return time.Time{}, fmt.Errorf("restore: the journal being replaced has operations newer than the backup's (%s after it): "+
			"the restored journal forgets them, and a key an agent sends again executes again at a target that does not deduplicate keys itself (Bitrix24); "+
			"run restore again with --yes to replace it anyway (it is kept beside the restored one); nothing was changed",
			inJournal.Sub(inBackup).Round(time.Second))
	}
	fmt.Fprintln(out, "--yes: the operations after the backup's newest are forgotten by the restored journal (the replaced one is kept); "+
		"serve looks each key it does not know up at its target before sending it, so one sent again is not made twice")
	return inBackup, nil
}

// newestOperation is when the journal at path last wrote an operation;
// zero when it holds none.
func newestOperation(ctx context.Context, path string) (time.Time, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return time.Time{}, err
	}
	defer db.Close()
	var newest sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT max(updated_at) FROM operations`).Scan(&newest); err != nil {
		return time.Time{}, err
	}
	if !newest.Valid {
		return time.Time{}, nil
	}
	return time.Parse(timeFormat, newest.String)
}

// describeTime is a time for restore's report.
func describeTime(t time.Time) string {
	if t.IsZero() {
		return "none (no operations)"
	}
	return t.UTC().Format(time.RFC3339)
}

// isCorrupt reports whether SQLite found the database malformed.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CORRUPT
}

// setAside moves the journal to kept with its -wal and -shm. It first
// checkpoints the journal, so all it holds is in the main file; a -wal
// still there once this, the last connection, closed means another
// oncegate command has the journal open, and nothing is moved.
func setAside(ctx context.Context, journal, kept string) error {
	db, err := sql.Open("sqlite", "file:"+journal+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("restore: open the current journal: %w", err)
	}
	var busy, frames, done int
	err = db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done)
	db.Close()
	if err != nil {
		return fmt.Errorf("restore: checkpoint the current journal: %w", err)
	}
	if busy != 0 {
		return errors.New("restore: another oncegate command is using the journal; try again when it has finished (nothing was changed)")
	}
	if fi, err := os.Stat(journal + "-wal"); err == nil && fi.Size() > 0 {
		return errors.New("restore: another oncegate command has the journal open; try again when it has finished (nothing was changed)")
	}
	if err := renameDB(journal, kept); err != nil {
		return fmt.Errorf("restore: set the current journal aside: %w", err)
	}
	return nil
}

// renameDB renames a SQLite database file with its -wal and -shm, which
// SQLite finds by the database's name.
func renameDB(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Rename(from+suffix, to+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// removeDB removes a database file and its -wal and -shm.
func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// nextFree is path, or path with a number after it when path is taken.
func nextFree(path string) string {
	p := path
	for n := 2; ; n++ {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		p = fmt.Sprintf("%s-%d", path, n)
	}
}

// copyNew copies src to dst, which must not exist yet; dst is its
// owner's only (it holds token and password hashes) and on disk before
// copyNew returns.
func copyNew(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := errors.Join(out.Sync(), out.Close()); err != nil {
		os.Remove(dst)
		return err
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

// HoldsJournal reports whether the file at path is a database with
// anything in it. A connection opened on a journal deleted under a running
// gateway leaves a new, empty database in its place; that is no journal.
// A file that cannot be read counts as one: opening it says what is wrong.
func HoldsJournal(ctx context.Context, path string) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return err != nil && !errors.Is(err, fs.ErrNotExist)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return true
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		return true
	}
	return n > 0
}

// restoreEvent is the audit event a restored journal records.
const restoreEvent = "journal.restored"

// recordRestore opens the checked copy of a backup at path (bringing its
// schema up), carries into it who may act from the journal it replaces
// (carryAccess; none when there is no journal), and records in it that it
// is being restored, with when the backup's newest operation was written
// and what was carried.
func recordRestore(ctx context.Context, path, backup string, newest time.Time, replaced string) (accessCarried, error) {
	st, err := openSQLite(ctx, path)
	if err != nil {
		return accessCarried{}, fmt.Errorf("restore: open the backup's copy: %w; nothing was changed", err)
	}
	defer st.Close()
	var access accessCarried
	if _, err := os.Stat(replaced); err == nil {
		if access, err = carryAccess(ctx, st, replaced); err != nil {
			return accessCarried{}, fmt.Errorf("restore: carry the agents' tokens and the users over from the journal being replaced: %w; nothing was changed", err)
		}
	}
	detail := map[string]any{"backup": backup, "backup_newest_operation": formatTime(newest), "access_carried": access.carried}
	if access.carried {
		detail["tokens_revoked_since_backup"], detail["tokens_made_since_backup"] = access.revoked, access.madeTokens
		detail["users_removed_since_backup"], detail["users_made_since_backup"], detail["users_changed_since_backup"] = access.removed, access.madeUsers, access.changed
	}
	ctx = WithActor(ctx, Actor{Kind: ActorSystem, Name: "restore"})
	if err := st.Audit(ctx, restoreEvent, "", detail); err != nil {
		return accessCarried{}, fmt.Errorf("restore: record the restore in the backup's copy: %w; nothing was changed", err)
	}
	return access, nil
}

// accessCarried is what carryAccess did, by name (never a secret).
type accessCarried struct {
	carried               bool
	revoked, madeTokens   []string // agents
	removed, madeUsers    []string // user names
	changed               []string // users whose role, password or state changed since the backup
	tokens, users, ending int      // carried; sessions ended
}

// report tells restore's user what was kept and what rolled back.
func (a accessCarried) report(out io.Writer) {
	if !a.carried {
		fmt.Fprintln(out, "no journal is replaced: the backup's agent tokens and users are restored as they were")
		return
	}
	fmt.Fprintf(out, "kept from the journal being replaced (who may act is decided now, not as at the backup): %d agent tokens, %d users", a.tokens, a.users)
	for _, l := range []struct {
		what  string
		names []string
	}{{"tokens revoked since the backup, still revoked", a.revoked}, {"tokens made since the backup", a.madeTokens},
		{"users removed since the backup, still removed", a.removed}, {"users made since the backup", a.madeUsers},
		{"users whose role, password or state changed since the backup, as they are now", a.changed}} {
		if len(l.names) > 0 {
			fmt.Fprintf(out, "; %s: %s", l.what, strings.Join(l.names, ", "))
		}
	}
	fmt.Fprintf(out, "\nrolled back to the backup: operations, approvals and the audit trail; every admin session ends (%d), everyone signs in again\n", a.ending)
}

// carryAccess replaces, in the restored journal st, the agents' tokens and
// the users with those of the journal at replaced, and ends every admin
// session: a restore rolls back operations, never a revocation, a removed
// user or a changed password. The columns both journals have are copied
// (a replaced journal of an older schema leaves the newer columns at their
// defaults).
func carryAccess(ctx context.Context, st *Store, replaced string) (accessCarried, error) {
	var a accessCarried
	err := st.exclusive(ctx, func(ctx context.Context, c *sql.Conn) (err error) {
		if _, err := c.ExecContext(ctx, `ATTACH DATABASE ? AS replaced`, "file:"+replaced+"?mode=ro"); err != nil {
			return err
		}
		defer func() {
			if _, derr := c.ExecContext(context.Background(), `DETACH DATABASE replaced`); err == nil {
				err = derr
			}
		}()
		if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				c.ExecContext(context.Background(), `ROLLBACK`)
			}
		}()
		names := func(q string) ([]string, error) {
			rows, err := c.QueryContext(ctx, q)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					return nil, err
				}
				out = append(out, n)
			}
			return out, rows.Err()
		}
		for _, q := range []struct {
			into  *[]string
			query string
		}{
			{&a.revoked, `SELECT r.agent FROM replaced.tokens r JOIN main.tokens m ON m.id = r.id WHERE r.revoked_at IS NOT NULL AND m.revoked_at IS NULL ORDER BY r.id`},
			{&a.madeTokens, `SELECT agent FROM replaced.tokens WHERE id NOT IN (SELECT id FROM main.tokens) ORDER BY id`},
			{&a.removed, `SELECT name FROM main.users WHERE id NOT IN (SELECT id FROM replaced.users) ORDER BY id`},
			{&a.madeUsers, `SELECT name FROM replaced.users WHERE id NOT IN (SELECT id FROM main.users) ORDER BY id`},
			{&a.changed, `SELECT r.name FROM replaced.users r JOIN main.users m ON m.id = r.id
				WHERE r.role <> m.role OR r.password_hash <> m.password_hash OR coalesce(r.disabled_at, '') <> coalesce(m.disabled_at, '') ORDER BY r.id`},
		} {
			if *q.into, err = names(q.query); err != nil {
				return err
			}
		}
		res, err := c.ExecContext(ctx, `DELETE FROM main.sessions`)
		if err != nil {
			return err
		}
		ended, _ := res.RowsAffected()
		a.ending = int(ended)
		for _, table := range []string{"tokens", "users"} {
			cols, err := commonColumns(ctx, c, table)
			if err != nil {
				return err
			}
			if _, err := c.ExecContext(ctx, `DELETE FROM main.`+table); err != nil {
				return err
			}
			res, err := c.ExecContext(ctx, `INSERT INTO main.`+table+` (`+cols+`) SELECT `+cols+` FROM replaced.`+table)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			if table == "tokens" {
				a.tokens = int(n)
			} else {
				a.users = int(n)
			}
		}
		if _, err := c.ExecContext(ctx, `COMMIT`); err != nil {
			return err
		}
		a.carried = true
		return nil
	})
	return a, err
}

// commonColumns are the columns of table that both the restored journal
// and the replaced one have, as a list for a statement.
func commonColumns(ctx context.Context, c *sql.Conn, table string) (string, error) {
	columns := func(schema string) (map[string]bool, []string, error) {
		rows, err := c.QueryContext(ctx, `SELECT name FROM pragma_table_info(?, ?)`, table, schema)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		set, list := map[string]bool{}, []string(nil)
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return nil, nil, err
			}
			set[n], list = true, append(list, n)
		}
		return set, list, rows.Err()
	}
	_, mine, err := columns("main")
	if err != nil {
		return "", err
	}
	theirs, _, err := columns("replaced")
	if err != nil {
		return "", err
	}
	var common []string
	for _, n := range mine {
		if theirs[n] {
			common = append(common, n)
		}
	}
	if len(common) == 0 {
		return "", fmt.Errorf("the journal being replaced has no %s table", table)
	}
	return strings.Join(common, ", "), nil
}

// RestoreRecord is a restore the journal recorded: when it was restored, and
// when the backup's newest operation was written (zero: the backup held
// none).
type RestoreRecord struct {
	At, BackupNewest time.Time
}

// LastRestore is the journal's last recorded restore; false when it was
// never restored.
func (s *Store) LastRestore(ctx context.Context) (RestoreRecord, bool, error) {
	events, err := s.AuditEvents(ctx, AuditFilter{Event: restoreEvent, Limit: 1})
	if err != nil || len(events) == 0 {
		return RestoreRecord{}, false, err
	}
	var d struct {
		Newest string `json:"backup_newest_operation"`
	}
	if err := json.Unmarshal(events[0].Detail, &d); err != nil {
		return RestoreRecord{}, false, fmt.Errorf("read the last restore: %w", err)
	}
	newest, _ := time.Parse(timeFormat, d.Newest)
	return RestoreRecord{At: events[0].At, BackupNewest: newest}, true, nil
}
