package engine

import (
	"sync"
	"sync/atomic"
)

// changes tells the callers of a live engine when a mutex changes hands
// (a grant, a release, an expiry, a hand-off): what an election's
// observer waits for instead of asking again and again.
type changes struct {
	watched atomic.Int64 // keys watched: the loop skips the rest when 0
	mu      sync.Mutex
	keys    map[string]*watch
}

type watch struct {
	ch   chan struct{} // closed at the key's next change
	subs int
}

// notify closes the channel of key's watchers. It runs on the loop.
func (c *changes) notify(key string) {
	if c.watched.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.keys[key]; w != nil {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

// Changed returns a channel closed at key's next change of holder (a
// grant, a release, an expiry or a hand-off of a mutex), and stop, to call
// once the caller no longer watches. Take it before reading the key, so
// that a change made after the read is not missed; take it again after
// each change. It is safe for concurrent use.
func (e *Engine) Changed(key string) (changed <-chan struct{}, stop func()) {
	c := &e.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = map[string]*watch{}
	}
	w := c.keys[key]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
		c.keys[key] = w
		c.watched.Add(1)
	}
	w.subs++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if w.subs--; w.subs == 0 {
				delete(c.keys, key)
				c.watched.Add(-1)
			}
		})
	}
}
