package onec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/oncegate/oncegate/adapters"
)

// Probe checks, writing nothing, that the HTTP service answers at the
// configured publication to the configured user: it looks up an operation
// key that cannot exist, which 1C answers from its key register with
// NOT_FOUND. It returns what worked, or the look-up's classified error
// (codes.TargetPermissionDenied for the user, codes.TargetNotPublished for the address).
func (c *Client) Probe(ctx context.Context) (string, error) {
	buf := make([]byte, 8)
	rand.Read(buf)
	_, err := c.Lookup(ctx, adapters.Op{Intent: "invoice.create", Key: "oncegate-check:" + hex.EncodeToString(buf)})
	if err != nil && !errors.Is(err, adapters.ErrNotFound) {
		return "", err
	}
	return "the HTTP service answers and reads its key register (a look-up of a key that does not exist found nothing)", nil
}
