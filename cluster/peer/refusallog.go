package peer

import (
	"fmt"
	"sync"
	"time"
)

// refusalLogEvery is how often a node says that it refused raft
// connections. A flood of connections (a stranger's, a port scanner's)
// is refused one by one, and a line for each would be a flood of its own,
// costing the node more than the connections (raft's heartbeats wait on
// the same cores).
const refusalLogEvery = time.Second

// refusalLog says the first refused connection at once, then at most one a
// refusalLogEvery, each with how many it did not say since the last.
type refusalLog struct {
	warn func(string)
	now  func() time.Time // nil: time.Now

	mu      sync.Mutex
	last    time.Time
	skipped int
}

func (r *refusalLog) refuse(err error) {
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	r.mu.Lock()
	if !r.last.IsZero() && now.Sub(r.last) < refusalLogEvery {
		r.skipped++
		r.mu.Unlock()
		return
	}
	skipped := r.skipped
	r.last, r.skipped = now, 0
	r.mu.Unlock()
	msg := err.Error()
	if skipped > 0 {
		msg += fmt.Sprintf(" (and %d more refused since the last such line)", skipped)
	}
	r.warn(msg)
}
