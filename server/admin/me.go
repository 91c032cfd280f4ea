package admin

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// mePage is a person's own page: how they are told.
const mePage = "/admin/me"

// handleMe serves GET /admin/me: the channels the person keeps, their
// e-mail, and their Telegram chat.
func (h *Handler) handleMe(c echo.Context) error {
	return h.renderMe(c, "", time.Time{})
}

// handleMeChannels serves POST /admin/me/channels: the configured
// channels not ticked are turned off for the person.
func (h *Handler) handleMeChannels(c echo.Context) error {
	if err := c.Request().ParseForm(); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "bad form")
	}
	on := c.Request().PostForm["on"]
	var off []string
	for _, ch := range h.d.Channels {
		if !slices.Contains(on, ch) {
			off = append(off, ch)
		}
	}
	if err := h.d.Store.SetNotifyOff(actorCtx(c), session(c).User.Name, off); err != nil {
		return fmt.Errorf("channels: %w", err)
	}
	return h.redirectWith(c, mePage, "channels_saved", "")
}

// handleMeTelegram serves POST /admin/me/telegram: a one-time code to send
// the bot, shown once on the page it answers with (never in a redirect,
// a log or the audit trail).
func (h *Handler) handleMeTelegram(c echo.Context) error {
	if !slices.Contains(h.d.Channels, store.ChannelTelegram) {
		return echo.NewHTTPError(http.StatusNotFound, "Telegram is not configured")
	}
	code, expires, err := h.d.Store.NewTelegramLink(c.Request().Context(), session(c).User.Name)
	if err != nil {
		return fmt.Errorf("telegram code: %w", err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return h.renderMe(c, code, expires)
}

// handleMeTelegramUnlink serves POST /admin/me/telegram/unlink.
func (h *Handler) handleMeTelegramUnlink(c echo.Context) error {
	if err := h.d.Store.SetContact(actorCtx(c), session(c).User.Name, store.Contact{Telegram: "-"}); err != nil {
		return fmt.Errorf("telegram unlink: %w", err)
	}
	return h.redirectWith(c, mePage, "telegram_unlinked", "")
}

func (h *Handler) renderMe(c echo.Context, code string, expires time.Time) error {
	ctx := c.Request().Context()
	me := session(c).User.Name
	contact, err := h.d.Store.ContactOf(ctx, me)
	if err != nil {
		return err
	}
	off, err := h.d.Store.NotifyOff(ctx, me)
	if err != nil {
		return err
	}
	l := labels(c)
	v := views.MeView{Page: h.page(c, "", l.MyNotices), Email: contact.Email, Telegram: contact.Telegram != "",
		TelegramOn: slices.Contains(h.d.Channels, store.ChannelTelegram), Bot: h.d.TelegramBot, Code: code}
	if code != "" {
		v.Expires = formatTime(expires, cmp.Or(h.d.Location, time.Local), lang(c))
	}
	for _, ch := range h.d.Channels {
		v.Channels = append(v.Channels, views.ChannelChoice{Channel: ch, On: !slices.Contains(off, ch), Address: contact.Address(ch) != ""})
	}
	return Render(c, http.StatusOK, views.Me(v))
}
