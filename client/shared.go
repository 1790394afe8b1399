package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

var (
	_ drivers.Inspector = (*Client)(nil)
)

// acquireClaim takes a semaphore's slot or a read/write lock's side of
// key for owner (POST /v1/acquire-shared); ok is false when the key has no
// room for owner now, or others wait before it, and held is then who is
// in the way as the node's 409 says (holder, holder_ttl_ms). A cluster
// with a member that cannot apply it yet answers an error matching
// drivers.ErrUnsupported, as does a node of an older release.
func (c *Client) acquireClaim(ctx context.Context, key, owner string, ttl time.Duration, claim drivers.Claim) (uint64, bool, drivers.HeldBy, error) {
	return c.acquireOnce(ctx, key, owner, ttl, &claim)
}

// acquireClaimWait is AcquireShared that waits in the key's FIFO queue,
// as AcquireWait does for a mutex.
func (c *Client) acquireClaimWait(ctx context.Context, key, owner string, ttl time.Duration, claim drivers.Claim, opts drivers.WaitOptions) (uint64, error) {
	return c.acquireWait(ctx, key, owner, ttl, &claim, opts)
}

// acquireRequest is the request of one acquire: of a mutex (claim nil),
// or of a shared key.
func acquireRequest(key, owner string, ttl, wait, keep time.Duration, claim *drivers.Claim) request {
	base := api.AcquireRequest{Key: key, Owner: owner, TTLMillis: api.Millis(ttl), WaitMillis: api.Millis(wait), KeepMillis: api.Millis(keep)}
	r := request{op: "acquire", method: http.MethodPost, path: api.PathAcquire, key: key, wait: wait, body: base}
	if claim == nil {
		return r
	}
	body := api.AcquireSharedRequest{AcquireRequest: base}
	switch {
	case claim.Kind == drivers.Semaphore:
		body.Semaphore = claim.Limit
	case claim.Write:
		body.Mode = api.ModeWrite
	default:
		body.Mode = api.ModeRead
	}
	r.path, r.body = api.PathAcquireShared, body
	return r
}

// sharedUnsupported says what a 404 to an acquire-shared means: a node
// of a release without it.
func sharedUnsupported(err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: the node does not serve %s (an older release): %w", drivers.ErrUnsupported, api.PathAcquireShared, err)
	}
	return err
}

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
	for _, w := range l.Queue {
		h.Waiters = append(h.Waiters, drivers.Waiting{Owner: w.Owner, Write: w.Mode == api.ModeWrite})
	}
	return h
}
