package server

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// handleHealth serves GET /healthz: the process is alive.
func (s *Server) handleHealth(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady serves GET /readyz: the journal is writable and its schema
// is the one this binary needs.
func (s *Server) handleReady(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ready(ctx); err != nil {
		s.log.Warn("not ready", "err", err)
		store.AnswerReadsNothing(c.Request().Context())
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": "the journal is not writable or not migrated"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// handleHome serves GET /: a small page saying what this is.
func (s *Server) handleHome(c echo.Context) error {
	targets := make([]views.TargetInfo, 0, len(s.targets))
	for _, system := range s.cfg.Targets.Names() {
		if t, ok := s.targets[system]; ok {
			targets = append(targets, views.TargetInfo{System: system, Adapter: t.Name()})
		}
	}
	return admin.Render(c, http.StatusOK, views.Home(views.HomeView{Contour: s.cfg.Contour, Targets: targets}))
}
