package cluster

import (
	"sync"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// waitRegistry holds the HTTP requests waiting on this leader for a queued
// acquire, by (key, owner). The FSM's apply hook delivers hand-offs to it.
// A request registers BEFORE proposing its acquire, so a hand-off applied
// right after the acquire cannot slip past it.
type waitRegistry struct {
	mu sync.Mutex
	m  map[fsm.Waiter][]chan engine.Grant
}

func newWaitRegistry() *waitRegistry {
	return &waitRegistry{m: map[fsm.Waiter][]chan engine.Grant{}}
}

// register returns a channel that receives the grant handed to owner.
func (r *waitRegistry) register(key, owner string) chan engine.Grant {
	ch := make(chan engine.Grant, 1)
	w := fsm.Waiter{Key: key, Owner: owner}
	r.mu.Lock()
	r.m[w] = append(r.m[w], ch)
	r.mu.Unlock()
	return ch
}

// unregister forgets ch; a grant already sent to it stays readable.
func (r *waitRegistry) unregister(key, owner string, ch chan engine.Grant) {
	w := fsm.Waiter{Key: key, Owner: owner}
	r.mu.Lock()
	defer r.mu.Unlock()
	chans := r.m[w]
	for i, c := range chans {
		if c == ch {
			chans = append(chans[:i], chans[i+1:]...)
			break
		}
	}
	if len(chans) == 0 {
		delete(r.m, w)
	} else {
		r.m[w] = chans
	}
}

// deliver hands g to every request waiting for (g.Key, g.Owner). It never
// blocks: each channel has room for exactly the one grant it will get.
func (r *waitRegistry) deliver(g engine.Grant) {
	w := fsm.Waiter{Key: g.Key, Owner: g.Owner}
	r.mu.Lock()
	chans := r.m[w]
	delete(r.m, w)
	r.mu.Unlock()
	for _, ch := range chans {
		select {
		case ch <- g:
		default:
		}
	}
}

// pending is the number of registered requests, for tests and metrics.
func (r *waitRegistry) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.m {
		n += len(c)
	}
	return n
}
