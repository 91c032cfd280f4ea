//go:build oncegate_unsynced

package store

// answerBeforeSync, in a build made only to be caught by the power-loss
// test: answers are released before the WAL's fsync. Never ship this tag.
const answerBeforeSync = true
