package yookassa

import "github.com/oncegate/oncegate/adapters/redact"

// Secrets implements adapters.Secretive: the shop's secret key and its
// Basic credentials (the shop id alone is no secret).
func (c *Client) Secrets() []redact.Secret {
	return []redact.Secret{redact.Basic(c.shopID, c.secret)}
}
