package term

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/cluster/rounds"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// Clock stamps Now into the commands this leader proposes. It is
// the replicated FSM time t0 read after the takeover barrier, plus the
// local monotonic time elapsed since then minus a grace period: during
// the grace (election timeout + leader lease) time stands still, so a
// holder's remaining TTL can only lengthen across a leader change. Wall
// clocks of different nodes are never compared.
type Clock struct {
	t0    int64
	m0    time.Time // carries Go's monotonic reading
	grace time.Duration
	since func(time.Time) time.Duration // the node's monotonic clock
}

// Now is the time to stamp a command with, unix nanoseconds of FSM time.
func (c *Clock) Now() int64 {
	el := c.since(c.m0) - c.grace
	if el < 0 {
		el = 0
	}
	return c.t0 + int64(el)
}

// UntilRunning is how long time still stands still.
func (c *Clock) UntilRunning() time.Duration {
	d := c.grace - c.since(c.m0)
	if d < 0 {
		return 0
	}
	return d
}

// NewClock starts a term's clock at t0, the FSM time read after the
// takeover barrier; time stands still for grace, then runs with since,
// the node's monotonic clock (time.Since unless a test skews it).
func NewClock(t0 int64, grace time.Duration, since func(time.Time) time.Duration) *Clock {
	return &Clock{t0: t0, m0: time.Now(), grace: grace, since: since}
}

// Origin is t0, the FSM time the term started from.
func (c *Clock) Origin() int64 { return c.t0 }

// Grace is how long time stood still at the start of the term.
func (c *Clock) Grace() time.Duration { return c.grace }

// expireBatch bounds how many expiries one pass proposes: as many as one
// batch entry carries, so a pass is one commit. With 256, 100 k locks
// ending in the same second took over 5 s to end on a three-node cluster
// beside 16 busy workers (bench/etcd -scale).
const expireBatch = fsm.MaxBatchParts

// Expiry is the leader's expiry loop and the state it shares with the
// FSM's apply hook. It sleeps until the earliest deadline (or a kick from
// a new grant), proposes an expire entry for every grant due at the
// leader's clock, and commits a time-only tick every tick interval while
// locks are held. The FSM re-checks each expiry against replicated state,
// so a proposal that turns stale on the way is a no-op.
type Expiry struct {
	eng     Table
	propose func(fsm.Entry) *rounds.Proposal
	tick    time.Duration

	// kick wakes the loop when a new deadline may be earlier.
	kick chan struct{}
	// wake is the FSM time the loop sleeps until: a grant due earlier
	// kicks it. MaxInt64 while it is not sleeping (kick on every grant).
	wake atomic.Int64
	// paused stops the loop from proposing (tests only).
	paused atomic.Bool
}

// Table is what the expiry loop reads of the replicated lock table (the
// node's *fsm.FSM).
type Table interface {
	// Due returns up to limit grants whose deadline is <= now.
	Due(ctx context.Context, now int64, limit int) ([]engine.Grant, error)
	// NextDeadline is the earliest deadline; ok is false when the table
	// is empty.
	NextDeadline(ctx context.Context) (deadline int64, ok bool, err error)
	// Keys is the number of keys held.
	Keys() int
}

// NewExpiry returns the expiry loop of a node whose table is eng, which
// proposes through propose and commits a time-only tick every tick while
// locks are held.
func NewExpiry(eng Table, propose func(fsm.Entry) *rounds.Proposal, tick time.Duration) *Expiry {
	x := &Expiry{eng: eng, propose: propose, tick: tick, kick: make(chan struct{}, 1)}
	x.wake.Store(math.MaxInt64)
	return x
}

// Granted tells the loop about a grant with the given deadline (FSM
// time), made or handed off by an applied entry. It runs in the FSM's
// apply hook and never blocks.
func (x *Expiry) Granted(deadline int64) {
	if deadline < x.wake.Load() {
		select {
		case x.kick <- struct{}{}:
		default:
		}
	}
}

// Pause stops (true) or resumes the loop's proposals; for tests that
// need a due grant to stay in the table.
func (x *Expiry) Pause(paused bool) { x.paused.Store(paused) }

// Run is the loop of one leadership term, at clock; it returns when ctx
// ends or a proposal finds leadership gone.
func (x *Expiry) Run(ctx context.Context, clock *Clock) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	lastTick := time.Now()
	defer x.wake.Store(math.MaxInt64)
	for {
		// From here until the loop sleeps, every new grant kicks it: one
		// applied after NextDeadline is read must not be missed.
		x.wake.Store(math.MaxInt64)
		now := clock.Now()
		next, ok, err := x.eng.NextDeadline(ctx)
		if err != nil {
			return
		}
		wait := x.tick
		if x.paused.Load() {
			ok = false
		}
		if ok && next <= now {
			expired, err := x.expireDue(ctx, now)
			if err != nil {
				return // leadership lost or shutting down
			}
			if expired > 0 {
				continue
			}
			// Nothing applied although grants looked due: back off a little
			// rather than spin.
			wait = 10 * time.Millisecond
		} else if ok {
			if d := time.Duration(next-now) + clock.UntilRunning(); d < wait {
				wait = d
			}
		}
		// The clock may stand still (grace) while real time passes, so the
		// FSM time at wake-up is at most now+wait: a kick for any grant due
		// before that is never missed.
		if !x.paused.Load() {
			x.wake.Store(now + int64(wait))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-x.kick: // Reset above discards a pending fire (Go 1.23 timers)
		case <-timer.C:
		}
		if time.Since(lastTick) >= x.tick && x.eng.Keys() > 0 {
			lastTick = time.Now()
			if _, err := x.propose(fsm.Entry{Op: engine.OpTick, Now: clock.Now()}).Wait(); err != nil && rounds.Unavailable(err) {
				return
			}
		}
	}
}

// expireDue proposes an expiry for every grant due at now and reports how
// many applied.
func (x *Expiry) expireDue(ctx context.Context, now int64) (int, error) {
	due, err := x.eng.Due(ctx, now, expireBatch)
	if err != nil {
		return 0, err
	}
	// Propose them all before waiting on any: raft commits them together.
	pending := make([]*rounds.Proposal, len(due))
	for i, g := range due {
		pending[i] = x.propose(fsm.Entry{Op: engine.OpExpire, Key: g.Key, Owner: g.Owner, ExpectFence: g.Fence, Now: now})
	}
	applied := 0
	var firstErr error
	for _, p := range pending {
		resp, err := p.Wait()
		switch {
		case err != nil && firstErr == nil && rounds.Unavailable(err):
			firstErr = err
		case err == nil && resp.Result.OK:
			applied++
		}
	}
	return applied, firstErr
}
