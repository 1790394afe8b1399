package cluster

import (
	"github.com/zerotal/lock/cluster/rounds"
	"github.com/zerotal/lock/fsm"
)

// The one path from this node to the replicated log: every entry the node
// writes (lock operations, clean-ups, expiries, ticks, membership) is
// encoded here and handed to the rounds, which pace entries into raft and
// answer each proposal once raft has.

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
