package lock

import (
	"sync"
	"time"
)

// Without refresh, a callback must be told when its lock's TTL runs out.
// Arming a runtime timer for every Try (and stopping it, almost always
// unfired) costs more than the rest of a Try on a fast backend, so the
// registry watches every deadline with one timer instead: each run publishes
// its deadline in its slot, and the timer fires at the earliest one, scans
// the slots, tells the runs that are due, and re-arms for the earliest
// deadline left. A run whose deadline is earlier than the one the timer
// waits for re-arms it; in the steady state (one TTL for every call, each
// deadline later than the previous one) no call touches the timer at all.

// monotime is a point in time as an offset on the monotonic clock from the
// package's start: an integer that can live in an atomic. 0 means none.
type monotime = int64

var epoch = time.Now()

func monoOf(t time.Time) monotime { return max(int64(t.Sub(epoch)), 1) }

func monoNow() monotime { return max(int64(time.Since(epoch)), 1) }

// expiryWatch is the registry's single expiry timer.
type expiryWatch struct {
	mu       sync.Mutex // guards timer and stopped, and orders the arming
	timer    *time.Timer
	stopped  bool
	scanning sync.WaitGroup // scans in flight, awaited by stop
	// next (atomic, in the registry) is when the timer fires; 0 when it is
	// not armed. Read without the lock to keep arming off the common path.
}

// watch makes sure the timer fires no later than deadline.
func (g *registry) watch(deadline monotime) {
	if next := g.next.Load(); next != 0 && deadline >= next {
		return
	}
	w := &g.expiry
	w.mu.Lock()
	defer w.mu.Unlock()
	if next := g.next.Load(); w.stopped || (next != 0 && deadline >= next) {
		return
	}
	g.next.Store(deadline)
	delay := time.Duration(deadline - monoNow())
	if w.timer == nil {
		w.timer = time.AfterFunc(delay, g.scan)
		return
	}
	w.timer.Reset(delay)
}

// scan runs when the timer fires: it tells every run whose deadline has
// passed, and re-arms the timer for the earliest deadline left.
//
// It clears next before it reads the slots, and a run publishes its
// deadline before it reads next: so a run the scan misses sees next cleared
// (or earlier than its own deadline) and arms the timer itself.
func (g *registry) scan() {
	w := &g.expiry
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.scanning.Add(1) // under w.mu, before stop can wait
	g.next.Store(0)
	w.mu.Unlock()
	defer w.scanning.Done()

	now := monoNow()
	var earliest monotime
	var due []*run
	visit := func(r *run) {
		switch d := r.deadline.Load(); {
		case d == 0:
		case d <= now:
			due = append(due, r)
		case earliest == 0 || d < earliest:
			earliest = d
		}
	}
	for i := range g.slots {
		if r := g.slots[i].Load(); r != nil {
			visit(r)
		}
	}
	g.mu.Lock()
	for r := range g.overflow {
		visit(r)
	}
	g.mu.Unlock()
	if earliest != 0 {
		g.watch(earliest)
	}
	for _, r := range due {
		r.checkExpiry()
	}
}

// stopExpiry stops the timer for good and waits for a scan in flight.
func (g *registry) stopExpiry() {
	w := &g.expiry
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.scanning.Wait()
}
