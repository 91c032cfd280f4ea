package yookassa

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// shop is the part of GET /v3/me's answer the probe reads.
type shop struct {
	AccountID string `json:"account_id"`
	Test      bool   `json:"test"`
	Status    string `json:"status"`
}

// Probe checks, writing nothing, that the shop's credentials are accepted:
// GET /v3/me, the shop's own settings. Where /me is not offered (a 404, as
// from the simulator) a list of at most one payment proves the same. It
// returns what worked, or a classified error (codes.TargetPermissionDenied for
// the shop id or secret key, codes.TargetNotPublished for the address).
func (c *Client) Probe(ctx context.Context) (string, error) {
	var me shop
	err := c.getJSON(ctx, "/me", nil, &me)
	if errors.Is(err, adapters.ErrNotFound) {
		var list objectList[payment]
		err = c.getJSON(ctx, "/payments", url.Values{"limit": {"1"}}, &list)
		if errors.Is(err, adapters.ErrNotFound) {
			return "", adapters.Misconfigured(codes.TargetNotPublished, "nothing answers as YooKassa's API v3 at the configured address", errors.New("GET /me and GET /payments: 404"))
		}
		if err != nil {
			return "", err
		}
		return "the shop's credentials are accepted (its payments can be read)", nil
	}
	if err != nil {
		return "", err
	}
	if me.Status != "" && me.Status != "enabled" {
		return "", adapters.Misconfigured(codes.TargetPermissionDenied, fmt.Sprintf("the shop's credentials are accepted, but YooKassa says the shop is %q", me.Status), nil)
	}
	s := "the shop's credentials are accepted"
	if me.AccountID != "" {
		s += " (shop " + me.AccountID
		if me.Test {
			s += ", a test shop"
		}
		s += ")"
	}
	return s, nil
}
