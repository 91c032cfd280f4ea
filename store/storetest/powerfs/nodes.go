//go:build linux

package powerfs

import (
	"context"
	"maps"
	"slices"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The kernel's view: one node type for directories, one for files, both
// reading and changing the FS's state under its lock. While the power is
// off (frozen) every operation fails with EIO and changes nothing.

// base is what both kinds share: the FS and the node in it, its
// attributes, its fsync and the filesystem's numbers.
type base struct {
	fs.Inode
	p *FS
	n *node
}

type dirNode struct{ base }

type fileNode struct{ base }

var (
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
	_ fs.NodeSetattrer = (*dirNode)(nil)
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeFsyncer   = (*dirNode)(nil)
	_ fs.NodeStatfser  = (*dirNode)(nil)

	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeReader    = (*fileNode)(nil)
	_ fs.NodeWriter    = (*fileNode)(nil)
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
	_ fs.NodeFsyncer   = (*fileNode)(nil)
	_ fs.NodeFlusher   = (*fileNode)(nil)
	_ fs.NodeStatfser  = (*fileNode)(nil)
)

// lock takes the FS's lock; off reports the power off (the lock is then
// not held).
func (p *FS) lock() (off bool) {
	p.mu.Lock()
	if p.frozen {
		p.mu.Unlock()
		return true
	}
	return false
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.p.lock() {
		return nil, syscall.EIO
	}
	defer d.p.mu.Unlock()
	k := d.n.kids[name]
	if k == nil {
		return nil, syscall.ENOENT
	}
	k.attr(&out.Attr)
	return d.p.inode(ctx, d.EmbeddedInode(), k), 0
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if d.p.lock() {
		return nil, syscall.EIO
	}
	defer d.p.mu.Unlock()
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range d.n.kids {
			if !yield(name) {
				return
			}
		}
	})
	entries := make([]fuse.DirEntry, 0, len(names))
	for _, name := range names {
		k := d.n.kids[name]
		mode := uint32(syscall.S_IFREG)
		if k.dir {
			mode = syscall.S_IFDIR
		}
		entries = append(entries, fuse.DirEntry{Name: name, Ino: k.ino, Mode: mode})
	}
	return fs.NewListDirStream(entries), 0
}

func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if d.p.lock() {
		return nil, nil, 0, syscall.EIO
	}
	defer d.p.mu.Unlock()
	if d.n.kids[name] != nil {
		return nil, nil, 0, syscall.EEXIST
	}
	k := d.p.newNode(false, mode)
	d.n.kids[name] = k
	k.attr(&out.Attr)
	return d.p.inode(ctx, d.EmbeddedInode(), k), nil, 0, 0
}

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.p.lock() {
		return nil, syscall.EIO
	}
	defer d.p.mu.Unlock()
	if d.n.kids[name] != nil {
		return nil, syscall.EEXIST
	}
	k := d.p.newNode(true, mode)
	d.n.kids[name] = k
	k.attr(&out.Attr)
	return d.p.inode(ctx, d.EmbeddedInode(), k), 0
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if d.p.lock() {
		return syscall.EIO
	}
	defer d.p.mu.Unlock()
	k := d.n.kids[name]
	if k == nil {
		return syscall.ENOENT
	}
	if k.dir {
		return syscall.EISDIR
	}
	delete(d.n.kids, name)
	return 0
}

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if d.p.lock() {
		return syscall.EIO
	}
	defer d.p.mu.Unlock()
	k := d.n.kids[name]
	switch {
	case k == nil:
		return syscall.ENOENT
	case !k.dir:
		return syscall.ENOTDIR
	case len(k.kids) > 0:
		return syscall.ENOTEMPTY
	}
	delete(d.n.kids, name)
	return 0
}

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to, ok := newParent.(*dirNode)
	if !ok {
		return syscall.EXDEV
	}
	if flags != 0 {
		return syscall.EINVAL // RENAME_NOREPLACE and RENAME_EXCHANGE: not needed by the programs tested
	}
	if d.p.lock() {
		return syscall.EIO
	}
	defer d.p.mu.Unlock()
	k := d.n.kids[name]
	if k == nil {
		return syscall.ENOENT
	}
	if old := to.n.kids[newName]; old != nil && old.dir && len(old.kids) > 0 {
		return syscall.ENOTEMPTY
	}
	delete(d.n.kids, name)
	to.n.kids[newName] = k
	return 0
}

func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if f.p.lock() {
		return nil, 0, syscall.EIO
	}
	f.p.mu.Unlock()
	return nil, 0, 0
}

func (f *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if f.p.lock() {
		return nil, syscall.EIO
	}
	defer f.p.mu.Unlock()
	if off >= int64(len(f.n.data)) {
		return fuse.ReadResultData(nil), 0
	}
	n := copy(dest, f.n.data[off:])
	return fuse.ReadResultData(dest[:n]), 0
}

func (f *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if f.p.lock() {
		return 0, syscall.EIO
	}
	defer f.p.mu.Unlock()
	f.n.data = put(f.n.data, off, data)
	f.p.last = &write{n: f.n, off: off, data: slices.Clone(data)}
	f.p.stats.Writes++
	return uint32(len(data)), 0
}

func (f *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno { return 0 }

func (b *base) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if b.p.lock() {
		return syscall.EIO
	}
	defer b.p.mu.Unlock()
	b.n.attr(&out.Attr)
	return 0
}

// Setattr changes a file's size (truncate, extend) and either's mode;
// times are not kept.
func (b *base) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if b.p.lock() {
		return syscall.EIO
	}
	defer b.p.mu.Unlock()
	if size, ok := in.GetSize(); ok && !b.n.dir {
		if size <= uint64(len(b.n.data)) {
			b.n.data = slices.Clone(b.n.data[:size])
		} else {
			b.n.data = put(b.n.data, int64(size), nil)
		}
	}
	if mode, ok := in.GetMode(); ok {
		b.n.mode = mode & 0o7777
	}
	b.n.attr(&out.Attr)
	return 0
}

// Fsync (and fdatasync) makes a file's bytes, or a directory's entries,
// as they are now durable.
func (b *base) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if b.p.lock() {
		return syscall.EIO
	}
	defer b.p.mu.Unlock()
	if b.n.dir {
		b.n.syncedKids = maps.Clone(b.n.kids)
		b.p.stats.DirSyncs++
		return 0
	}
	b.n.synced = slices.Clone(b.n.data)
	if b.p.last != nil && b.p.last.n == b.n {
		b.p.last = nil
	}
	b.p.stats.FileSyncs++
	return 0
}

func (b *base) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	statfs(out)
	return 0
}
