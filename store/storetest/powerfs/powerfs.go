//go:build linux

package powerfs

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// SectorSize is the unit a torn write is cut at.
const SectorSize = 512

// FS is the filesystem's state: the files as a program sees them and, for
// each, what survives a power cut. It outlives its mounts: Cut, Unmount
// and Mount again is a machine losing power and booting.
type FS struct {
	mu      sync.Mutex
	root    *node
	nextIno uint64
	// frozen: the power is off; every operation fails until the next Mount.
	frozen bool
	// last is the latest write not yet covered by an fsync: the one a cut
	// can tear.
	last   *write
	stats  Stats
	server *fuse.Server
	dir    string
}

// node is a file or a directory.
type node struct {
	ino  uint64
	dir  bool
	mode uint32
	// A file's bytes as read, and as they survive a cut.
	data, synced []byte
	// A directory's entries as listed, and as they survive a cut.
	kids, syncedKids map[string]*node
}

type write struct {
	n    *node
	off  int64
	data []byte
}

// Stats counts what the programs on the filesystem asked of it.
type Stats struct {
	Writes, FileSyncs, DirSyncs int
}

// Cut is what one power cut threw away.
type Cut struct {
	// Bytes is how many bytes of file content differ from what a
	// program read just before the cut (lost writes and truncations);
	// Files says it per file (by its path from the root).
	Bytes int
	Files map[string]int
	// Entries is how many directory entries came or went back.
	Entries int
	// Torn is how many bytes of the last write were kept (0: not torn).
	Torn int
}

func (c Cut) String() string {
	return fmt.Sprintf("%d bytes and %d directory entries lost, %d bytes of a torn write kept", c.Bytes, c.Entries, c.Torn)
}

// New is an empty filesystem, its root directory durable.
func New() *FS {
	return &FS{root: &node{ino: 1, dir: true, mode: 0o755, kids: map[string]*node{}, syncedKids: map[string]*node{}}, nextIno: 2}
}

// Mount serves the filesystem at dir (which must exist). The kernel's
// caches start empty, as after a boot.
func (p *FS) Mount(dir string) error {
	p.mu.Lock()
	p.frozen = false
	p.mu.Unlock()
	sec := time.Second
	server, err := fs.Mount(dir, &dirNode{base{p: p, n: p.root}}, &fs.Options{
		MountOptions: fuse.MountOptions{
			DirectMount: true, FsName: "powerfs", Name: "powerfs",
			// Writes reach the filesystem when the program makes them;
			// the kernel keeps no dirty pages of its own to lose or flush.
			DisableXAttrs: true,
		},
		EntryTimeout: &sec, AttrTimeout: &sec,
	})
	if err != nil {
		return fmt.Errorf("mount powerfs at %s: %w", dir, err)
	}
	p.server, p.dir = server, dir
	return nil
}

