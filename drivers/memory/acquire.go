package memory

import (
	"context"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
)

// Acquire serves one drivers.Request, whatever its claim, keys and wait,
// with the engine's one acquire: a set is taken in one step of the
// engine, and a wait is handed its keys inside the engine, FIFO, without
// polling.
func (d *Driver) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if err := d.ready(ctx); err != nil {
		return drivers.Grant{}, err
	}
	var one [1]engine.Grant // a single key's grant, on this stack
	grants, busy, err := d.e.Acquire(ctx, engine.AcquireRequest{Keys: req.Keys, Owner: req.Owner, TTL: req.TTL, Claim: req.Claim, MaxHold: req.MaxHold, Wait: req.Wait}, one[:0])
	switch {
	case err != nil:
		if req.Wait && ctx.Err() != nil && busy.Owner != "" {
			err = drivers.HeldByWhenEnded(err, busy.Key, d.heldBy(busy))
		}
		return drivers.Grant{}, err
	case grants == nil:
		g := drivers.Grant{Busy: drivers.Busy{Key: busy.Key}}
		if busy.Owner != "" {
			g.Busy.HeldBy = d.heldBy(busy)
		}
		return g, nil
	}
	fences := req.Fences[:0]
	for _, g := range grants {
		fences = append(fences, g.Fence)
	}
	return drivers.Grant{Acquired: true, Fences: fences}, nil
}

// heldBy is what a refusal tells of the grant g in the way.
func (d *Driver) heldBy(g engine.Grant) drivers.HeldBy {
	return drivers.HeldBy{Holder: drivers.HolderOf(g.Owner), TTL: d.e.Remaining(g)}
}

// Capabilities declares what Acquire serves: everything; an acquire without Wait is a call into this process's engine, which hands a released or expired key to its first waiter in the same step (InstantAcquire), and which keeps each grant's cap on total hold time (MaxHold).
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, InstantAcquire: true, Shared: true, Sets: true, SetWait: true, MaxHold: true}
}
