//go:build !oncegate_unsynced

package store

// commitSync is SQLite's synchronous setting for the journal: FULL, so a
// COMMIT returns only after the WAL's fsync.
const commitSync = "FULL"
