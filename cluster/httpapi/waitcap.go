package httpapi

import (
	"fmt"
	"sync/atomic"

	"github.com/zerotal/lock/drivers"
)

// waitCap caps the requests that wait on this node: the waiting acquires
// (wait_ms > 0) in progress, the watches of a key (GET /v1/watch with a
// wait) and the lock page's event streams (GET /ui/events). Each one holds
// a goroutine and a connection for up to the longest wait, on the node
// that received it and, for an acquire, on the leader it was forwarded
// to, so without a cap a flood of them grows memory without bound. It is
// taken after the request's checks (a request that does not decode waits
// for nothing) and before the request is served or forwarded, so it
// counts on a follower too. Acquires without a wait pass untouched: they
// end quickly, and a release must always get through to free the waiters.
type waitCap struct {
	node     string
	limit    int64
	inFlight atomic.Int64
}

// take takes a slot, or answers why not (drivers.ErrFull); done gives
// the slot back.
func (c *waitCap) take() (done func(), err error) {
	if c.inFlight.Add(1) > c.limit {
		c.inFlight.Add(-1)
		return nil, fmt.Errorf("cluster: node %s already holds %d waits (acquires, watches and event streams: its MaxWaits); retry later or acquire without waiting: %w",
			c.node, c.limit, drivers.ErrFull)
	}
	return func() { c.inFlight.Add(-1) }, nil
}
