package election

import (
	"context"
	"errors"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Change is one observation of an election: the leader that took over,
// or none (Leading false) once the last one is gone.
type Change struct {
	Leader  Leader
	Leading bool
}

// DefaultObserveEvery is how often Observe asks the backend when given no
// interval.
const DefaultObserveEvery = 200 * time.Millisecond

// Observe reports the election's leader as it changes: first the leader
// (or none) when it starts, then every change of term, of value or from
// leader to none and back, until ctx ends, when the channel is closed.
//
// Where the backend tells of changes (drivers.ChangeWatcher: the memory
// backend for the key itself, SQLite for any commit), Observe looks again
// as soon as it is told; besides, and on the other backends only, it asks
// every `every` (0: DefaultObserveEvery), which also catches a lease that
// runs out unseen. A leadership that began and ended between two looks is
// not seen. A failed look is retried at the next tick: an outage reports
// nothing, not "no leader". A reader that falls behind gets the latest
// change, not every one.
func (e *Election) Observe(ctx context.Context, every time.Duration) <-chan Change {
	if every <= 0 {
		every = DefaultObserveEvery
	}
	out := make(chan Change, 1)
	go func() {
		defer close(out)
		tick := time.NewTicker(every)
		defer tick.Stop()
		var last Change
		first := true
		watcher, push := e.m.Driver().(drivers.ChangeWatcher)
		for {
			var changed <-chan struct{} // nil: never, without push
			stop := func() {}
			if push {
				// Taken before the look, so a change after it is not missed.
				changed, stop = watcher.Changed(e.m.Prefix() + e.name)
			}
			cur, err := e.Leader(ctx)
			seen := err == nil || errors.Is(err, ErrNoLeader)
			c := Change{Leader: cur, Leading: err == nil}
			if seen && (first || c.Leading != last.Leading || c.Leader.Term != last.Leader.Term || c.Leader.Value != last.Leader.Value) {
				first, last = false, c
				select {
				case <-out: // the reader fell behind: keep the latest
				default:
				}
				out <- c
			}
			select {
			case <-ctx.Done():
				stop()
				return
			case <-tick.C:
			case <-changed:
			}
			stop()
		}
	}()
	return out
}
