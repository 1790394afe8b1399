package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zerotal/lock/internal/testkit/tcpproxy"
)

// faultKind names one fault the nemesis injects.
type faultKind string

const (
	// faultKillLeader: SIGKILL of the leader; restarted from its disk
	// after the hold.
	faultKillLeader faultKind = "kill-leader"
	// faultKillFollower: SIGKILL of a follower; restarted from its disk.
	faultKillFollower faultKind = "kill-follower"
	// faultRestart: SIGTERM of a random node (graceful: a leader hands
	// leadership over first), started again from its disk at once.
	faultRestart faultKind = "restart"
	// faultPauseLeader: SIGSTOP of the leader for longer than every hot
	// TTL, then SIGCONT: the stale leader wakes up, with old deadlines.
	faultPauseLeader faultKind = "pause-leader"
	// faultPartitionLeader: both directions of both of the leader's links
	// cut (raft and HTTP forwarding); clients still reach it.
	faultPartitionLeader faultKind = "partition-leader"
	// faultPartitionFollower: one follower cut from both other nodes.
	faultPartitionFollower faultKind = "partition-follower"
	// faultPartitionAll: every link cut: no majority anywhere, nothing
	// can commit until the heal (clients get 503s and timeouts).
	faultPartitionAll faultKind = "partition-all"
	// faultKillAll: SIGKILL of every node at once, all restarted from
	// their disks after the hold (only what was fsynced survives).
	faultKillAll faultKind = "kill-all"
	// faultSlowClock: the leader's monotonic clock runs at 0.7 of the
	// host's (its wall clock is hours off all along). A slower clock only
	// lengthens locks; a faster one is a documented limit, not injected.
	faultSlowClock faultKind = "slow-clock-leader"
	// faultPauseFollower: SIGSTOP of a follower, then SIGCONT. Waits
	// forwarded through it stay queued at the leader while their clients
	// time out and retry elsewhere; at SIGCONT it drops them all at once.
	faultPauseFollower faultKind = "pause-follower"
	// faultCutForwarding: the followers' HTTP links to the leader (not
	// raft) flap, cut and healed every 50-250ms, for the hold: forwarded
	// waits are dropped at random moments while their clients retry.
	faultCutForwarding faultKind = "cut-forwarding"
)

// allFaults is every kind, in the order the one-at-a-time phase runs them.
var allFaults = []faultKind{faultKillLeader, faultKillFollower, faultRestart, faultPauseLeader,
	faultPartitionLeader, faultPartitionFollower, faultPartitionAll, faultSlowClock, faultKillAll,
	faultPauseFollower, faultCutForwarding}

// faultRecord is one injected fault; times are on the history's clock.
type faultRecord struct {
	kind  faultKind
	node  string
	start time.Duration // injected
	end   time.Duration // healed (node restarted, continued, link healed)
	// leaderBefore and leaderAfter are the leaders before the fault and
	// once the cluster agreed on one after it.
	leaderBefore, leaderAfter string
	// failover, for faults that take the leader away, is the time from the
	// injection until the other two nodes agreed on a new leader; -1 when
	// they did not within the hold plus 10s.
	failover time.Duration
}

// nemesis injects faults into a faultCluster, one at a time.
type nemesis struct {
	c       *faultCluster
	h       *history
	r       *rand.Rand
	records []faultRecord
}

