package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

var _ drivers.MultiAcquirer = (*Client)(nil)

// AcquireAll takes every key for owner for ttl in one step, or none
// (drivers.MultiAcquirer, POST /v1/acquire-all): the cluster writes them
// as one log entry. When another owner holds a key, ok is false and busy
// names it, with its holder. Retrying after a lost answer is safe: the
// retry finds owner's grants and refreshes them. A cluster with a member
// of an older release answers an error matching drivers.ErrUnsupported,
// having taken nothing.
func (c *Client) AcquireAll(ctx context.Context, keys []string, owner string, ttl time.Duration) ([]uint64, bool, drivers.Busy, error) {
	if len(keys) == 0 || len(keys) > api.MaxAcquireAllKeys {
		return nil, false, drivers.Busy{}, &drivers.InvalidError{Field: "keys", Reason: fmt.Sprintf("%d keys; name 1 to %d", len(keys), api.MaxAcquireAllKeys)}
	}
	for _, k := range keys {
		if err := checkKeyOwner(k, owner); err != nil {
			return nil, false, drivers.Busy{}, err
		}
	}
	joined := strings.Join(keys, ",")
	req := request{op: "acquire-all", method: http.MethodPost, path: api.PathAcquireAll, key: joined,
		body: api.AcquireAllRequest{Keys: keys, Owner: owner, TTLMillis: api.Millis(ttl)}}
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
