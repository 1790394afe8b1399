package heldwatch

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// registrySlots is how many watches the lock-free part of a registry
// holds; more than that at once go to an overflow map under a mutex.
const registrySlots = 1024

// Registry is the set of watches of the callbacks running under one
// Manager, so that Close can reach them, with the expiry timer that tells
// them when their stop point passes. The zero Registry is ready to use.
//
// Every Try and Block passes through it twice, from every goroutine at
// once, so its common path takes no lock: a watch claims a random free slot
// with a compare-and-swap and clears it when done. (A mutex here, even
// sharded, formed convoys under load: a holder descheduled by the OS kept
// every other caller of its shard waiting.)
type Registry struct {
	slots [registrySlots]atomic.Pointer[Watch]

	mu       sync.Mutex // guards overflow
	overflow map[*Watch]struct{}

	next   atomic.Int64 // when expiry's timer fires (a monotime); 0: not armed
	expiry expiryTimer  // tells watches without refresh when their TTL runs out
}

// Add records w unless closed is set. Close and Shutdown set closed (the
// Manager's stopping flag) before they drain, and Add checks closed after
// publishing w, so a watch is either drained, or refused, or both (then it
// is refused, and cancelling it is harmless); never missed. A watch with a
// stop point (Arm) is watched from then on.
func (g *Registry) Add(w *Watch, closed *atomic.Bool) bool {
	w.reg = g
	w.slot = -1
	start := rand.IntN(registrySlots)
	for probe := range 8 {
		i := (start + probe*97) % registrySlots
		if g.slots[i].CompareAndSwap(nil, w) {
			w.slot = i
			break
		}
	}
	if w.slot < 0 {
		g.mu.Lock()
		if g.overflow == nil {
			g.overflow = make(map[*Watch]struct{})
		}
		g.overflow[w] = struct{}{}
		g.mu.Unlock()
	}
	if closed.Load() {
		g.Remove(w)
		return false
	}
	if d := w.deadline.Load(); d != 0 {
		g.watch(d)
	}
	return true
}

// Remove forgets w, added before.
func (g *Registry) Remove(w *Watch) {
	if w.slot >= 0 {
		g.slots[w.slot].Store(nil)
		return
	}
	g.mu.Lock()
	delete(g.overflow, w)
	g.mu.Unlock()
}

// Empty reports whether no watch is registered.
func (g *Registry) Empty() bool {
	for i := range g.slots {
		if g.slots[i].Load() != nil {
			return false
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.overflow) == 0
}

// Drain stops the expiry timer and returns every watch registered; closed
// must already be set, so that no new watch stays registered.
func (g *Registry) Drain() []*Watch {
	g.stopExpiry()
	var all []*Watch
	for i := range g.slots {
		if w := g.slots[i].Load(); w != nil {
			all = append(all, w)
		}
	}
	g.mu.Lock()
	for w := range g.overflow {
		all = append(all, w)
	}
	g.mu.Unlock()
	return all
}
