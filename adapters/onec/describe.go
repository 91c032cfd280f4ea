package onec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// Describe implements adapters.Describer: GET /references/{kind}/{id}
// asks the module who the external id names, found in its id register as
// a payload's reference is, and answers the catalog item's name and, for
// a counterparty or organization, its ИНН. It only reads. An id the
// register does not hold (404 NOT_FOUND) is adapters.ErrNotFound; a
// module published before the route existed answers 404 without its
// error body, which is adapters.ErrCannotDescribe: no answer, not a fault.
func (c *Client) Describe(ctx context.Context, kind, id string) (adapters.Party, error) {
	if strings.TrimSpace(kind) == "" || strings.TrimSpace(id) == "" {
		return adapters.Party{}, adapters.ErrNotFound
	}
	resp, err := c.read(ctx, "/references/"+url.PathEscape(kind)+"/"+url.PathEscape(id))
	if err != nil {
		return adapters.Party{}, err
	}
	defer adapters.Drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		var p struct {
			Name string `json:"name"`
			INN  string `json:"inn"`
			KPP  string `json:"kpp"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&p); err != nil || strings.TrimSpace(p.Name) == "" {
			return adapters.Party{}, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
				Message: "1C answered a reference read with a body the gateway could not read", Err: fmt.Errorf("reference answer: %v", err)}
		}
		return adapters.Party{Name: strings.TrimSpace(p.Name), INN: strings.TrimSpace(p.INN), KPP: strings.TrimSpace(p.KPP)}, nil
	case http.StatusNotFound:
		e := c.statusError(resp)
		switch e.Code {
		case codes.NotFound:
			return adapters.Party{}, adapters.ErrNotFound
		case codes.TargetNotPublished:
			return adapters.Party{}, fmt.Errorf("%w: %v", adapters.ErrCannotDescribe, e.Err)
		}
		return adapters.Party{}, e
	}
	return adapters.Party{}, adapters.ReadFailure(c.statusError(resp))
}
