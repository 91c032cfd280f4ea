package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// grantEvents are the audit events that give a user a role, newest
// searched first: a change of role always follows the user's creation.
var grantEvents = []string{"user.role_changed", "user.created"}

// approvers are the enabled users whose role decides money, oldest first,
// each with the audit event that granted it: who granted it, when, and
// whether they confirmed their own password. So everyone who sees the
// queue sees who may decide it and how they came to.
func (h *Handler) approvers(c echo.Context) ([]views.Approver, error) {
	ctx := c.Request().Context()
	users, err := h.d.Store.Users(ctx)
	if err != nil {
		return nil, fmt.Errorf("approvers: %w", err)
	}
	var out []views.Approver
	waiting := map[string]int{} // lower-case name → index in out
	for _, u := range users {
		if !u.Disabled && store.DecidesMoney(u.Role) {
			waiting[strings.ToLower(u.Name)] = len(out)
			out = append(out, views.Approver{Name: u.Name})
		}
	}
	l, lg := labels(c), lang(c)
	for _, event := range grantEvents {
		if len(waiting) == 0 {
			break
		}
		err := h.eachGrant(ctx, event, func(e store.AuditEvent, g grantDetail) bool {
			i, ok := waiting[strings.ToLower(g.Name)]
			if !ok {
				return len(waiting) > 0
			}
			delete(waiting, strings.ToLower(g.Name))
			by := e.Actor.Name
			if e.Actor.Kind == store.ActorSystem {
				by = l.ByCommandLine
			}
			format := l.ApproverGrantedFmt
			if e.Event == "user.created" {
				format = l.ApproverCreatedFmt
			}
			a := &out[i]
			a.Grant = fmt.Sprintf(format, l.RoleLabel(g.Role), formatTime(e.At, h.d.Location, lg), by)
			a.Self = e.Actor.Kind == store.ActorUser && strings.EqualFold(e.Actor.Name, a.Name)
			a.Confirmed = g.Confirmed
			a.Unconfirmed = e.Actor.Kind == store.ActorUser && !g.Confirmed
			return len(waiting) > 0
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// grantDetail is what a grant's audit event says.
type grantDetail struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	From      string `json:"from"`
	Confirmed bool   `json:"password_confirmed"`
}

// eachGrant calls fn with the events named event that gave a user a role
// that decides money (from one that did not), newest first, until fn
// says to stop.
func (h *Handler) eachGrant(ctx context.Context, event string, fn func(store.AuditEvent, grantDetail) bool) error {
	const page = 200
	f := store.AuditFilter{Event: event, Limit: page}
	for {
		evs, err := h.d.Store.AuditEvents(ctx, f)
		if err != nil {
			return fmt.Errorf("approvers: %w", err)
		}
		for _, e := range evs {
			var g grantDetail
			if json.Unmarshal(e.Detail, &g) != nil || !store.DecidesMoney(g.Role) || store.DecidesMoney(g.From) {
				continue
			}
			if !fn(e, g) {
				return nil
			}
		}
		if len(evs) < page {
			return nil
		}
		f.BeforeID = evs[len(evs)-1].ID
	}
}
