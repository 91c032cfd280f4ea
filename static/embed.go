// Package static holds the admin UI's CSS and scripts, embedded.
package static

import "embed"

// FS holds the static files.
//
//go:embed *.css *.js
var FS embed.FS
