package cluster

import (
	"math"

	"github.com/zerotal/lock/cluster/rounds"
	"github.com/zerotal/lock/fsm"
)

// The node's two ends of the replicated log. Every entry the node writes
// (lock operations, clean-ups, expiries, ticks, membership) is encoded
// here and handed to the rounds, which pace entries into raft and answer
// each proposal once raft has; every entry applied comes back through
// onApply.

// propose encodes e and hands it to raft without waiting; the proposal's
// wait collects the outcome. Encoding only fails for an unknown type, a
// programming error reported through the proposal.
func (n *Node) propose(e fsm.Entry) *rounds.Proposal { return n.submit(e, false) }

// submit is propose, lazily when lazy is set (see rounds).
func (n *Node) submit(e fsm.Entry, lazy bool) *rounds.Proposal {
	if hook := n.proposeHook.Load(); hook != nil {
		if err := (*hook)(e); err != nil {
			return rounds.Failed(err)
		}
	}
	b, err := fsm.Encode(e)
	if err != nil {
		return rounds.Failed(err)
	}
	return n.rounds.Propose(b, lazy)
}

// apply proposes e and waits for its result.
func (n *Node) apply(e fsm.Entry) (*fsm.Response, error) {
	return n.propose(e).Wait()
}

// barrier runs raft's Barrier, counted like a proposal so Shutdown waits
// for it.
func (n *Node) barrier() error {
	return n.rounds.Counted(func() error { return n.raft.Barrier(n.cfg.ApplyTimeout).Error() })
}

// onApply runs in the FSM goroutine for every applied lock entry, on every
// node: it wakes requests waiting for a hand-off (only the leader has
// any), tells the expiry loop of a new deadline and records metrics. It
// must not block.
func (n *Node) onApply(a fsm.Applied) {
	if hook := n.applyHook.Load(); hook != nil {
		(*hook)(a)
	}
	// Only a new or handed-off grant can bring the earliest deadline
	// forward.
	deadline := int64(math.MaxInt64)
	for _, h := range a.Result.Handoffs {
		n.waits.Deliver(h)
		deadline = min(deadline, h.Deadline)
	}
	for _, g := range a.Result.Grants {
		deadline = min(deadline, g.Deadline)
	}
	if n.expiry != nil {
		n.expiry.Granted(deadline)
	}
	if n.metrics != nil {
		n.metrics.ObserveApplied(a)
	}
	n.watches.applied(a)
}
