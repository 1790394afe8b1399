package lock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// MultiFunc is the work done while every lock of a TryAll or BlockAll is
// held. ctx is cancelled as soon as any of them is lost, or about to be
// (context.Cause says which: a *LostError with its Key), or when the
// caller's context ends. locks are the held locks in the order of the
// keys as given; each has its own Fence.
type MultiFunc func(ctx context.Context, locks []*Lock) error

// MaxMultiKeys is the most keys one TryAll or BlockAll takes.
const MaxMultiKeys = drivers.MaxMultiKeys

// TryAll acquires every key once, all or none, and runs fn while holding
// them; when another owner holds one of them it returns that key's
// *NotAcquiredError at once, without running fn and with none of the
// keys held. A duplicate key counts once.
//
// Where the backend can (drivers.Capabilities.Sets: memory, cluster, SQLite,
// Redis when the keys share a hash slot) the keys are taken in one atomic
// step: no other caller ever sees some of them taken and not the others.
// Elsewhere, and on a cluster member that cannot apply it yet, they are
// taken one at a time in sorted order (the ordered fallback): two callers
// naming the same keys in any order never deadlock, but between the first
// grant and the last the caller holds some of the keys, and a concurrent
// TryAll of an overlapping set may fail where one of the two could have
// won. The options are those of Try (WithRefresh, WithOwner, ...),
// applied to each key.
func (m *Manager) TryAll(ctx context.Context, keys []string, ttl time.Duration, fn MultiFunc, opts ...Option) error {
	return m.all(ctx, keys, ttl, fn, opts, false)
}

// BlockAll waits for every key, then runs fn while holding them all.
//
// Where the backend waits for a whole set (drivers.Capabilities.SetWait: the
// memory backend), the wait is first come, first served for the set: the
// free keys are taken and the busy ones queued for in one step, so a
// BlockAll never overtakes an earlier request on any of its keys, and is
// never overtaken by a later one. Elsewhere it takes every key in one
// step when they are all free (as TryAll does), and otherwise waits for
// them in sorted order, holding the ones it has while it waits for the
// next. Either way two BlockAll calls naming the same keys in any order
// never deadlock. WithTimeout bounds the whole wait (default: the TTL);
// when it passes, the keys taken are released and the *NotAcquiredError of
// the key still waited for is returned. The other options are those of
// Block, applied to each key.
func (m *Manager) BlockAll(ctx context.Context, keys []string, ttl time.Duration, fn MultiFunc, opts ...Option) error {
	return m.all(ctx, keys, ttl, fn, opts, true)
}

func (m *Manager) all(ctx context.Context, keys []string, ttl time.Duration, fn MultiFunc, opts []Option, wait bool) error {
	if fn == nil {
		return &InvalidError{Field: "fn", Reason: "must not be nil"}
	}
	if len(keys) == 0 || len(keys) > MaxMultiKeys {
		return &InvalidError{Field: "keys", Reason: "must name between 1 and 64 keys"}
	}
	order := slices.Clone(keys)
	slices.Sort(order)
	order = slices.Compact(order)
	// Every key and option is checked before the first grant.
	if m.invalid != nil {
		return m.invalid
	}
	if err := validateTTL(ttl); err != nil {
		return err
	}
	for _, k := range order {
		if err := validateKey(m.prefix, k); err != nil {
			return err
		}
	}
	o, err := buildOptions(ttl, opts)
	if err != nil {
		return err
	}
	if o.claim.Kind != 0 {
		return &InvalidError{Field: "option", Reason: "TryAll and BlockAll take mutexes only: Semaphore, Read and Write do not apply"}
	}
	if err := m.checkMaxHold(o.maxHold); err != nil {
		return err
	}
	if wait && m.caps.SetWait {
		if done, err := m.allInOneStep(ctx, keys, order, ttl, fn, &o, wait, true); done {
			return err
		}
	}
	if m.caps.Sets {
		if done, err := m.allInOneStep(ctx, keys, order, ttl, fn, &o, wait, false); done {
			return err
		}
	}
	deadline := time.Now().Add(o.timeout)
	held := make(map[string]*Lock, len(order))
	var take func(ctx context.Context, i int) error
	take = func(ctx context.Context, i int) error {
		if i == len(order) {
			locks := make([]*Lock, len(keys))
			for j, k := range keys {
				locks[j] = held[k]
			}
			return fn(ctx, locks)
		}
		next := func(ctx context.Context, l *Lock) error {
			held[order[i]] = l
			return take(ctx, i+1)
		}
		if !wait {
			return m.Try(ctx, order[i], ttl, next, opts...)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &NotAcquiredError{Key: order[i]}
		}
		return m.Block(ctx, order[i], ttl, next, append(slices.Clip(opts), WithTimeout(left))...)
	}
	return take(ctx, 0)
}

