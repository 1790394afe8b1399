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

// Acquire serves one drivers.Request with POST /v1/acquire, whatever it
// claims: one key or a set (one log entry, all or none), a mutex or a
// shared claim, at once or waiting.
//
// Without Wait, a key held by another owner is a Grant that is not
// Acquired, whose Busy names the key in the way and its holder as the
// node's 409 says (holder, holder_ttl_ms). Retrying after a lost answer is
// safe: the retry finds owner's grants and refreshes them.
//
// With Wait, it waits in the cluster's FIFO queues (for a set: the free
// keys taken and the busy ones queued for in one step) until every key is
// granted, or until ctx ends (it then returns an error wrapping
// ctx.Err()). Each request asks the node to wait at most until just before
// ctx's deadline (or WaitChunk when ctx has none), and to keep its places
// for the next one (KeepPlace); a request the node times out with 409 is
// sent again while ctx lives. When ctx ends while a request is queued, the
// keys are released in the background in case a grant raced with the
// cancellation; with OwnerReused they are left to their TTL, since the
// owner may ask again and a late release would free its new grant.
//
// A node of an older release refuses the fields it does not know (keys,
// semaphore, mode, max_hold_ms) with a 400, and a cluster with a member that cannot
// apply the claim yet answers 501: both are errors matching
// drivers.ErrUnsupported, having taken nothing. A single key's mutex is
// v0.1.0's request, which every node serves.
func (c *Client) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if err := checkRequest(req); err != nil {
		return drivers.Grant{}, err
	}
	if req.Wait {
		return c.acquireWait(ctx, req)
	}
	fences, err := c.acquireOnce(ctx, req, 0, 0)
	if na, ok := errors.AsType[*drivers.NotAcquiredError](err); ok {
		return drivers.Grant{Busy: drivers.Busy{Key: cmp.Or(na.Key, req.Key()), HeldBy: drivers.HeldBy{Holder: na.Holder, TTL: na.HolderTTL}}}, nil
	}
	if err != nil {
		return drivers.Grant{}, err
	}
	return drivers.Grant{Acquired: true, Fences: fences}, nil
}

// Capabilities declares what Acquire serves: everything but
// InstantAcquire (an acquire is a round trip). The cap on total hold time
// (MaxHold) is the node's to enforce: its state machine records each
// grant's cap, and a node too old to know max_hold_ms refuses it (501, or
// a 400 read as ErrUnsupported).
func (c *Client) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Shared: true, Sets: true, SetWait: true, MaxHold: true}
}

// checkRequest is checkKeyOwner for every key of req, and their number.
func checkRequest(req drivers.Request) error {
	if len(req.Keys) == 0 || len(req.Keys) > api.MaxAcquireKeys {
		return &drivers.InvalidError{Field: "keys", Reason: fmt.Sprintf("%d keys; name 1 to %d", len(req.Keys), api.MaxAcquireKeys)}
	}
	for _, k := range req.Keys {
		if err := checkKeyOwner(k, req.Owner); err != nil {
			return err
		}
	}
	return nil
}

// acquireOnce is one request of req, waiting up to wait and keeping its
// places keep. A refusal is the node's *drivers.NotAcquiredError.
func (c *Client) acquireOnce(ctx context.Context, req drivers.Request, wait, keep time.Duration) ([]uint64, error) {
	body := api.AcquireRequest{Owner: req.Owner, TTLMillis: api.Millis(req.TTL), WaitMillis: api.Millis(wait), KeepMillis: api.Millis(keep), MaxHoldMillis: api.Millis(req.MaxHold)}
	if len(req.Keys) == 1 {
		body.Key = req.Keys[0] // v0.1.0's body: every node serves it
	} else {
		body.Keys = req.Keys
	}
	switch {
	case req.Claim.Kind == drivers.Semaphore:
		body.Semaphore = req.Claim.Limit
	case req.Claim.Kind == drivers.RWLock && req.Claim.Write:
		body.Mode = api.ModeWrite
	case req.Claim.Kind == drivers.RWLock:
		body.Mode = api.ModeRead
	}
	var out api.AcquireResponse
	err := c.call(ctx, request{op: "acquire", method: http.MethodPost, path: api.PathAcquire,
		key: strings.Join(req.Keys, ","), wait: wait, body: body}, &out)
	if err != nil {
		return nil, olderNode(err)
	}
	if body.Keys == nil {
		return []uint64{out.Fence}, nil
	}
	if len(out.Locks) != len(req.Keys) {
		return nil, fmt.Errorf("client: acquire of %d keys answered with %d", len(req.Keys), len(out.Locks))
	}
	fences := make([]uint64, len(req.Keys))
	for i, l := range out.Locks {
		if l.Key != req.Keys[i] {
			return nil, fmt.Errorf("client: acquire answered key %q where %q was asked", l.Key, req.Keys[i])
		}
		fences[i] = l.Fence
	}
	return fences, nil
}

// olderNode says what a node's refusal of a field of the acquire body
// that its release does not know means (an older release: v0.1.0 knows
// key, owner, ttl_ms and wait_ms; max_hold_ms came later still): the
// request is unsupported there.
// keep_ms is left to refusedKeep, which sends the wait again without it.
func olderNode(err error) error {
	if !errors.Is(err, drivers.ErrInvalid) {
		return err
	}
	for _, f := range []string{"keys", "semaphore", "mode", "max_hold_ms"} {
		if strings.Contains(err.Error(), `unknown field "`+f+`"`) {
			return fmt.Errorf("%w: the node does not know %s (an older release): %w", drivers.ErrUnsupported, f, err)
		}
	}
	return err
}

// acquireWait sends req's wait in chunks (waitChunk) until every key is
// granted or ctx ends.
func (c *Client) acquireWait(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	var held error // the last 409 of this wait: a key was held
	for {
		if err := ctx.Err(); err != nil {
			return drivers.Grant{}, waitEnded(ctx, cmp.Or(held, err))
		}
		wait, keep := c.waitChunk(ctx)
		if wait < 2*time.Millisecond {
			wait, keep = 0, 0 // too little time to queue: one attempt, then wait for ctx
		}
		fences, err := c.acquireOnce(ctx, req, wait, keep)
		if err == nil {
			return drivers.Grant{Acquired: true, Fences: fences}, nil
		}
		if c.refusedKeep(keep, err) {
			continue
		}
		if ctx.Err() != nil {
			for _, k := range req.Keys {
				c.releaseAbandoned(k, req.Owner, req.WaitOptions)
			}
			if held != nil && !errors.Is(err, drivers.ErrUnavailable) {
				// ctx cut off the request sent after a 409, at the end of
				// the wait: the backend's last answer stands.
				err = held
			}
			return drivers.Grant{}, waitEnded(ctx, err)
		}
		if !errors.Is(err, drivers.ErrNotAcquired) {
			return drivers.Grant{}, err
		}
		held = err
		if wait == 0 {
			// Too little time left to queue: wait for ctx to end rather
			// than spinning on plain acquires.
			<-ctx.Done()
		}
	}
}
