package heldwatch

import (
	"sync"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Without refresh, a callback must be told when its lock's TTL runs out.
// Arming a runtime timer for every Try (and stopping it, almost always
// unfired) costs more than the rest of a Try on a fast backend, so the
// registry watches every deadline with one timer instead: each watch
// publishes its deadline in its slot, and the timer fires at the earliest
// one, scans the slots, tells the watches that are due, and re-arms for the
// earliest deadline left. A watch whose deadline is earlier than the one
// the timer waits for re-arms it; in the steady state (one TTL for every
// call, each deadline later than the previous one) no call touches the
// timer at all.

// monotime is a point in time as an offset on the monotonic clock from the
// package's start: an integer that can live in an atomic. 0 means none.
type monotime = int64

var epoch = time.Now()

func monoOf(t time.Time) monotime { return max(int64(t.Sub(epoch)), 1) }

func monoNow() monotime { return max(int64(time.Since(epoch)), 1) }

// expiryTimer is the registry's single expiry timer.
type expiryTimer struct {
	mu       sync.Mutex // guards timer and stopped, and orders the arming
	timer    *time.Timer
	stopped  bool
	scanning sync.WaitGroup // scans in flight, awaited by stop
	// next (atomic, in the registry) is when the timer fires; 0 when it is
	// not armed. Read without the lock to keep arming off the common path.
}

// watch makes sure the timer fires no later than deadline.
func (g *Registry) watch(deadline monotime) {
	if next := g.next.Load(); next != 0 && deadline >= next {
		return
	}
	t := &g.expiry
	t.mu.Lock()
	defer t.mu.Unlock()
	if next := g.next.Load(); t.stopped || (next != 0 && deadline >= next) {
		return
	}
	g.next.Store(deadline)
	delay := time.Duration(deadline - monoNow())
	if t.timer == nil {
		t.timer = time.AfterFunc(delay, g.scan)
		return
	}
	t.timer.Reset(delay)
}

// scan runs when the timer fires: it tells every watch whose deadline has
// passed, and re-arms the timer for the earliest deadline left.
//
// It clears next before it reads the slots, and a watch publishes its
// deadline before it reads next: so a watch the scan misses sees next
// cleared (or earlier than its own deadline) and arms the timer itself.
func (g *Registry) scan() {
	t := &g.expiry
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.scanning.Add(1) // under t.mu, before stop can wait
	g.next.Store(0)
	t.mu.Unlock()
	defer t.scanning.Done()

	now := monoNow()
	var earliest monotime
	var due []*Watch
	visit := func(w *Watch) {
		switch d := w.deadline.Load(); {
		case d == 0:
		case d <= now:
			due = append(due, w)
		case earliest == 0 || d < earliest:
			earliest = d
		}
	}
	for i := range g.slots {
		if w := g.slots[i].Load(); w != nil {
			visit(w)
		}
	}
	g.mu.Lock()
	for w := range g.overflow {
		visit(w)
	}
	g.mu.Unlock()
	if earliest != 0 {
		g.watch(earliest)
	}
	for _, w := range due {
		w.checkExpiry()
	}
}

// stopExpiry stops the timer for good and waits for a scan in flight.
func (g *Registry) stopExpiry() {
	t := &g.expiry
	t.mu.Lock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	t.scanning.Wait()
}

// checkExpiry runs when the stop point has passed, as the registry's
// expiry timer sees it, or as the refresher does.
func (w *Watch) checkExpiry() {
	st, expiresAt := w.grant.State()
	switch st {
	case Released:
		w.deadline.Store(0)
		return
	case Lost: // a manual Refresh found it gone
		w.deadline.Store(0)
		w.lose(drivers.ErrLostTaken, nil)
		return
	}
	if stop := w.stopPoint(expiresAt); time.Now().Before(stop) { // refreshed since
		d := monoOf(stop)
		w.deadline.Store(d)
		w.reg.watch(d)
		return
	}
	w.deadline.Store(0)
	if w.atCap(expiresAt) {
		// The stop point is the cap's: no refresh could have moved it,
		// whether refreshes went well or not.
		w.lose(drivers.ErrLostMaxHold, nil)
		return
	}
	w.lose(w.expiryReason())
}
