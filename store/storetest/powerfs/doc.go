// Package powerfs is a filesystem for tests that loses power: it keeps
// every file in memory, serves it over FUSE, and remembers apart what an
// fsync made durable. Cut drops everything that was not: writes since a
// file's last fsync or fdatasync, and the creations, renames and removals
// in a directory since that directory's last fsync; it can tear the last
// write at a sector boundary. A journal that keeps its promise loses
// nothing it answered for; one that answers before its fsync is caught.
//
// A kill -9 cannot test this: the page cache outlives a killed process,
// so a journal that never calls fsync passes every crash test. Only a
// layer below the database that forgets unsynced writes can (SQLite's own
// crash tests and LazyFS work the same way).
//
// Processes that use the mount must not be the test process itself when
// they map files into memory (SQLite maps its -shm file): a page fault
// served by the same Go process can deadlock with its garbage collector.
// Run the program under test as a child process on the mount.
//
// Linux only (FUSE through /dev/fuse, mounted directly as root).
package powerfs
