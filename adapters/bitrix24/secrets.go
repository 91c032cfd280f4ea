package bitrix24

import "github.com/oncegate/oncegate/adapters/redact"

// Secrets implements adapters.Secretive: the webhook URL's secret.
func (c *Client) Secrets() []redact.Secret {
	return []redact.Secret{redact.Webhook(c.base)}
}
