package cluster

import (
	"math"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// onApply runs in the FSM goroutine for every applied lock entry, on every
// node: it wakes requests waiting for a hand-off (only the leader has
// any), tells the expiry loop of a new deadline and records metrics. It
// must not block.
func (n *Node) onApply(a fsm.Applied) {
	if h := a.Result.Handoff; h != nil {
		n.waits.deliver(*h)
	}
	// Only a new or handed-off grant can bring the earliest deadline
	// forward.
	var deadline int64
	switch {
	case a.Result.Handoff != nil:
		deadline = a.Result.Handoff.Deadline
	case a.Entry.Op == engine.OpAcquire && a.Result.OK:
		deadline = a.Result.Grant.Deadline
	default:
		deadline = math.MaxInt64
	}
	if n.expiry != nil {
		n.expiry.Granted(deadline)
	}
	if n.metrics != nil {
		n.metrics.ObserveApplied(a)
	}
}
