package bitrix24

import (
	"context"
	"encoding/json"
	"fmt"
)

// Notify tells the portal's active user with the e-mail address email
// message, as one of the portal's own notifications (im.notify.system.add;
// the webhook needs the im and user scopes), under tag: a notification
// sent again under its tag replaces the first rather than piling up. A
// portal with no such user is an error saying so; the message never
// reaches a log or an error.
func (c *Client) Notify(ctx context.Context, email, message, tag string) error {
	r, err := c.call(ctx, "user.get", map[string]any{"FILTER": map[string]any{"EMAIL": email, "ACTIVE": true}}, false)
	if err != nil {
		return err
	}
	var users []struct {
		ID json.RawMessage `json:"ID"`
	}
	if json.Unmarshal(r.Result, &users) != nil || len(users) == 0 {
		return fmt.Errorf("the portal has no active user with this e-mail address")
	}
	var id text
	if json.Unmarshal(users[0].ID, &id) != nil || id == "" {
		return fmt.Errorf("the portal's answer to user.get names no user ID")
	}
	params := map[string]any{"USER_ID": string(id), "MESSAGE": message}
	if tag != "" {
		params["TAG"] = tag
	}
	_, err = c.call(ctx, "im.notify.system.add", params, true)
	return err
}
