package store

import (
	"context"
	"fmt"
	"time"
)

// EventConcerns counts what of events in a person should hear of: the
// events dropped since since (a notice its source denies may be forged),
// and those still pending that were received before stale (their source
// has not been read back for so long). Each count stops at limit, so the
// dashboard that asks on every refresh reads at most so many rows.
func (s *Store) EventConcerns(ctx context.Context, since, stale time.Time, limit int) (dropped, waiting int, err error) {
	err = s.rdb.QueryRowContext(ctx, `
		SELECT
			(SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE state = ? AND updated_at >= ? LIMIT ?) d),
			(SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE state = ? AND received_at < ? LIMIT ?) p)`,
		EventDropped, formatTime(since), limit, EventPending, formatTime(stale), limit).Scan(&dropped, &waiting)
	if err != nil {
		return 0, 0, fmt.Errorf("event concerns: %w", err)
	}
	return dropped, waiting, nil
}
