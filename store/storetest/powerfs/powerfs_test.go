//go:build linux

package powerfs_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store/storetest/powerfs"
)

// mount serves a new filesystem under the test's temporary directory. In
// CI a machine that cannot mount it fails the test; elsewhere it skips.
func mount(t *testing.T) (*powerfs.FS, string) {
	t.Helper()
	p := powerfs.New()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount(dir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: the power-loss tests need FUSE (/dev/fuse, root)", err)
		}
		t.Skipf("%v: the power-loss tests need FUSE (/dev/fuse, root)", err)
	}
	t.Cleanup(func() {
		if err := p.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return p, dir
}

// reboot cuts the power and mounts what survived.
func reboot(t *testing.T, p *powerfs.FS, dir string, tear *rand.Rand) powerfs.Cut {
	t.Helper()
	c := p.Cut(tear)
	if err := p.Unmount(); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount(dir); err != nil {
		t.Fatal(err)
	}
	return c
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

func writeSynced(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bytes written after a file's last fsync are gone after a cut; those
// before it stay.
func TestUnsyncedWritesAreLost(t *testing.T) {
	p, dir := mount(t)
	path := filepath.Join(dir, "a")
	writeSynced(t, path, "durable")
	syncDir(t, dir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" and lost"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := read(t, path); got != "durable and lost" {
		t.Fatalf("before the cut the file reads %q", got)
	}
	c := reboot(t, p, dir, nil)
	if got := read(t, path); got != "durable" {
		t.Errorf("after the cut the file reads %q, want only its synced bytes", got)
	}
	if c.Bytes != len(" and lost") {
		t.Errorf("cut reports %d bytes lost, want %d", c.Bytes, len(" and lost"))
	}
}

// A file created, renamed or removed comes back as it was at the
// directory's last fsync, whatever was synced of the file itself.
func TestUnsyncedEntriesAreLost(t *testing.T) {
	p, dir := mount(t)
	writeSynced(t, filepath.Join(dir, "kept"), "k")
	writeSynced(t, filepath.Join(dir, "moved"), "m")
	writeSynced(t, filepath.Join(dir, "removed"), "r")
	syncDir(t, dir)

	writeSynced(t, filepath.Join(dir, "new"), "synced file, unsynced entry")
	if err := os.Rename(filepath.Join(dir, "moved"), filepath.Join(dir, "renamed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "removed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	reboot(t, p, dir, nil)

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "kept moved removed" {
		t.Errorf("after the cut the directory lists %q, want %q", got, "kept moved removed")
	}
	if got := read(t, filepath.Join(dir, "removed")); got != "r" {
		t.Errorf("the removed file came back with %q", got)
	}

	// Synced, the same changes stay.
	writeSynced(t, filepath.Join(dir, "new"), "n")
	if err := os.Rename(filepath.Join(dir, "moved"), filepath.Join(dir, "renamed")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, dir)
	reboot(t, p, dir, nil)
	if got := read(t, filepath.Join(dir, "new")) + read(t, filepath.Join(dir, "renamed")); got != "nm" {
		t.Errorf("synced entries read %q after the cut", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "moved")); !os.IsNotExist(err) {
		t.Errorf("the old name of a synced rename: %v", err)
	}
}

// A torn last write keeps a prefix of it ending at a sector boundary.
func TestTornWrite(t *testing.T) {
	p, dir := mount(t)
	path := filepath.Join(dir, "torn")
	writeSynced(t, path, "")
	syncDir(t, dir)
	block := bytes.Repeat([]byte("x"), 8*powerfs.SectorSize)
	seen := map[int]bool{}
	for seed := range uint64(8) {
		if err := os.WriteFile(path, block, 0o644); err != nil {
			t.Fatal(err)
		}
		c := reboot(t, p, dir, rand.New(rand.NewPCG(seed, 1)))
		got := read(t, path)
		if c.Torn == 0 || c.Torn%powerfs.SectorSize != 0 || c.Torn >= len(block) || got != string(block[:c.Torn]) {
			t.Fatalf("seed %d: torn write kept %d bytes, file has %d", seed, c.Torn, len(got))
		}
		seen[c.Torn] = true
		writeSynced(t, path, "") // durable again: empty
	}
	if len(seen) < 2 {
		t.Errorf("eight tears all kept the same prefix: %v", seen)
	}
}

// SQLite's own commits, through the sqlite3 program: at synchronous=FULL
// a committed row survives the cut; at synchronous=OFF (no fsync) it does
// not. This is what makes the filesystem a test of a journal's promise.
func TestSQLiteCommitNeedsItsFsync(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("sqlite3 is not installed (.ci/run installs it)")
		}
		t.Skip("sqlite3 is not installed")
	}
	p, dir := mount(t)
	db := filepath.Join(dir, "j.db")
	sqlite := func(sql string) string {
		t.Helper()
		out, err := exec.Command("sqlite3", db, sql).CombinedOutput()
		if err != nil {
			t.Fatalf("sqlite3 %q: %v\n%s", sql, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	sqlite(`PRAGMA journal_mode=WAL; CREATE TABLE t(v);`)
	p.SyncAll()
	for _, c := range []struct{ sync string }{{"FULL"}, {"OFF"}} {
		// The value of the row is its mode; OFF's never reaches the disk.
		sqlite(`PRAGMA synchronous=` + c.sync + `; INSERT INTO t VALUES ('` + c.sync + `');`)
		if got := sqlite(`SELECT count(*) FROM t WHERE v = '` + c.sync + `'`); got != "1" {
			t.Fatalf("%s: the row reads %q before the cut", c.sync, got)
		}
		reboot(t, p, dir, nil)
		got := sqlite(`SELECT count(*) FROM t WHERE v = '` + c.sync + `'`)
		if want := map[string]string{"FULL": "1", "OFF": "0"}[c.sync]; got != want {
			t.Errorf("synchronous=%s: %s rows after the cut, want %s", c.sync, got, want)
		}
	}
	if s := p.Stats(); s.FileSyncs == 0 || s.DirSyncs == 0 {
		t.Errorf("sqlite3 never synced a file or a directory here: %+v", s)
	}
}
