package httpapi

import (
	"sync/atomic"
	"time"
)

// SetStreamWorkerIdle sets how long an idle stream worker stays, and
// returns the old value.
func SetStreamWorkerIdle(d time.Duration) time.Duration {
	return time.Duration(streamWorkerIdle.Swap(int64(d)))
}

// StreamWorkers is how many stream workers are alive in this process.
func StreamWorkers() int64 { return streamWorkers.Load() }

// SetStreamHooks sets what runs where a stream finds every worker busy at
// the cap (atCap) and where a worker has done a job (afterJob); nil
// removes them.
func SetStreamHooks(atCap, afterJob func()) {
	for _, h := range []struct {
		p *atomic.Pointer[func()]
		f func()
	}{{&streamAtCap, atCap}, {&streamAfterJob, afterJob}} {
		if h.f == nil {
			h.p.Store(nil)
		} else {
			h.p.Store(&h.f)
		}
	}
}

// SetFormSecret replaces the secret of the lock page's form tokens that
// has no Authorization header to key them (a node process's own, which
// differs from node to node), and returns what restores it.
func SetFormSecret(secret func() []byte) (restore func()) {
	old := processSecret
	processSecret = secret
	return func() { processSecret = old }
}

// UIEventsGap is the least time between two events of GET /ui/events.
const UIEventsGap = uiEventsGap
