package background

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Keys records the work a driver runs in the background (the clean-up of
// a wait that ended, a release whose answer was lost), key by key, so
// that a later call of the same driver on a key comes after it: a call
// returns by its deadline and leaves its clean-up running, and the next
// call of the same process on the key must not run before it, as it
// would see the place or grant of a caller that is gone. Within one
// process the driver reads its own writes. The zero value is ready to
// use; it must not be copied.
type Keys struct {
	n    atomic.Int64 // work under way: none, and a call reads no map
	mu   sync.Mutex
	keys map[string]*pending
}

// pending is the work under way on one key.
type pending struct {
	n    int
	done chan struct{} // closed when the last of it returns
}

// ErrStopped: After's stop channel closed before the work it waited for
// returned (the driver closed).
var ErrStopped = errors.New("background: stopped")

// Add records work on key; the caller calls the func it returns once
// the work has returned.
func (l *Keys) Add(key string) (done func()) {
	l.n.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = make(map[string]*pending)
	}
	p := l.keys[key]
	if p == nil {
		p = &pending{done: make(chan struct{})}
		l.keys[key] = p
	}
	p.n++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if p.n--; p.n == 0 {
			close(p.done)
			delete(l.keys, key)
		}
		l.n.Add(-1)
	}
}

// After waits until no work on keys recorded before it is under way. It
// returns ctx.Err() when ctx ends first, or ErrStopped when stop closes
// first, with the key still waited for.
func (l *Keys) After(ctx context.Context, stop <-chan struct{}, keys ...string) (key string, err error) {
	if l.n.Load() == 0 {
		return "", nil
	}
	for _, k := range keys {
		l.mu.Lock()
		p := l.keys[k]
		l.mu.Unlock()
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return k, ctx.Err()
		case <-stop:
			return k, ErrStopped
		}
	}
	return "", nil
}
