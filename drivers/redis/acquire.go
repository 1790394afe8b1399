package redis

import (
	"context"
	"fmt"

	"github.com/zerotal/lock/drivers"
)

// Acquire serves one drivers.Request: a mutex, a shared claim and a set in one script, and the wait of one key.
func (d *Driver) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	var g drivers.Grant
	var err error
	shared := req.Claim != (drivers.Claim{})
	if len(req.Keys) > 1 {
		switch {
		case shared:
			return g, fmt.Errorf("%w: a set of keys takes mutexes only", drivers.ErrUnsupported)
		case req.Wait:
			return g, fmt.Errorf("%w: no wait for a set of keys", drivers.ErrUnsupported)
		default:
			g.Fences, g.Acquired, g.Busy, err = d.acquireSet(ctx, req.Keys, req.Owner, req.TTL)
		}
		return g, err
	}
	var fence uint64
	key := req.Key()
	switch {
	case shared && req.Wait:
		fence, err = d.acquireClaimWait(ctx, key, req.Owner, req.TTL, req.Claim, req.WaitOptions)
		g.Acquired = err == nil
	case shared:
		fence, g.Acquired, g.Busy.HeldBy, err = d.acquireClaim(ctx, key, req.Owner, req.TTL, req.Claim)
	case req.Wait:
		fence, err = d.acquireKeyWait(ctx, key, req.Owner, req.TTL, req.WaitOptions)
		g.Acquired = err == nil
	default:
		fence, g.Acquired, g.Busy.HeldBy, err = d.acquireKeyHolder(ctx, key, req.Owner, req.TTL)
	}
	if err != nil {
		return drivers.Grant{}, err
	}
	if g.Acquired {
		return drivers.Grant{Acquired: true, Fences: []uint64{fence}}, nil
	}
	g.Busy.Key = key
	return g, nil
}

// Capabilities declares what Acquire serves: all but a wait for a set.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Shared: true, Sets: true}
}
