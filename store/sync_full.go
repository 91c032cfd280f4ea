//go:build !oncegate_unsynced

package store

// answerBeforeSync is false: a write is answered after the fsync that
// makes it durable (durable.go).
const answerBeforeSync = false
