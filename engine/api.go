package engine

import (
	"context"
	"time"
)

// Acquire takes key for owner for ttl when the key is free or its holder's
// deadline has passed (a new grant with a new fence), or refreshes it when
// owner already holds it (deadline = now+ttl, same fence). When another
// owner holds the key it returns ok=false, a nil error, and the holder's
// grant.
//
// If ctx ends after the command reached the engine, Acquire returns
// ctx.Err() and the command may still take effect; a caller that cares
// releases with a fresh context.
func (e *Engine) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (Grant, bool, error) {
	if e.cfg.Replicated {
		return Grant{}, false, errLiveOnly
	}
	r := getReq(kAcquire)
	r.key, r.owner, r.ttl = key, owner, ttl
	if err := e.roundTrip(ctx, r); err != nil {
		return Grant{}, false, err
	}
	g, ok, err := r.grant, r.ok, r.err
	putReq(r)
	return g, ok, err
}

// AcquireWait is Acquire that, when another owner holds the key, queues
// owner FIFO behind it and blocks until the key is handed over (on
// release, force release or expiry of the holder) or ctx ends. When ctx
// ends it returns ctx.Err() and the waiter is withdrawn; if the hand-off
// crossed the cancellation, the engine releases that grant itself and
// hands it to the next waiter, so a cancelled wait never leaves a lock
// behind. The same owner waiting twice for one key gets an error matching
// drivers.ErrInvalid.
func (e *Engine) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	if e.cfg.Replicated {
		return Grant{}, errLiveOnly
	}
	r := getReq(kAcquireWait)
	r.key, r.owner, r.ttl = key, owner, ttl
	if err := e.send(ctx, r); err != nil {
		return Grant{}, err
	}
	if e.sentAfterClose() {
		if err := e.closedReply(r); err != nil {
			return Grant{}, err
		}
	} else {
		select {
		case <-r.reply:
		case <-ctx.Done():
			e.withdraw(r)
			return Grant{}, ctx.Err()
		}
	}
	g, err := r.grant, r.err
	putReq(r)
	return g, err
}

// withdraw tells the loop that the caller of w stopped waiting. The cancel
// is sent without ctx (it must reach the loop) but gives up if the engine
// closes, since Close answers every waiter anyway.
func (e *Engine) withdraw(w *request) {
	c := getReq(kCancelWait)
	c.key, c.target = w.key, w
	select {
	case e.reqc <- c:
	case <-e.done:
		putReq(c)
		return
	}
	if e.sentAfterClose() {
		// Close answers w and c (or never sees c); neither is reused.
		return
	}
	<-c.reply
	if c.err != nil {
		// Closed: the final drain answered c, and answers w separately,
		// perhaps not yet; neither is reused.
		return
	}
	putReq(c)
	// The loop has processed the cancel: w was withdrawn (no answer will
	// come) or answered before it (the answer is buffered). Either way the
	// loop holds no reference to w any more.
	select {
	case <-w.reply:
	default:
	}
	putReq(w)
}

// Release frees key if owner holds it; the next waiter, if any, is handed
// the key at once. A release by an owner that no longer holds the key (it
// expired, or another owner holds it now) is a no-op that returns false.
func (e *Engine) Release(ctx context.Context, key, owner string) (bool, error) {
	if e.cfg.Replicated {
		return false, errLiveOnly
	}
	r := getReq(kRelease)
	r.key, r.owner = key, owner
	if err := e.roundTrip(ctx, r); err != nil {
		return false, err
	}
	ok, err := r.ok, r.err
	putReq(r)
	return ok, err
}

// Extend sets the deadline of key to now+ttl if owner holds it and it has
// not expired. It never grants: extending a lock that is gone returns
// false (with the current holder's grant, if another owner holds it).
func (e *Engine) Extend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, bool, error) {
	if e.cfg.Replicated {
		return Grant{}, false, errLiveOnly
	}
	r := getReq(kExtend)
	r.key, r.owner, r.ttl = key, owner, ttl
	if err := e.roundTrip(ctx, r); err != nil {
		return Grant{}, false, err
	}
	g, ok, err := r.grant, r.ok, r.err
	putReq(r)
	return g, ok, err
}

// ForceRelease frees key whoever holds it and hands it to the next
// waiter. It reports whether the key was held; a free key is not an error.
func (e *Engine) ForceRelease(ctx context.Context, key string) (bool, error) {
	if e.cfg.Replicated {
		return false, errLiveOnly
	}
	r := getReq(kForce)
	r.key = key
	if err := e.roundTrip(ctx, r); err != nil {
		return false, err
	}
	ok, err := r.ok, r.err
	putReq(r)
	return ok, err
}

