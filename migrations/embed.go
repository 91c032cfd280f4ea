// Package migrations holds the journal's schema as numbered SQL files,
// embedded into the binary and applied by golang-migrate: the embedded
// SQLite journal's here, PostgreSQL's under postgres/, one version for one
// version.
package migrations

import "embed"

// FS holds the SQLite journal's *.up.sql and *.down.sql files.
//
//go:embed *.sql
var FS embed.FS

// PostgresFS holds postgres/*.up.sql and *.down.sql, the same schema for
// a PostgreSQL journal.
//
//go:embed postgres/*.sql
var PostgresFS embed.FS
