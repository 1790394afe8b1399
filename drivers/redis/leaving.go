package redis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zerotal/lock/drivers"
)

// leaving records the clean-ups this driver runs in the background
// (d.cleanups), key by key, so that a later call of the driver on a key
// comes after them: a wait returns by its deadline and leaves its place in
// the queue behind it, and a release made right after by the same process
// must not hand the key to that place, a waiter that is gone, for a lease.
// Within one process the driver reads its own writes.
type leaving struct {
	n    atomic.Int64 // clean-ups under way: none, and a call reads no map
	mu   sync.Mutex
	keys map[string]*pending
}

// pending is the clean-ups under way of one key.
type pending struct {
	n    int
	done chan struct{} // closed when the last of them returns
}

// add records a clean-up of key; the caller calls the func it returns once
// the clean-up has returned.
func (l *leaving) add(key string) func() {
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

// after waits until no clean-up of keys recorded before it is under way,
// or ctx ends, or the driver closes. A clean-up is bounded by
// cleanupTimeout.
func (d *Driver) after(ctx context.Context, op string, keys ...string) error {
	if d.leaving.n.Load() == 0 {
		return nil
	}
	for _, k := range keys {
		d.leaving.mu.Lock()
		p := d.leaving.keys[k]
		d.leaving.mu.Unlock()
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("redis: %s %q: %w", op, k, ctx.Err())
		case <-d.done:
			return drivers.ErrClosed
		}
	}
	return nil
}

// leave runs clean on each of keys in turn, in the background, each key
// recorded until its clean-up has returned. After Close it runs nothing,
// and the calls that would wait for it get ErrClosed.
func (d *Driver) leave(keys []string, clean func(ctx context.Context, key string)) {
	done := make([]func(), len(keys))
	for i, k := range keys {
		done[i] = d.leaving.add(k)
	}
	d.cleanups.Go(cleanupTimeout, func(ctx context.Context) {
		for i, k := range keys {
			clean(ctx, k)
			done[i]()
		}
	})
}