// multiCalls prepares a Try's state for each key of order, before any
// backend call, and returns the keys with the Manager's prefix.
func (m *Manager) multiCalls(order []string, ttl time.Duration, o *options) ([]*call, []string) {
	calls := make([]*call, len(order))
	full := make([]string, len(order))
	for i, k := range order {
		c := &call{}
		m.initLock(&c.l, k, ttl)
		c.l.fixedOwner, c.l.maxHold = o.owner, o.maxHold
		calls[i], full[i] = c, c.l.fullKey()
	}
	return calls, full
}

// allInOneStep takes the keys of order in one request to the backend,
// then runs fn while holding them: a set taken at once
// (drivers.Capabilities.Sets), or with queue a wait for the whole set, first
// come first served, up to the WithTimeout duration (SetWait). done is
// false when the backend cannot serve the request (nothing was taken: the
// caller falls back to taking the keys in order), or when, without queue,
// a key is busy and the caller is to wait.
func (m *Manager) allInOneStep(ctx context.Context, keys, order []string, ttl time.Duration, fn MultiFunc, o *options, wait, queue bool) (done bool, err error) {
	if m.stopping.Load() {
		return true, ErrClosed
	}
	calls, full := m.multiCalls(order, ttl, o)
	first := &calls[0].l
	r := drivers.Request{Keys: full, Owner: first.nextOwner(), TTL: ttl, MaxHold: o.maxHold}
	reqCtx := ctx
	if queue {
		if err := ctx.Err(); err != nil {
			return true, first.waitCancelled(ctx)
		}
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
		var w quitWait
		m.waits.add(&w, cancel)
		defer w.remove()
		r.Wait, r.WaitOptions = true, drivers.WaitOptions{RetryDelay: o.retryDelay, OwnerReused: first.fixedOwner != ""}
	}
	sent := time.Now()
	g, err := m.driver.Acquire(reqCtx, r)
	switch {
	case errors.Is(err, drivers.ErrUnsupported):
		return false, nil
	case err != nil:
		if !queue || reqCtx.Err() == nil {
			// A cancelled wait the driver cleans up itself
			// (drivers.Request.Wait), but not an outage.
			for _, c := range calls {
				c.l.abandon(reqCtx, r.Owner, err)
			}
		}
		if !queue {
			return true, failed(ctx, "acquire", strings.Join(order, ","), true, err)
		}
		failure := first.waitFailed(ctx, reqCtx, "wait", err)
		if na, ok := failure.(*NotAcquiredError); ok {
			// The key still waited for, as the backend names it.
			if held, ok := errors.AsType[*drivers.NotAcquiredError](err); ok && held.Key != "" {
				na.Key = strings.TrimPrefix(held.Key, m.prefix)
			}
		}
		return true, failure
	case !g.Acquired && wait:
		return false, nil
	case !g.Acquired:
		key := strings.TrimPrefix(g.Busy.Key, m.prefix)
		return true, &NotAcquiredError{Key: key, Holder: g.Busy.Holder, HolderTTL: g.Busy.TTL}
	}
	for i, c := range calls {
		c.l.granted(r.Owner, g.Fences[i], sent)
	}
	// ExpiresAt counts from sending, and the grants' TTL and cap from the
	// last hand-off: after a long wait, anchor every estimate again.
	if queue && time.Since(sent) > first.anchorAfter() {
		for _, c := range calls {
			c.l.loosenCap(r.Owner)
		}
		for _, c := range calls {
			if ok, err := c.l.refreshLocked(ctx); !ok || err != nil {
				for _, c := range calls {
					c.l.releaseOwner(ctx, r.Owner)
				}
				if err == nil {
					err = &LostError{Key: c.l.key, Fence: c.l.Fence(), Reason: ErrLostExpired}
				}
				return true, err
			}
		}
	}
	return true, m.holdAll(ctx, calls, keys, order, r.Owner, fn, o)
}

// holdAll runs fn while every call's lock, granted to owner, is held.
// Each lock is watched and released by its own callWhileHeld, nested so
// that the loss of any one ends fn's ctx. A lock whose turn never came
// (the Manager closed in between) is released here.
func (m *Manager) holdAll(ctx context.Context, calls []*call, keys, order []string, owner string, fn MultiFunc, o *options) error {
	held := make(map[string]*Lock, len(order))
	for i, c := range calls {
		held[order[i]] = &c.l
	}
	entered := 0
	defer func() {
		for _, c := range calls[entered:] {
			c.l.releaseOwner(ctx, owner)
		}
	}()
	var run func(ctx context.Context, i int) error
	run = func(ctx context.Context, i int) error {
		if i == len(calls) {
			locks := make([]*Lock, len(keys))
			for j, k := range keys {
				locks[j] = held[k]
			}
			return fn(ctx, locks)
		}
		entered = i + 1
		return m.callWhileHeld(ctx, calls[i], func(ctx context.Context, _ *Lock) error { return run(ctx, i+1) }, o)
	}
	return run(ctx, 0)
}
