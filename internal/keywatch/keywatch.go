// Package keywatch tells the callers waiting on a key when it changes:
// the engine's watchers of a mutex (an election's observer) and a
// cluster node's long polls of a key share it.
package keywatch

import (
	"sync"
	"sync/atomic"
)

// Set holds the keys watched and wakes their watchers. The zero Set is
// ready; it is safe for concurrent use.
type Set struct {
	watched atomic.Int64 // keys watched: Notify does nothing when 0
	mu      sync.Mutex
	keys    map[string]*watch
}

type watch struct {
	ch   chan struct{} // closed at the key's next change
	subs int
}

// Changed returns a channel closed at key's next Notify, and stop, to call
// once the caller no longer waits for it. Take it before reading the key,
// so that a change made after the read is not missed; take it again after
// each change.
func (s *Set) Changed(key string) (changed <-chan struct{}, stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]*watch{}
	}
	w := s.keys[key]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
		s.keys[key] = w
		s.watched.Add(1)
	}
	w.subs++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if w.subs--; w.subs == 0 {
				delete(s.keys, key)
				s.watched.Add(-1)
			}
		})
	}
}

// Watched reports whether any key is watched, without taking the lock: a
// caller with several keys to notify skips them all when it is false.
func (s *Set) Watched() bool { return s.watched.Load() != 0 }

// Notify wakes the watchers of key, if any. It never blocks.
func (s *Set) Notify(key string) {
	if !s.Watched() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.keys[key]; w != nil {
		w.wake()
	}
}

// NotifyAll wakes the watchers of every key, for a change that may have
// touched any of them without naming them (a node that installed a
// snapshot): each reads its key again. It never blocks.
func (s *Set) NotifyAll() {
	if !s.Watched() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.keys {
		w.wake()
	}
}

// wake closes w's channel and gives it a new one for the next change.
func (w *watch) wake() {
	close(w.ch)
	w.ch = make(chan struct{})
}
