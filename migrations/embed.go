// Package migrations holds the journal's schema as numbered SQL files,
// embedded into the binary and applied by golang-migrate.
package migrations

import "embed"

// FS holds the *.up.sql and *.down.sql files.
//
//go:embed *.sql
var FS embed.FS
