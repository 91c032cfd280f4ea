package bitrix24

import (
	"context"
	"fmt"
)

// Probe checks, writing nothing, that the webhook is accepted and may read
// the CRM: it counts the contacts that carry ORIGINATOR_ID = Originator,
// by which the adapter finds customers (crm.contact.list, the crm scope
// the gateway needs; profile or app.info would pass a webhook without
// it). It returns what worked, or the call's classified error
// (codes.TargetPermissionDenied for the webhook's user, secret or scope).
func (c *Client) Probe(ctx context.Context) (string, error) {
	r, err := c.call(ctx, "crm.contact.list", map[string]any{
		"filter": map[string]any{"ORIGINATOR_ID": Originator},
		"select": []string{"ID"},
	}, false)
	if err != nil {
		return "", err
	}
	n := 0
	if r.Total != nil {
		n = *r.Total
	}
	if n == 0 {
		return fmt.Sprintf("the webhook is accepted and reads CRM contacts, but no contact carries ORIGINATOR_ID %q yet: customers are found by it, so callbacks will be refused until contacts are marked", Originator), nil
	}
	return fmt.Sprintf("the webhook is accepted and reads CRM contacts; %d carry ORIGINATOR_ID %q", n, Originator), nil
}
