package onec

import "github.com/oncegate/oncegate/adapters/redact"

// Secrets implements adapters.Secretive: the 1C user's password, its
// Basic credentials, and the user's name, which outputs do not show either.
func (c *Client) Secrets() []redact.Secret {
	if c.user == "" {
		return nil
	}
	return []redact.Secret{redact.Basic(c.user, c.password), redact.Name(c.user)}
}
