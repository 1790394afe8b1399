package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/cluster/rounds"
	"github.com/zerotal/lock/cluster/term"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// leadership is one term of this node as leader, after its takeover.
type leadership struct {
	clock *term.Clock
	// ctx ends when the term does: requests waiting on this leader then
	// answer 503, and the term's loops stop.
	ctx context.Context
}

// watchLeadership follows raft's leader channel: on gaining leadership it
// starts a term (takeover, then the expiry loop); on losing it, or on
// shutdown, it ends the term, whose context then fails the requests
// waiting on this leader.
func (n *Node) watchLeadership() {
	var (
		endTerm context.CancelFunc
		wg      sync.WaitGroup
	)
	stepDown := func() {
		if endTerm == nil {
			return
		}
		endTerm()
		n.lead.Store(nil)
		wg.Wait()
		// The term's goroutine may have published just before it ended.
		n.lead.Store(nil)
		endTerm = nil
	}
	defer stepDown()
	for {
		select {
		case <-n.stopping.Done():
			return
		case isLeader := <-n.raft.LeaderCh():
			stepDown()
			n.metrics.LeaderChanges.Inc()
			if !isLeader {
				n.log.Info("lost leadership")
				continue
			}
			n.log.Info("gained leadership, taking over")
			ctx, cancel := context.WithCancel(n.stopping)
			endTerm = cancel // called by stepDown, also on return
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.serveLeadership(ctx)
			}()
		}
	}
}

// serveLeadership runs one leadership term until ctx ends: takeover, then
// the expiry loop, and beside it the question to the members of what they
// apply (learnFeatures).
func (n *Node) serveLeadership(ctx context.Context) {
	clock, ok := n.takeover(ctx)
	if !ok || ctx.Err() != nil {
		return
	}
	n.lead.Store(&leadership{clock: clock, ctx: ctx})
	n.log.Info("leader ready", "fsm_time", clock.Origin(), "grace", clock.Grace())
	var wg sync.WaitGroup
	wg.Go(func() { n.learnFeatures(ctx) })
	n.expiry.Run(ctx, clock)
	wg.Wait()
}

// cancelOrder is the queued waiters in the order the takeover cancels
// them: a shared key's from the tail of its queue, so that no cancel lets
// in a waiter that is about to be cancelled too (readers behind a waiting
// writer would otherwise get grants nobody waits for, and block the key
// for their TTL). A mutex's cancel lets nobody in: any order does.
func (n *Node) cancelOrder(ctx context.Context) []fsm.Waiter {
	ws := n.fsm.Waiters()
	out := make([]fsm.Waiter, 0, len(ws))
	done := map[string]bool{}
	for _, w := range ws {
		if done[w.Key] {
			continue
		}
		info, ok, err := n.fsm.Get(ctx, w.Key)
		if err != nil || !ok || info.Shared == nil {
			out = append(out, w)
			continue
		}
		done[w.Key] = true
		q := info.Shared.Queue
		for i := len(q) - 1; i >= 0; i-- {
			out = append(out, fsm.Waiter{Key: w.Key, Owner: q[i].Owner})
		}
	}
	return out
}

// takeover makes the new leader safe to serve: a barrier so every entry of
// earlier terms is applied, the clock from the FSM time, a sweep of queued
// waiters nobody waits for (their requests were on the old leader, which
// answered them 503), and this node's HTTP address in the member map.
func (n *Node) takeover(ctx context.Context) (*term.Clock, bool) {
	for {
		err := n.barrier()
		if err == nil {
			break
		}
		n.log.Warn("takeover barrier failed", "error", err)
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
			return nil, false
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false
		case <-t.C:
		}
	}
	t0 := n.fsm.Time()
	if t0 == 0 {
		// A brand-new cluster has no time yet: start from this node's wall
		// clock so deadlines read as unix times. Only the origin is taken
		// from it; it never moves time later.
		t0 = n.cfg.clock().Now().UnixNano()
	}
	clock := term.NewClock(t0, n.cfg.ElectionTimeout+n.cfg.LeaderLeaseTimeout, n.cfg.clock().Since)

	var pending []*rounds.Proposal
	for _, w := range n.cancelOrder(ctx) {
		pending = append(pending, n.propose(fsm.Entry{Op: engine.OpCancelWait, Key: w.Key, Owner: w.Owner, Now: clock.Now()}))
	}
	self := n.AdvertisedHTTPAddr()
	if cur, ok := n.fsm.Member(n.cfg.ID); !ok || cur != self {
		pending = append(pending, n.propose(fsm.Entry{Member: fsm.SetMember, ID: n.cfg.ID, HTTPAddr: self}))
	}
	for _, p := range n.cfg.Bootstrap {
		if _, ok := n.fsm.Member(p.ID); !ok && p.HTTPAddr != "" && p.ID != n.cfg.ID {
			pending = append(pending, n.propose(fsm.Entry{Member: fsm.SetMember, ID: p.ID, HTTPAddr: p.HTTPAddr}))
		}
	}
	// The tick also proves this term can commit (the barrier did too)
	// and moves the FSM time to the new clock's origin.
	pending = append(pending, n.propose(fsm.Entry{Op: engine.OpTick, Now: clock.Now()}))
	failed := false
	for _, p := range pending {
		if _, err := p.Wait(); err != nil {
			n.log.Warn("takeover proposal failed", "error", err)
			failed = failed || rounds.Unavailable(err)
		}
	}
	return clock, !failed
}