func newNemesis(c *faultCluster, h *history, seed uint64) *nemesis {
	return &nemesis{c: c, h: h, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// inject runs one fault for hold, heals it and records it. It fails when
// the cluster has no leader to aim at (it did not recover from the
// previous fault).
func (n *nemesis) inject(ctx context.Context, kind faultKind, hold time.Duration) error {
	c := n.c
	l, err := c.leader(20 * time.Second)
	if err != nil {
		return fmt.Errorf("before %s: %w", kind, err)
	}
	fo := others(l)[n.r.IntN(2)]
	rec := faultRecord{kind: kind, start: n.h.now(), leaderBefore: c.nodes[l].id, failover: -1}
	switch kind {
	case faultKillLeader, faultKillFollower:
		target := l
		if kind == faultKillFollower {
			target = fo
		}
		rec.node = c.nodes[target].id
		c.nodes[target].kill()
		if target == l {
			rec.failover = n.holdUntilFailover(ctx, l, hold)
		} else {
			sleepCtx(ctx, hold)
		}
		c.start(c.nodes[target])
	case faultRestart:
		target := n.r.IntN(3)
		rec.node = c.nodes[target].id
		c.nodes[target].stop(c.t)
		c.start(c.nodes[target])
	case faultPauseLeader:
		rec.node = c.nodes[l].id
		c.pause(l, true)
		rec.failover = n.holdUntilFailover(ctx, l, hold)
		c.pause(l, false)
	case faultPartitionLeader, faultPartitionFollower:
		target := l
		if kind == faultPartitionFollower {
			target = fo
		}
		rec.node = c.nodes[target].id
		c.partition(target, others(target), true)
		if target == l {
			rec.failover = n.holdUntilFailover(ctx, l, hold)
		} else {
			sleepCtx(ctx, hold)
		}
		c.partition(target, others(target), false)
	case faultPartitionAll:
		rec.node = "all"
		for i := range 3 {
			c.partition(i, others(i), true)
		}
		sleepCtx(ctx, hold)
		c.healAll()
	case faultPauseFollower:
		rec.node = c.nodes[fo].id
		c.pause(fo, true)
		sleepCtx(ctx, hold)
		c.pause(fo, false)
	case faultCutForwarding:
		rec.node = "followers->" + c.nodes[l].id
		n.flapForwarding(ctx, l, hold)
	case faultSlowClock:
		rec.node = c.nodes[l].id
		if err := c.setRate(l, 0.7); err != nil {
			return err
		}
		sleepCtx(ctx, hold)
		if err := c.setRate(l, 1); err != nil {
			return err
		}
	case faultKillAll:
		rec.node = "all"
		for _, nd := range c.nodes {
			nd.kill()
		}
		sleepCtx(ctx, hold)
		for _, nd := range c.nodes {
			c.start(nd)
		}
	default:
		return fmt.Errorf("unknown fault %q", kind)
	}
	rec.end = n.h.now()
	if leaderFault(kind) && rec.failover < 0 {
		return fmt.Errorf("%s of %s: no other leader within %v", kind, rec.node, hold+10*time.Second)
	}
	after, err := c.leader(20 * time.Second)
	if err != nil {
		return fmt.Errorf("after %s of %s: %w", kind, rec.node, err)
	}
	rec.leaderAfter = c.nodes[after].id
	n.records = append(n.records, rec)
	return nil
}

// randomKind picks a fault kind for the mixed phase.
func (n *nemesis) randomKind() faultKind { return allFaults[n.r.IntN(len(allFaults))] }

// leaderFault reports whether kind takes the leader away, so that the two
// other nodes must elect a new one.
func leaderFault(kind faultKind) bool {
	return kind == faultKillLeader || kind == faultPauseLeader || kind == faultPartitionLeader
}

// holdUntilFailover keeps a fault on the old leader old for at least hold
// and until the two other nodes agree on a new leader (at most hold+10s);
// it returns the time to that agreement, -1 if it did not come.
func (n *nemesis) holdUntilFailover(ctx context.Context, old int, hold time.Duration) time.Duration {
	c := n.c
	start := time.Now()
	failover := time.Duration(-1)
	for ctx.Err() == nil && time.Since(start) < hold+10*time.Second {
		if failover >= 0 {
			sleepCtx(ctx, hold-time.Since(start))
			break
		}
		var named []string
		for _, i := range others(old) {
			sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			st, err := c.admin.NodeStatus(sctx, c.nodes[i].httpAddr)
			cancel()
			if err == nil && st.LeaderID != "" && st.LeaderID != c.nodes[old].id {
				named = append(named, st.LeaderID)
			}
		}
		if len(named) == 2 && named[0] == named[1] {
			failover = time.Since(start)
			continue
		}
		sleepCtx(ctx, 20*time.Millisecond)
	}
	return failover
}

// flapForwarding cuts and heals the followers' HTTP forwarding links to
// leader l at random intervals for hold; they end healed.
func (n *nemesis) flapForwarding(ctx context.Context, l int, hold time.Duration) {
	var links []*tcpproxy.Proxy
	for _, f := range others(l) {
		links = append(links, n.c.links[f][l][1]) // [0] is raft, [1] HTTP
	}
	end := time.Now().Add(hold)
	for ctx.Err() == nil && time.Now().Before(end) {
		for _, p := range links {
			if n.r.IntN(2) == 0 {
				p.Cut()
			}
		}
		sleepCtx(ctx, time.Duration(50+n.r.IntN(200))*time.Millisecond)
		for _, p := range links {
			p.Heal()
		}
		sleepCtx(ctx, time.Duration(50+n.r.IntN(200))*time.Millisecond)
	}
}
