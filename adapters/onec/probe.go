package onec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// Probe checks, writing nothing, that the HTTP service answers at the
// configured publication to the configured user: it looks up an operation
// key that cannot exist, which 1C answers from its key register with
// NOT_FOUND. Once intents are bound (Bind), it looks such a key up under
// each bound route, which the service answers NOT_FOUND when it publishes
// the route and INTENT_NOT_ALLOWED when it does not (the built-in read
// sales_order.get_status is asked for an order that cannot exist), and
// reports which it publishes. It returns what worked, or a classified
// error (codes.TargetPermissionDenied for the user,
// codes.TargetNotPublished for the address or for routes the service does
// not publish, naming them).
func (c *Client) Probe(ctx context.Context) (string, error) {
	routes := c.boundRoutes()
	if len(routes) == 0 {
		if _, err := c.lookup(ctx, adapters.Op{Key: probeKey()}, route{name: "invoice.create"}); err != nil && !errors.Is(err, adapters.ErrNotFound) {
			return "", err
		}
		return "the HTTP service answers and reads its key register (a look-up of a key that does not exist found nothing)", nil
	}
	var published, missing []string
	for _, r := range routes {
		ok, err := c.publishes(ctx, r)
		switch {
		case err != nil:
			return "", err
		case ok:
			published = append(published, r.name)
		default:
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("the 1C HTTP service does not publish %s; add each to the routing table of the service's module", strings.Join(missing, ", "))
		if len(published) > 0 {
			msg += fmt.Sprintf(" (it publishes %s)", strings.Join(published, ", "))
		}
		return "", adapters.Misconfigured(codes.TargetNotPublished, msg, errors.New("GET /operations: 400 INTENT_NOT_ALLOWED"))
	}
	return fmt.Sprintf("the HTTP service answers, reads its key register (a look-up of a key that does not exist found nothing) and publishes %s",
		strings.Join(published, ", ")), nil
}

// publishes asks the service whether it routes r, writing nothing.
func (c *Client) publishes(ctx context.Context, r route) (bool, error) {
	var err error
	if r.name == orderStatusIntent && !r.declared {
		_, err = c.OrderStatus(ctx, "SO-oncegate-check-"+probeKey())
	} else {
		_, err = c.lookup(ctx, adapters.Op{Key: probeKey()}, route{name: r.name})
	}
	var e *adapters.Error
	switch {
	case err == nil, errors.Is(err, adapters.ErrNotFound):
		return true, nil
	case errors.As(err, &e) && e.Code == codes.IntentNotAllowed:
		return false, nil
	}
	return false, err
}

// probeKey is an operation key no operation has.
func probeKey() string {
	buf := make([]byte, 8)
	rand.Read(buf)
	return "oncegate-check:" + hex.EncodeToString(buf)
}
