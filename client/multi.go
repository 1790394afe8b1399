package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// acquireSet takes every key for owner for ttl in one step, or none
// (drivers.MultiAcquirer, POST /v1/acquire-all): the cluster writes them
// as one log entry. When another owner holds a key, ok is false and busy
// names it, with its holder. Retrying after a lost answer is safe: the
// retry finds owner's grants and refreshes them. A cluster with a member
// of an older release answers an error matching drivers.ErrUnsupported,
// having taken nothing.
func (c *Client) acquireSet(ctx context.Context, keys []string, owner string, ttl time.Duration) ([]uint64, bool, drivers.Busy, error) {
	if err := checkKeysOwner(keys, owner); err != nil {
		return nil, false, drivers.Busy{}, err
	}
	return c.acquireAll(ctx, keys, owner, ttl, 0, 0)
}

// checkKeysOwner is checkKeyOwner for every key of an acquire-all, and
// their number.
func checkKeysOwner(keys []string, owner string) error {
	if len(keys) == 0 || len(keys) > api.MaxAcquireAllKeys {
		return &drivers.InvalidError{Field: "keys", Reason: fmt.Sprintf("%d keys; name 1 to %d", len(keys), api.MaxAcquireAllKeys)}
	}
	for _, k := range keys {
		if err := checkKeyOwner(k, owner); err != nil {
			return err
		}
	}
	return nil
}

// acquireAll is one acquire-all request, waiting up to wait.
func (c *Client) acquireAll(ctx context.Context, keys []string, owner string, ttl, wait, keep time.Duration) ([]uint64, bool, drivers.Busy, error) {
	joined := strings.Join(keys, ",")
	req := request{op: "acquire-all", method: http.MethodPost, path: api.PathAcquireAll, key: joined, wait: wait,
		body: api.AcquireAllRequest{Keys: keys, Owner: owner, TTLMillis: api.Millis(ttl), WaitMillis: api.Millis(wait), KeepMillis: api.Millis(keep)}}
	var out api.AcquireAllResponse
	err := c.call(ctx, req, &out)
	if errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("%w: the node does not serve %s (an older release): %w", drivers.ErrUnsupported, api.PathAcquireAll, err)
	}
	if na, ok := errors.AsType[*drivers.NotAcquiredError](err); ok {
		return nil, false, drivers.Busy{Key: na.Key, HeldBy: drivers.HeldBy{Holder: na.Holder, TTL: na.HolderTTL}}, nil
	}
	if err != nil {
		return nil, false, drivers.Busy{}, err
	}
	if len(out.Locks) != len(keys) {
		return nil, false, drivers.Busy{}, fmt.Errorf("client: acquire-all of %d keys answered with %d", len(keys), len(out.Locks))
	}
	fences := make([]uint64, len(keys))
	for i, l := range out.Locks {
		if l.Key != keys[i] {
			return nil, false, drivers.Busy{}, fmt.Errorf("client: acquire-all answered key %q where %q was asked", l.Key, keys[i])
		}
		fences[i] = l.Fence
	}
	return fences, true, drivers.Busy{}, nil
}

// acquireSetWait waits for every key together, first come first served
// for the whole set (drivers.MultiWaiter, POST /v1/acquire-all with
// wait_ms): the cluster takes the free keys and queues owner for the busy
// ones in one log entry, and answers once it holds them all. Requests are
// sent as AcquireWait sends them (a chunk of the wait each, again after a
// 409 while ctx lives). When ctx ends first the error wraps ctx.Err()
// (with the key still waited for, as a *drivers.NotAcquiredError, when
// the node said), and the keys are released in the background in case a
// grant raced with the cancellation.
func (c *Client) acquireSetWait(ctx context.Context, keys []string, owner string, ttl time.Duration, opts drivers.WaitOptions) ([]uint64, error) {
	if err := checkKeysOwner(keys, owner); err != nil {
		return nil, err
	}
	var held error // the last 409 of this wait
	for {
		if err := ctx.Err(); err != nil {
			return nil, waitEnded(ctx, cmp.Or(held, err))
		}
		wait, keep := c.waitChunk(ctx)
		if wait < 2*time.Millisecond {
			wait, keep = 0, 0 // too little time to queue: one attempt, then wait for ctx
		}
		fences, ok, busy, err := c.acquireAll(ctx, keys, owner, ttl, wait, keep)
		if err == nil && ok {
			return fences, nil
		}
		if c.refusedKeep(keep, err) {
			continue
		}
		if err == nil {
			err = &drivers.NotAcquiredError{Key: busy.Key, Holder: busy.Holder, HolderTTL: busy.TTL}
		}
		if ctx.Err() != nil {
			for _, k := range keys {
				c.releaseAbandoned(k, owner, opts)
			}
			if held != nil && !errors.Is(err, drivers.ErrUnavailable) {
				err = held
			}
			return nil, waitEnded(ctx, err)
		}
		if !errors.Is(err, drivers.ErrNotAcquired) {
			return nil, err
		}
		held = err
		if wait == 0 {
			<-ctx.Done()
		}
	}
}
