package admin

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// HandleError renders err as the admin UI's error page: a status and a
// message for people, never internal detail. Only 5xx are logged. The
// server's HTTPErrorHandler calls it for paths under /admin.
func HandleError(err error, c echo.Context, log *slog.Logger) {
	if c.Response().Committed {
		return
	}
	if log == nil {
		log = slog.Default()
	}
	l := labels(c)
	status, msg := http.StatusInternalServerError, l.ErrInternal
	var he *echo.HTTPError
	switch {
	case errors.Is(err, errCSRF):
		status, msg = http.StatusForbidden, l.ErrCSRF
	case errors.Is(err, errMustChangePassword):
		status, msg = http.StatusForbidden, l.ErrMustChangePassword
	case errors.As(err, &he):
		status = he.Code
		switch he.Code {
		case http.StatusForbidden:
			msg = l.ErrForbidden
		case http.StatusNotFound:
			msg = l.ErrNotFound
		case http.StatusMethodNotAllowed:
			msg = l.ErrMethod
		case http.StatusRequestEntityTooLarge, http.StatusBadRequest:
			msg = l.ErrBadRequest
		default:
			if he.Code < 500 {
				msg = l.ErrBadRequest
			}
		}
	case errors.Is(err, store.ErrNotFound):
		status, msg = http.StatusNotFound, l.ErrNotFound
	}
	if status >= 500 {
		log.Error("admin request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	contour, _ := c.Get(ctxContour).(string)
	h := &Handler{d: Deps{Contour: contour}} // the error page needs nothing else
	p := h.page(c, "", l.ErrTitle)
	if c.Request().Method == http.MethodHead {
		c.NoContent(status)
		return
	}
	if err := Render(c, status, views.ErrorPage(views.ErrorView{Page: p, Status: status, Heading: l.ErrTitle, Message: msg})); err != nil {
		log.Warn("render admin error page", "err", err)
	}
}
