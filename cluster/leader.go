package cluster

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/fsm"
)

// leadership is one term of this node as leader, after its takeover.
type leadership struct {
	clock *logicalClock
	// done is closed when leadership ends; requests waiting on this
	// leader then answer 503.
	done chan struct{}
}

// logicalClock stamps Now into the commands this leader proposes. It is
// the replicated FSM time t0 read after the takeover barrier, plus the
// local monotonic time elapsed since then minus a grace period: during
// the grace (election timeout + leader lease) time stands still, so a
// holder's remaining TTL can only lengthen across a leader change. Wall
// clocks of different nodes are never compared.
type logicalClock struct {
	t0    int64
	m0    time.Time // carries Go's monotonic reading
	grace time.Duration
}

func (c *logicalClock) now() int64 {
	el := faultSince(c.m0) - c.grace
	if el < 0 {
		el = 0
	}
	return c.t0 + int64(el)
}

// untilRunning is how long time still stands still.
func (c *logicalClock) untilRunning() time.Duration {
	d := c.grace - faultSince(c.m0)
	if d < 0 {
		return 0
	}
	return d
}

// watchLeadership follows raft's leader channel: on gaining leadership it
// starts a takeover and the leader loops; on losing it (or on shutdown) it
// stops them and fails the requests waiting on this leader.
func (n *Node) watchLeadership() {
	var (
		stop chan struct{}
		wg   sync.WaitGroup
	)
	stepDown := func() {
		if stop == nil {
			return
		}
		close(stop)
		if l := n.lead.Swap(nil); l != nil {
			close(l.done)
		}
		wg.Wait()
		// The takeover goroutine may have published just before stop.
		if l := n.lead.Swap(nil); l != nil {
			close(l.done)
		}
		stop = nil
	}
	defer stepDown()
	for {
		select {
		case <-n.closing:
			return
		case isLeader := <-n.raft.LeaderCh():
			stepDown()
			n.metrics.leaderChanges.Inc()
			if !isLeader {
				n.log.Info("lost leadership")
				continue
			}
			n.log.Info("gained leadership, taking over")
			stop = make(chan struct{})
			wg.Add(1)
			go func(stop chan struct{}) {
				defer wg.Done()
				n.serveLeadership(stop)
			}(stop)
		}
	}
}

// serveLeadership runs one leadership term: takeover, then the expiry loop until
// stop is closed.
func (n *Node) serveLeadership(stop chan struct{}) {
	clock, ok := n.takeover(stop)
	if !ok {
		return
	}
	l := &leadership{clock: clock, done: make(chan struct{})}
	select {
	case <-stop:
		return
	default:
	}
	n.lead.Store(l)
	n.log.Info("leader ready", "fsm_time", clock.t0, "grace", clock.grace)
	n.runExpiry(stop, clock)
}

// takeover makes the new leader safe to serve: a barrier so every entry of
// earlier terms is applied, the clock from the FSM time, a sweep of queued
// waiters nobody waits for (their requests were on the old leader, which
// answered them 503), and this node's HTTP address in the member map.
func (n *Node) takeover(stop chan struct{}) (*logicalClock, bool) {
	for {
		err := n.barrier()
		if err == nil {
			break
		}
		n.log.Warn("takeover barrier failed", "error", err)
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
			return nil, false
		}
		select {
		case <-stop:
			return nil, false
		case <-time.After(50 * time.Millisecond):
		}
	}
	t0 := n.fsm.Time()
	if t0 == 0 {
		// A brand-new cluster has no time yet: start from this node's wall
		// clock so deadlines read as unix times. Only the origin is taken
		// from it; it never moves time later.
		t0 = faultNow().UnixNano()
	}
	clock := &logicalClock{t0: t0, m0: time.Now(), grace: n.cfg.ElectionTimeout + n.cfg.LeaderLeaseTimeout}

	var futures []raft.ApplyFuture
	for _, w := range n.fsm.Waiters() {
		futures = append(futures, n.propose(fsm.Entry{Type: fsm.TypeCancelWait, Key: w.Key, Owner: w.Owner, Now: clock.now()}))
	}
	self := n.AdvertisedHTTPAddr()
	if cur, ok := n.fsm.Member(n.cfg.ID); !ok || cur != self {
		futures = append(futures, n.propose(fsm.Entry{Type: fsm.TypeSetMember, ID: n.cfg.ID, HTTPAddr: self}))
	}
	for _, p := range n.cfg.Bootstrap {
		if _, ok := n.fsm.Member(p.ID); !ok && p.HTTPAddr != "" && p.ID != n.cfg.ID {
			futures = append(futures, n.propose(fsm.Entry{Type: fsm.TypeSetMember, ID: p.ID, HTTPAddr: p.HTTPAddr}))
		}
	}
	// The tick also proves this term can commit (the barrier did too)
	// and moves the FSM time to the new clock's origin.
	futures = append(futures, n.propose(fsm.Entry{Type: fsm.TypeTick, Now: clock.now()}))
	failed := false
	for _, f := range futures {
		// Await every future, also after a failure: each one is counted by
		// the shutdown gate until awaited.
		if _, err := fsm.Await(f); err != nil {
			n.log.Warn("takeover proposal failed", "error", err)
			failed = failed || isRaftUnavailable(err)
		}
	}
	return clock, !failed
}
