package engine

import (
	"context"
	"time"
)

// Engine is the embedded lock engine: one goroutine owns the lock table
// and serves the commands callers send it, with time from a clock, so a
// grant ends by itself at its deadline and its first waiter gets it. It
// is safe for concurrent use.
type Engine struct{ loop }

// New starts a live engine on cfg.Clock (nil: the system clock). It
// copies cfg; the caller's struct is never written. Close it to stop its
// goroutine and timer.
func New(cfg Config) (*Engine, error) {
	e := new(Engine)
	if err := e.start(cfg, true); err != nil {
		return nil, err
	}
	return e, nil
}

// Acquire takes key for owner for ttl when the key is free or its holder's
// deadline has passed (a new grant with a new fence), or refreshes it when
// owner already holds it (deadline = now+ttl, same fence). When another
// owner holds the key it returns ok=false, a nil error, and the holder's
// grant.
//
// ctx is heeded until the command reaches the engine. From then on the
// answer is waited for however ctx ends, so the outcome is always known:
// the loop answers every command without blocking (see loop.call).
func (e *Engine) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (Grant, bool, error) {
	return e.call(ctx, newReq(kAcquire, key, owner, ttl))
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
	return e.await(ctx, newReq(kAcquireWait, key, owner, ttl))
}

// AcquireShared is Acquire of a semaphore or read/write lock, held as c
// says: ok is false when the name has no room for owner now, or others
// wait before it (Grant is then the holder whose deadline comes first). A
// name held as another kind, or as a semaphore of another limit, is an
// error matching drivers.ErrInvalid.
func (e *Engine) AcquireShared(ctx context.Context, key, owner string, ttl time.Duration, c Claim) (Grant, bool, error) {
	r := newReq(kAcquire, key, owner, ttl)
	r.claim = c
	return e.call(ctx, r)
}

// AcquireSharedWait is AcquireShared that queues owner FIFO and blocks
// until it is let in or ctx ends, as AcquireWait does for a mutex.
func (e *Engine) AcquireSharedWait(ctx context.Context, key, owner string, ttl time.Duration, c Claim) (Grant, error) {
	r := newReq(kAcquireWait, key, owner, ttl)
	r.claim = c
	return e.await(ctx, r)
}

// await sends the AcquireWait r and waits for its grant; when ctx ends
// first it withdraws r.
func (e *Engine) await(ctx context.Context, r *request) (Grant, error) {
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
//
// It returns what the cancel answered: for an AcquireAllWait, the holder
// of the first key it was still waiting for.
func (e *Engine) withdraw(w *request) (busy Grant) {
	c := getReq(kCancelWait)
	c.key, c.target = w.key, w
	select {
	case e.reqc <- c:
	case <-e.done:
		putReq(c)
		return Grant{}
	}
	if e.sentAfterClose() {
		// Close answers w and c (or never sees c); neither is reused.
		return Grant{}
	}
	<-c.reply
	if c.err != nil {
		// Closed: the final drain answered c, and answers w separately,
		// perhaps not yet; neither is reused.
		return Grant{}
	}
	busy = c.grant
	putReq(c)
	// The loop has processed the cancel: w was withdrawn (no answer will
	// come) or answered before it (the answer is buffered). Either way the
	// loop holds no reference to w any more.
	select {
	case <-w.reply:
	default:
	}
	putReq(w)
	return busy
}

// Release frees key if owner holds it; the next waiter, if any, is handed
// the key at once. A release by an owner that no longer holds the key (it
// expired, or another owner holds it now) is a no-op that returns false.
func (e *Engine) Release(ctx context.Context, key, owner string) (bool, error) {
	_, ok, err := e.call(ctx, newReq(kRelease, key, owner, 0))
	return ok, err
}

// Extend sets the deadline of key to now+ttl if owner holds it and it has
// not expired. It never grants: extending a lock that is gone returns
// false (with the current holder's grant, if another owner holds it).
func (e *Engine) Extend(ctx context.Context, key, owner string, ttl time.Duration) (Grant, bool, error) {
	return e.call(ctx, newReq(kExtend, key, owner, ttl))
}

// ForceRelease frees key whoever holds it and hands it to the next
// waiter. It reports whether the key was held; a free key is not an error.
func (e *Engine) ForceRelease(ctx context.Context, key string) (bool, error) {
	_, ok, err := e.call(ctx, newReq(kForce, key, "", 0))
	return ok, err
}

// Remaining is how long g has left by the engine's clock, 0 once it has
// ended.
func (e *Engine) Remaining(g Grant) time.Duration {
	return time.Duration(max(g.Deadline-e.clock.now(), 0))
}
