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

// AcquireRequest is one acquire of a live engine: every claim it serves
// is this data.
type AcquireRequest struct {
	// Keys are the names to take, all of them or none: one, or up to
	// drivers.MaxMultiKeys distinct ones.
	Keys  []string
	Owner string
	TTL   time.Duration
	// Claim is how each key is held; the zero Claim is a mutex.
	Claim Claim
	// MaxHold, when not zero, caps each grant's total hold time on the
	// engine's clock (drivers.Request.MaxHold): no refresh takes its
	// deadline past grant time + MaxHold.
	MaxHold time.Duration
	// Wait queues Owner FIFO for what it cannot take now.
	Wait bool
}

// Acquire takes every key of req for req.Owner for req.TTL as req.Claim says, or
// none, in one step: a key owner holds is refreshed (deadline = now+ttl,
// same fence), a free key or one the claim fits beside its holders with
// nobody queued gets a new grant with a new fence. It returns the grants
// in the order of req.Keys, written into into when it has room for them
// (a caller's own array spares the allocation; nil allocates). When one
// is busy it returns nil grants, a nil error and busy, the holder in the
// way (drivers.Claim.InTheWay). A key
// held as another kind, or as a semaphore of another limit, is an error
// matching drivers.ErrInvalid.
//
// Without Wait, ctx is heeded until the command reaches the engine. From
// then on the answer is waited for however ctx ends, so the outcome is
// always known: the loop answers every command without blocking (see
// loop.call).
//
// With Wait a busy key does not refuse: the free keys are taken at once
// and owner is queued FIFO for the busy ones, all in one step, and it
// returns when the last of them is handed over, with every grant (their
// TTL counted from then). Meanwhile the keys taken are held with no
// deadline, so none can lapse while the others are waited for; every
// queue sees the requests in the order they came, so a request never
// overtakes an earlier one on any of its keys, and requests naming the
// same keys in any order never wait for each other in a circle. A key it
// took while waiting that is forced free meanwhile breaks the set: it is
// then answered a *drivers.NotAcquiredError naming that key, having let go
// of the others. The same owner waiting twice for one key gets an error
// matching drivers.ErrInvalid. When ctx ends first it returns ctx.Err()
// and busy, the holder in the way of the first key still waited for: the
// places are withdrawn and the keys held released, including a last
// hand-off that crossed the cancellation, so a cancelled wait never
// leaves a key behind.
func (e *Engine) Acquire(ctx context.Context, req AcquireRequest, into []Grant) (grants []Grant, busy Grant, err error) {
	r := getReq(kAcquire)
	r.keys, r.owner, r.ttl, r.claim, r.wait, r.maxHold = req.Keys, req.Owner, req.TTL, req.Claim, req.Wait, req.MaxHold
	if !req.Wait {
		if err := e.settle(ctx, r); err != nil {
			return nil, Grant{}, err
		}
	} else if err := e.send(ctx, r); err != nil {
		return nil, Grant{}, err
	} else if !e.sentAfterClose() {
		select {
		case <-r.reply:
		case <-ctx.Done():
			return nil, e.withdraw(r), ctx.Err()
		}
	} else if err := e.closedReply(r); err != nil {
		return nil, Grant{}, err
	}
	busy, err = r.grant, r.err
	if err == nil && r.ok {
		grants = append(into[:0], r.grants...)
		busy = Grant{}
	}
	putReq(r)
	return grants, busy, err
}

// withdraw tells the loop that the caller of w stopped waiting. The cancel
// is sent without ctx (it must reach the loop) but gives up if the engine
// closes, since Close answers every waiter anyway.
//
// It returns what the cancel answered: the holder in the way of the first
// key w was still waiting for.
func (e *Engine) withdraw(w *request) (busy Grant) {
	c := getReq(kCancelWait)
	c.target = w
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
// not expired, never past the grant's cap (AcquireRequest.MaxHold). It
// never grants: extending a lock that is gone returns
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