// Unmount detaches the filesystem; programs that had files open on it
// must be gone (killed) first.
func (p *FS) Unmount() error {
	if p.server == nil {
		return nil
	}
	var err error
	for range 50 {
		if err = p.server.Unmount(); err == nil {
			p.server.Wait()
			p.server = nil
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Still busy: detach it lazily rather than leave a mount behind.
	if derr := syscall.Unmount(p.dir, syscall.MNT_DETACH); derr == nil {
		p.server.Wait()
		p.server = nil
		return nil
	}
	return fmt.Errorf("unmount powerfs at %s: %w", p.dir, err)
}

// Stats is what the filesystem was asked so far.
func (p *FS) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// SyncAll makes everything durable: the machine stayed up long enough
// for the operating system to write it all out.
func (p *FS) SyncAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var walk func(n *node)
	walk = func(n *node) {
		if !n.dir {
			n.synced = slices.Clone(n.data)
			return
		}
		n.syncedKids = maps.Clone(n.kids)
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(p.root)
	p.last = nil
}

// Cut loses power now: from this moment every operation on the mount
// fails with EIO, and the files become what was durable. With tear (non
// nil), the last unsynced write survives in part, cut at a sector
// boundary chosen by tear. Kill the programs using the mount, Unmount,
// and Mount again to boot on what survived.
func (p *FS) Cut(tear *rand.Rand) Cut {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
	c := Cut{Files: map[string]int{}}
	alive := map[*node]bool{}
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		alive[n] = true
		if !n.dir {
			if b := lost(n.data, n.synced); b > 0 {
				c.Bytes += b
				c.Files[path] = b
			}
			n.data = slices.Clone(n.synced)
			return
		}
		for name, k := range n.kids {
			if n.syncedKids[name] != k {
				c.Entries++
			}
		}
		for name, k := range n.syncedKids {
			if n.kids[name] != k {
				c.Entries++
			}
		}
		n.kids = maps.Clone(n.syncedKids)
		for name, k := range n.kids {
			walk(k, filepath.Join(path, name))
		}
	}
	walk(p.root, "")
	if w := p.last; tear != nil && w != nil && alive[w.n] {
		keep := len(w.data)
		var bounds []int
		for b := (w.off/SectorSize + 1) * SectorSize; b < w.off+int64(len(w.data)); b += SectorSize {
			bounds = append(bounds, int(b-w.off))
		}
		if len(bounds) > 0 {
			keep = bounds[tear.IntN(len(bounds))]
		} else if tear.IntN(2) == 0 {
			keep = 0
		}
		if keep > 0 {
			w.n.data = put(w.n.data, w.off, w.data[:keep])
			w.n.synced = slices.Clone(w.n.data)
			c.Torn = keep
		}
	}
	p.last = nil
	return c
}

// lost is how many bytes of now are not as they were durably.
func lost(now, synced []byte) int {
	n := 0
	for i := range max(len(now), len(synced)) {
		if i >= len(now) || i >= len(synced) || now[i] != synced[i] {
			n++
		}
	}
	return n
}

// Export writes the files as they are into dir, for a program in this
// process to read (a journal opened from there, not through the mount).
func (p *FS) Export(dir string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var walk func(n *node, path string) error
	walk = func(n *node, path string) error {
		if !n.dir {
			return os.WriteFile(path, n.data, os.FileMode(n.mode&0o777))
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			return err
		}
		for name, k := range n.kids {
			if err := walk(k, filepath.Join(path, name)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(p.root, dir)
}

// put writes b at off into data, growing it as needed.
func put(data []byte, off int64, b []byte) []byte {
	if end := off + int64(len(b)); end > int64(len(data)) {
		data = append(data, make([]byte, end-int64(len(data)))...)
	}
	copy(data[off:], b)
	return data
}

func (p *FS) newNode(dir bool, mode uint32) *node {
	n := &node{ino: p.nextIno, dir: dir, mode: mode & 0o7777}
	p.nextIno++
	if dir {
		n.kids, n.syncedKids = map[string]*node{}, map[string]*node{}
	}
	return n
}

func (n *node) attr(out *fuse.Attr) {
	out.Ino = n.ino
	out.Nlink = 1
	out.Blksize = 4096
	if n.dir {
		out.Mode = syscall.S_IFDIR | n.mode
		out.Nlink = 2
		return
	}
	out.Mode = syscall.S_IFREG | n.mode
	out.Size = uint64(len(n.data))
	out.Blocks = (out.Size + 511) / 512
}

// inode is the kernel's handle on n under parent.
func (p *FS) inode(ctx context.Context, parent *fs.Inode, n *node) *fs.Inode {
	if n.dir {
		return parent.NewInode(ctx, &dirNode{base{p: p, n: n}}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: n.ino})
	}
	return parent.NewInode(ctx, &fileNode{base{p: p, n: n}}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: n.ino})
}

func statfs(out *fuse.StatfsOut) {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	out.Blocks, out.Bfree, out.Bavail = 1<<24, 1<<23, 1<<23
	out.Files, out.Ffree = 1<<20, 1<<19
}
