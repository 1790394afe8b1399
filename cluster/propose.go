package cluster

import (
	"math"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/fsm"
)

// propose encodes e and hands it to raft without waiting; fsm.Await
// collects the outcome, and every future returned must be awaited (the
// shutdown gate counts it until then). Encoding only fails for an unknown
// type, a programming error reported through the future.
func (n *Node) propose(e fsm.Entry) raft.ApplyFuture { return n.submit(e, false) }

// submit is propose, lazily when lazy is set (see rounds).
func (n *Node) submit(e fsm.Entry, lazy bool) raft.ApplyFuture {
	if hook := n.proposeHook.Load(); hook != nil {
		if err := (*hook)(e); err != nil {
			return errFuture{err}
		}
	}
	b, err := fsm.Encode(e)
	if err != nil {
		return errFuture{err}
	}
	if !n.gate.enter() {
		return errFuture{raft.ErrRaftShutdown}
	}
	return &trackedFuture{ApplyFuture: n.rounds.propose(b, lazy), leave: n.gate.leave}
}

// apply proposes e and waits for its result.
func (n *Node) apply(e fsm.Entry) (*fsm.Response, error) {
	return fsm.Await(n.propose(e))
}

// onApply runs in the FSM goroutine for every applied lock entry, on every
// node: it wakes requests waiting for a hand-off (only the leader has
// any), nudges the expiry loop and records metrics. It must not block.
func (n *Node) onApply(a fsm.Applied) {
	if h := a.Result.Handoff; h != nil {
		n.waits.deliver(*h)
	}
	// Only a new or handed-off grant can bring the earliest deadline
	// forward, and only one due before the expiry loop wakes anyway needs
	// to wake it (each wake costs a read of the table).
	var deadline int64
	switch {
	case a.Result.Handoff != nil:
		deadline = a.Result.Handoff.Deadline
	case a.Entry.Type == fsm.TypeAcquire && a.Result.OK:
		deadline = a.Result.Grant.Deadline
	default:
		deadline = math.MaxInt64
	}
	if deadline < n.expiryWake.Load() {
		select {
		case n.kick <- struct{}{}:
		default:
		}
	}
	if n.metrics != nil {
		n.metrics.observeApplied(a)
	}
}

// errFuture is an ApplyFuture that failed before reaching raft.
type errFuture struct{ err error }

func (f errFuture) Error() error          { return f.err }
func (f errFuture) Response() interface{} { return nil }
func (f errFuture) Index() uint64         { return 0 }
