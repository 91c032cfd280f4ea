//go:build oncegate_unsynced

package store

// commitSync, in a build made to be caught by the power-loss test only:
// OFF answers before anything reaches the disk. Never ship this tag.
const commitSync = "OFF"