// Get describes key; ok is false when it is not held. In replicated mode a
// grant past its deadline that no OpExpire has ended yet is reported as it
// is, with its deadline.
func (e *Engine) Get(ctx context.Context, key string) (Info, bool, error) {
	r := getReq(kGet)
	r.key = key
	if err := e.roundTrip(ctx, r); err != nil {
		return Info{}, false, err
	}
	info, ok, err := r.info, r.ok, r.err
	putReq(r)
	if err != nil {
		return Info{}, false, err
	}
	return info, ok, nil
}

// List describes the keys that start with prefix, sorted by key; at most
// limit of them when limit > 0.
func (e *Engine) List(ctx context.Context, prefix string, limit int) ([]Info, error) {
	r := getReq(kList)
	r.key, r.limit = prefix, limit
	if err := e.roundTrip(ctx, r); err != nil {
		return nil, err
	}
	infos, err := r.infos, r.err
	putReq(r)
	if err != nil {
		return nil, err
	}
	return infos, nil
}

// Snapshot encodes the whole table: fence counter, engine time, every
// entry and its waiters in queue order. The same state always gives the
// same bytes.
func (e *Engine) Snapshot(ctx context.Context) ([]byte, error) {
	r := getReq(kSnapshot)
	if err := e.roundTrip(ctx, r); err != nil {
		return nil, err
	}
	data, err := r.data, r.err
	putReq(r)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Restore replaces the whole table with the one snap encodes. Corrupt or
// truncated input is refused with an error and leaves the state as it
// was. ctx bounds only the hand-over to the engine: once the engine has
// the new table, Restore waits for the swap, so its answer is never in
// doubt. In live mode, callers blocked in AcquireWait are told their wait
// ended (an error matching drivers.ErrUnavailable).
func (e *Engine) Restore(ctx context.Context, snap []byte) error {
	nt, err := decodeTable(snap)
	if err != nil {
		return err
	}
	r := getReq(kRestore)
	r.table = nt
	if err := e.settle(ctx, r); err != nil {
		return err
	}
	err = r.err
	putReq(r)
	return err
}

// Apply applies a committed batch of commands in order, in one round trip
// to the engine, and returns one Result per command; per-command errors
// are in the results. Only a replicated engine accepts it. ctx bounds only
// the hand-over: once the engine has the batch, Apply waits for it to be
// applied, so the caller always knows whether it was. cmds must not change
// until Apply returns.
func (e *Engine) Apply(ctx context.Context, cmds []Command) ([]Result, error) {
	if !e.cfg.Replicated {
		return nil, errReplicatedOnly
	}
	r := getReq(kApply)
	r.cmds = cmds
	if err := e.settle(ctx, r); err != nil {
		return nil, err
	}
	res, err := r.results, r.err
	putReq(r)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Due returns up to limit grants (all when limit <= 0) whose deadline is
// <= now, sorted by deadline then key: what a leader proposes OpExpire for.
func (e *Engine) Due(ctx context.Context, now int64, limit int) ([]Grant, error) {
	r := getReq(kDue)
	r.now, r.limit = now, limit
	if err := e.roundTrip(ctx, r); err != nil {
		return nil, err
	}
	grants, err := r.grants, r.err
	putReq(r)
	if err != nil {
		return nil, err
	}
	return grants, nil
}

// Waiters returns every queued waiter, sorted by key then owner.
func (e *Engine) Waiters(ctx context.Context) ([]Waiter, error) {
	r := getReq(kWaiters)
	if err := e.roundTrip(ctx, r); err != nil {
		return nil, err
	}
	ws, err := r.waiters, r.err
	putReq(r)
	return ws, err
}

// IsWaiting reports whether owner is queued for key.
func (e *Engine) IsWaiting(ctx context.Context, key, owner string) (bool, error) {
	r := getReq(kIsWaiting)
	r.key, r.owner = key, owner
	if err := e.roundTrip(ctx, r); err != nil {
		return false, err
	}
	ok, err := r.ok, r.err
	putReq(r)
	return ok, err
}

// NextDeadline returns the earliest deadline in the table; ok is false
// when the table is empty.
func (e *Engine) NextDeadline(ctx context.Context) (int64, bool, error) {
	r := getReq(kNext)
	if err := e.roundTrip(ctx, r); err != nil {
		return 0, false, err
	}
	d, ok, err := r.deadline, r.ok, r.err
	putReq(r)
	if err != nil {
		return 0, false, err
	}
	return d, ok, nil
}

// Remaining is how long g has left by the engine's clock, 0 once it has
// ended (or in replicated mode, where time is the log's).
func (e *Engine) Remaining(g Grant) time.Duration {
	if e.now == nil {
		return 0
	}
	return time.Duration(max(g.Deadline-e.now(), 0))
}
