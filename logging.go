package main

import (
	"io"
	"log/slog"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/config"
)

// What builds serve's log. (The Windows service writes it to a file in
// the data directory: service_windows.go.)

// serveLog is serve's log: text lines on w from Info up, with the secrets
// of the configured targets masked by the one redaction the engine uses
// as well (adapters.Redactor). The targets are built as serve builds
// them, for their secrets only; when they cannot be, serve refuses them
// before it logs a word of theirs.
func serveLog(w io.Writer, cfg config.Config, env func(string) string) slog.Handler {
	targets, _ := buildTargets(cfg, builtInSimulators("http://127.0.0.1:9"), env)
	return redact.Handler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}), adapters.Redactor(targets))
}
