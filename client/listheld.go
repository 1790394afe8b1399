package client

import (
	"context"

	"github.com/zerotal/lock/drivers"
)

var _ drivers.Lister = (*Client)(nil)

// ListHeld describes the held keys that start with prefix, sorted, at most
// limit of them (drivers.Lister): List (GET /v1/locks), each lock as
// HoldingOf describes it. The leader reads them at one moment and leaves
// out grants past their deadline; truncated is also true when its answer
// kept only as many keys as fit its size bound (16 MiB).
func (c *Client) ListHeld(ctx context.Context, prefix string, limit int) ([]drivers.Listed, bool, error) {
	locks, truncated, err := c.List(ctx, prefix, limit)
	if err != nil {
		return nil, false, err
	}
	out := make([]drivers.Listed, len(locks))
	for i, l := range locks {
		out[i] = drivers.Listed{Key: l.Key, Holding: HoldingOf(l)}
	}
	return out, truncated, nil
}
