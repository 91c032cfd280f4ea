package bitrix24

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// Probe checks, writing nothing, that the webhook is accepted, may read
// the CRM, and reads all of it: it counts the contacts that carry
// ORIGINATOR_ID = Originator, by which the adapter finds customers
// (crm.contact.list, the crm scope the gateway needs; profile or app.info
// would pass a webhook without it), and asks whether the webhook's user
// is an administrator (user.admin): CRM lists show a user only the records
// its role lets it read, so only an administrator's empty look-up proves
// an operation left no activity. It returns what worked, or the call's
// classified error (codes.TargetPermissionDenied for the webhook's user,
// secret, scope or rights).
func (c *Client) Probe(ctx context.Context) (string, error) {
	r, err := c.call(ctx, "crm.contact.list", map[string]any{
		"filter": map[string]any{"ORIGINATOR_ID": Originator},
		"select": []string{"ID"},
	}, false)
	if err != nil {
		return "", err
	}
	admin, err := c.isAdmin(ctx)
	if err != nil {
		return "", err
	}
	if !admin {
		return "", adapters.Misconfigured(codes.TargetPermissionDenied,
			"the webhook's user is not a Bitrix24 administrator: CRM lists leave out the records its role may not read, so the gateway cannot tell an activity it may not see from none, and would keep such operations unknown; create the inbound webhook as an administrator (or make its user one: Employees, the user's profile, Make administrator), with the crm scope",
			errors.New("user.admin: false"))
	}
	n := 0
	if r.Total != nil {
		n = *r.Total
	}
	if n == 0 {
		return fmt.Sprintf("the webhook's user is an administrator and reads CRM contacts, but no contact carries ORIGINATOR_ID %q yet: customers are found by it, so callbacks will be refused until contacts are marked", Originator), nil
	}
	return fmt.Sprintf("the webhook's user is an administrator and reads CRM contacts; %d carry ORIGINATOR_ID %q", n, Originator), nil
}
