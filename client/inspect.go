package client

import (
	"context"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

var _ drivers.Inspector = (*Client)(nil)

// Inspect describes key: its kind, every holder and its waiters
// (GET /v1/lock).
func (c *Client) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	l, ok, err := c.Get(ctx, key)
	if err != nil || !ok {
		return drivers.Holding{}, false, err
	}
	return HoldingOf(l), true, nil
}

// HoldingOf is l as a drivers.Holding.
func HoldingOf(l api.Lock) drivers.Holding {
	h := drivers.Holding{WaiterCount: l.Waiters}
	for _, w := range l.Queue {
		h.Waiters = append(h.Waiters, drivers.Waiting{Owner: w.Owner, Write: w.Mode == api.ModeWrite})
	}
	switch l.Kind {
	case "":
		h.Holders = []drivers.Holder{{Owner: l.Owner, Fence: l.Fence, Remaining: l.Remaining}}
		return h
	case api.KindSemaphore:
		h.Claim = drivers.Claim{Kind: drivers.Semaphore, Limit: l.Limit}
	case api.KindRWLock:
		h.Claim = drivers.Claim{Kind: drivers.RWLock}
	}
	for _, x := range l.Holders {
		h.Holders = append(h.Holders, drivers.Holder{Owner: x.Owner, Fence: x.Fence, Remaining: x.Remaining, Write: x.Mode == api.ModeWrite})
	}
	return h
}
