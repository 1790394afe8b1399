package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// DefaultPrefix is "": the cluster holds only locks, and its HTTP API and
// lockcluster name keys as written, so a Manager on a Client adds no
// prefix unless told to, and "deploy" is the same lock everywhere.
func (c *Client) DefaultPrefix() string { return "" }

var _ drivers.KeyNamer = (*Client)(nil)

// waitChunk is the wait_ms of a waiting request's next chunk, and its
// keep_ms.
//
// The wait is at most WaitChunk and MaxWait, and short of ctx's deadline
// by a margin, so that the server's 409 arrives before ctx ends and the
// request is never abandoned while queued. The node counts the wait from
// the request's arrival and answers when it runs out, so the margin
// covers the trip there and back and the scheduling of a busy machine: a
// fifth of the time left, at most 100 ms. Time left after a 409 is waited
// for with another chunk.
//
// A chunk that is not the last asks the node to keep its place in the
// queue (KeepPlace) for the next one, so that a long wait stays first
// come first served; the last gives it up with its answer.
func (c *Client) waitChunk(ctx context.Context) (wait, keep time.Duration) {
	wait = min(c.cfg.WaitChunk, MaxWait)
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if last := left - min(left/5, 100*time.Millisecond); last <= wait {
			return last, 0
		}
	}
	if at := c.keepRefused.Load(); at != 0 && time.Since(time.Unix(0, at)) < keepRetry {
		return wait, 0
	}
	return wait, KeepPlace
}

// keepRetry is how long chunks go without keep_ms after a node refused
// it: a rolling upgrade ends, and then the places are kept again.
var keepRetry = 5 * time.Minute

// refusedKeep reports whether err is a node's refusal of the keep_ms a
// chunk asked for (an older release, whose API has no such field); the
// chunks that follow go without it for keepRetry.
func (c *Client) refusedKeep(keep time.Duration, err error) bool {
	if keep == 0 || !errors.Is(err, drivers.ErrInvalid) || !strings.Contains(err.Error(), "keep_ms") {
		return false
	}
	c.keepRefused.Store(time.Now().UnixNano())
	return true
}

// waitEnded is the error of a wait that ctx ended, with last, the error of
// its last request. It wraps ctx.Err(). A node that queued the request
// answers 409 before ctx ends (the wait asked for leaves a margin), so
// that answer is contention, and the error carries it (with the holder's
// TTL); a failure of the last request is carried (it matches
// drivers.ErrUnavailable); a deadline that passed with no answer at all
// means no node answered in time, and the error also matches
// drivers.ErrOutcomeUnknown (the request may have been queued and
// granted). A cancellation with no failure claims neither.
func waitEnded(ctx context.Context, last error) error {
	if errors.Is(last, drivers.ErrNotAcquired) {
		return fmt.Errorf("client: acquire wait: %w (the key was held: %w)", ctx.Err(), last)
	}
	if errors.Is(last, drivers.ErrUnavailable) {
		return fmt.Errorf("client: acquire wait: %w: %w", ctx.Err(), last)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("client: acquire wait: %w", ctx.Err()) // the caller cancelled: no claim either way
	}
	return fmt.Errorf("client: acquire wait: %w", drivers.OutcomeUnknown("no answer before the deadline", last))
}

// releaseAbandoned releases, in the background and bounded, a grant that
// may have been made to a request whose caller gave up, so that the caller
// returns by its deadline. Release is owner-guarded, so releasing nothing
// is harmless. Close cancels it. A reused owner's grant is left to its TTL
// (drivers.WaitOptions.OwnerReused).
func (c *Client) releaseAbandoned(key, owner string, opts drivers.WaitOptions) {
	if opts.OwnerReused {
		return
	}
	c.cleanups.Go(2*time.Second, func(ctx context.Context) {
		if _, err := c.Release(ctx, key, owner); err != nil {
			c.log.Debug("release after abandoned wait failed", "error", err)
		}
	})
}

// Release deletes key if owner holds it and reports whether it did.
//
// A release is retried on another node when an attempt gets no answer.
// When the retry finds the key not held by owner after an earlier attempt
// may have taken effect, Release cannot tell "this call released it" from
// "it was already gone", and returns an error matching
// drivers.ErrOutcomeUnknown (and drivers.ErrUnavailable) instead of
// false. Either way owner no longer holds the key.
func (c *Client) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := checkKeyOwner(key, owner); err != nil {
		return false, err
	}
	var out api.ReleaseResponse
	earlier, err := c.send(ctx, request{
		op: "release", method: http.MethodPost, path: api.PathRelease,
		body: api.ReleaseRequest{Key: key, Owner: owner},
	}, &out)
	if err != nil {
		return false, err
	}
	if !out.Released && earlier {
		return false, drivers.OutcomeUnknown("release", errReleaseRetried)
	}
	return out.Released, nil
}

// errReleaseRetried is why a release answered "not held" may have worked.
var errReleaseRetried = fmt.Errorf("an earlier attempt got no answer and may have released the key: %w", drivers.ErrNoLongerHeld)

// Extend sets key's deadline to now+ttl if owner holds it. It never
// creates a lock: a lock that is gone gives false.
//
// Unlike Release, a retried Extend needs no such care: an earlier attempt
// that took effect left the key held by owner, so the retry extends it
// again and answers true; a false from the retry means the key is not
// held by owner now, whatever the earlier attempt did.
func (c *Client) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := checkKeyOwner(key, owner); err != nil {
		return false, err
	}
	var out api.ExtendResponse
	err := c.call(ctx, request{
		op: "extend", method: http.MethodPost, path: api.PathExtend, key: key,
		body: api.ExtendRequest{Key: key, Owner: owner, TTLMillis: api.Millis(ttl)},
	}, &out)
	if errors.Is(err, drivers.ErrNotAcquired) {
		// Some servers answer 409 rather than extended=false.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return out.Extended, nil
}

// ForceRelease deletes key whoever holds it.
func (c *Client) ForceRelease(ctx context.Context, key string) error {
	if err := checkText("key", key); err != nil {
		return err
	}
	return c.call(ctx, request{
		op: "force-release", method: http.MethodPost, path: api.PathForceRelease,
		body: api.ForceReleaseRequest{Key: key},
	}, &api.ReleaseResponse{})
}

// Exists reports whether key is held.
func (c *Client) Exists(ctx context.Context, key string) (bool, error) {
	_, found, err := c.Get(ctx, key)
	return found, err
}

// Get returns the holder of key; found is false when the key is free.
func (c *Client) Get(ctx context.Context, key string) (l api.Lock, found bool, err error) {
	if err := checkText("key", key); err != nil {
		return api.Lock{}, false, err
	}
	err = c.call(ctx, request{
		op: "get", method: http.MethodGet, path: api.PathLock, query: url.Values{"key": {key}},
	}, &l)
	if errors.Is(err, ErrNotFound) {
		return api.Lock{}, false, nil
	}
	if err != nil {
		return api.Lock{}, false, err
	}
	return l, true, nil
}

// checkText refuses text that is not valid UTF-8 before any request is
// sent; field names it in the error. The cluster's keys are UTF-8: JSON
// would silently replace the bad bytes with U+FFFD, so that two different
// keys would name one lock, and the same key sent in a query string (Get)
// would name yet another, so that a held lock would read as free.
func checkText(field, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return &drivers.InvalidError{Field: field, Reason: "must be valid UTF-8"}
}

// checkKeyOwner is checkText for a key and an owner token.
func checkKeyOwner(key, owner string) error {
	if err := checkText("key", key); err != nil {
		return err
	}
	return checkText("owner", owner)
}
