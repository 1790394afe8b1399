package lock

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// registrySlots is how many callbacks the lock-free part of a registry
// holds; more than that at once go to an overflow map under a mutex.
const registrySlots = 1024

// registry is the set of callbacks running under a Manager, so that Close
// can reach them.
//
// Every Try and Block passes through it twice, from every goroutine at
// once, so its common path takes no lock: a run claims a random free slot
// with a compare-and-swap and clears it when done. (A mutex here, even
// sharded, formed convoys under load: a holder descheduled by the OS kept
// every other caller of its shard waiting.)
type registry struct {
	slots [registrySlots]atomic.Pointer[run]

	mu       sync.Mutex // guards overflow
	overflow map[*run]struct{}

	next   atomic.Int64 // when expiry's timer fires (a monotime); 0: not armed
	expiry expiryWatch  // tells runs without refresh when their TTL runs out
}

// add records r unless closed is set. Close and Shutdown set closed (the
// Manager's stopping flag) before they drain, and add checks closed after
// publishing r, so a run is either drained, or refused, or both (then it
// is refused, and cancelling it is harmless); never missed. A run with a
// deadline is watched from then on.
func (g *registry) add(r *run, closed *atomic.Bool) bool {
	r.slot = -1
	start := rand.IntN(registrySlots)
	for probe := range 8 {
		i := (start + probe*97) % registrySlots
		if g.slots[i].CompareAndSwap(nil, r) {
			r.slot = i
			break
		}
	}
	if r.slot < 0 {
		g.mu.Lock()
		if g.overflow == nil {
			g.overflow = make(map[*run]struct{})
		}
		g.overflow[r] = struct{}{}
		g.mu.Unlock()
	}
	if closed.Load() {
		g.remove(r)
		return false
	}
	if d := r.deadline.Load(); d != 0 {
		g.watch(d)
	}
	return true
}

func (g *registry) remove(r *run) {
	if r.slot >= 0 {
		g.slots[r.slot].Store(nil)
		return
	}
	g.mu.Lock()
	delete(g.overflow, r)
	g.mu.Unlock()
}

// empty reports whether no run is registered.
func (g *registry) empty() bool {
	for i := range g.slots {
		if g.slots[i].Load() != nil {
			return false
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.overflow) == 0
}

// drain stops the expiry timer and returns every run registered; closed
// must already be set, so that no new run stays registered.
func (g *registry) drain() []*run {
	g.stopExpiry()
	var all []*run
	for i := range g.slots {
		if r := g.slots[i].Load(); r != nil {
			all = append(all, r)
		}
	}
	g.mu.Lock()
	for r := range g.overflow {
		all = append(all, r)
	}
	g.mu.Unlock()
	return all
}
