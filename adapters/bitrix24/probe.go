package bitrix24

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

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
// secret, scope or rights). Once declared intents are bound, it also asks
// each entity they add for its fields (crm.<entity>.fields) and refuses,
// with codes.TargetNotPublished, a mapping that names a field the portal
// does not have (a user field not created yet, say).
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
	fieldsOK, err := c.probeFields(ctx)
	if err != nil {
		return "", err
	}
	n := 0
	if r.Total != nil {
		n = *r.Total
	}
	if n == 0 {
		return fmt.Sprintf("the webhook's user is an administrator and reads CRM contacts, but no contact carries ORIGINATOR_ID %q yet: customers are found by it, so callbacks will be refused until contacts are marked", Originator) + fieldsOK, nil
	}
	return fmt.Sprintf("the webhook's user is an administrator and reads CRM contacts; %d carry ORIGINATOR_ID %q", n, Originator) + fieldsOK, nil
}

// probeFields checks that every field the declared intents map exists in
// their entity, asking each entity once. It returns what it checked, as a
// clause to append ("" with no declared intents).
func (c *Client) probeFields(ctx context.Context) (string, error) {
	c.mu.Lock()
	byEntity := map[*entity][]*declared{}
	for _, d := range c.bound {
		if d != nil {
			byEntity[d.entity] = append(byEntity[d.entity], d)
		}
	}
	c.mu.Unlock()
	if len(byEntity) == 0 {
		return "", nil
	}
	ents := make([]*entity, 0, len(byEntity))
	for e := range byEntity {
		ents = append(ents, e)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].add < ents[j].add })
	var checked, missing []string
	for _, e := range ents {
		method := "crm." + e.name + ".fields"
		r, err := c.call(ctx, method, map[string]any{}, false)
		if err != nil {
			return "", err
		}
		var have map[string]json.RawMessage
		if err := json.Unmarshal(r.Result, &have); err != nil {
			return "", &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
				Message: "the CRM answered in an unexpected shape", Err: fmt.Errorf("%s: %w", method, err)}
		}
		ds := byEntity[e]
		sort.Slice(ds, func(i, j int) bool {
			return ds[i].intent < ds[j].intent || ds[i].intent == ds[j].intent && ds[i].version < ds[j].version
		})
		for _, d := range ds {
			name := fmt.Sprintf("%s v%d", d.intent, d.version)
			var absent []string
			for _, f := range d.fields.Names() {
				if _, ok := have[f]; !ok {
					absent = append(absent, f)
				}
			}
			if len(absent) > 0 {
				missing = append(missing, fmt.Sprintf("%s maps %s, which %s does not have", name, strings.Join(absent, ", "), d.method()))
				continue
			}
			checked = append(checked, name+" ("+d.method()+")")
		}
	}
	if len(missing) > 0 {
		return "", adapters.Misconfigured(codes.TargetNotPublished,
			"the CRM lacks fields the declared intents map: "+strings.Join(missing, "; ")+"; create them in the portal (a user field with crm.<entity>.userfield.add) or correct the mapping",
			errors.New("crm.*.fields: mapped fields absent"))
	}
	return "; the fields of " + strings.Join(checked, ", ") + " exist", nil
}
