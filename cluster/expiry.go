package cluster

import (
	"context"
	"math"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/fsm"
)

// expireBatch bounds how many expiries one round proposes.
const expireBatch = 256

// runExpiry is the leader's expiry loop. It sleeps until the earliest
// deadline (or a kick from a new grant), proposes an expire entry for every
// grant due at the leader's clock, and commits a time-only tick every
// TickInterval while locks are held. The FSM re-checks each expiry against
// replicated state, so a proposal that turns stale on the way is a no-op.
func (n *Node) runExpiry(stop <-chan struct{}, clock *logicalClock) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()

	eng := n.fsm.Engine()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	lastTick := time.Now()
	defer n.expiryWake.Store(math.MaxInt64)
	for {
		// From here until the loop sleeps, every new grant kicks it: one
		// applied after NextDeadline is read must not be missed.
		n.expiryWake.Store(math.MaxInt64)
		now := clock.now()
		next, ok, err := eng.NextDeadline(ctx)
		if err != nil {
			return
		}
		wait := n.cfg.TickInterval
		if n.pauseExpiry.Load() {
			ok = false
		}
		if ok && next <= now {
			expired, err := n.expireDue(ctx, now)
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
			if d := time.Duration(next-now) + clock.untilRunning(); d < wait {
				wait = d
			}
		}
		// The clock may stand still (grace) while real time passes, so the
		// FSM time at wake-up is at most now+wait: a kick for any grant due
		// before that is never missed.
		if !n.pauseExpiry.Load() {
			n.expiryWake.Store(now + int64(wait))
		}
		timer.Reset(wait)
		select {
		case <-stop:
			return
		case <-n.kick: // Reset above discards a pending fire (Go 1.23 timers)
		case <-timer.C:
		}
		if time.Since(lastTick) >= n.cfg.TickInterval && eng.Len() > 0 {
			lastTick = time.Now()
			if _, err := fsm.Await(n.propose(fsm.Entry{Type: fsm.TypeTick, Now: clock.now()})); err != nil && isRaftUnavailable(err) {
				return
			}
		}
	}
}

// expireDue proposes an expiry for every grant due at now and reports how
// many applied.
func (n *Node) expireDue(ctx context.Context, now int64) (int, error) {
	due, err := n.fsm.Engine().Due(ctx, now, expireBatch)
	if err != nil {
		return 0, err
	}
	// Propose them all before waiting on any: raft commits them together.
	futures := make([]raft.ApplyFuture, len(due))
	for i, g := range due {
		futures[i] = n.propose(fsm.Entry{Type: fsm.TypeExpire, Key: g.Key, Owner: g.Owner, ExpectFence: g.Fence, Now: now})
	}
	applied := 0
	var firstErr error
	for _, f := range futures {
		resp, err := fsm.Await(f)
		switch {
		case err != nil && firstErr == nil && isRaftUnavailable(err):
			firstErr = err
		case err == nil && resp.Result.OK:
			applied++
		}
	}
	return applied, firstErr
}
