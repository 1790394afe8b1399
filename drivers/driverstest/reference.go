package driverstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Reference is the simplest correct driver: a mutex and a map, with
// fences, expiry by the wall clock and waiters woken by every release and
// at the holder's deadline. It implements drivers.Driver (mutexes of one
// key, with Wait) and drivers.Extender, and passes the suite: tests of
// code above the drivers use it as their backend, alone or behind Faulty.
//
// Handle opens more handles on the same locks; each closes on its own.
type Reference struct {
	b      *refBackend
	mu     sync.Mutex
	closed bool
}

// refBackend is the state the handles of one Reference share.
type refBackend struct {
	mu      sync.Mutex
	entries map[string]refEntry
	fence   uint64
	freed   chan struct{} // closed and replaced whenever a key may have freed
}

type refEntry struct {
	owner    string
	fence    uint64
	deadline time.Time
}

// NewReference returns a handle on a new, empty backend.
func NewReference() *Reference {
	return &Reference{b: &refBackend{entries: map[string]refEntry{}, freed: make(chan struct{})}}
}

// Handle returns a new handle on r's backend: it sees and takes the same
// locks, and is closed independently of r.
func (r *Reference) Handle() *Reference { return &Reference{b: r.b} }

// Held reports the owner and fence of key if it is held, reading the
// backend directly (r may be closed).
func (r *Reference) Held(key string) (owner string, fence uint64, ok bool) {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	e, ok := r.b.live(key, time.Now())
	return e.owner, e.fence, ok
}

// Closed reports whether Close was called on this handle.
func (r *Reference) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Reference) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.Closed() {
		return drivers.ErrClosed
	}
	return nil
}

// live returns the entry of key if it has not expired. b.mu must be held.
func (b *refBackend) live(key string, now time.Time) (refEntry, bool) {
	e, ok := b.entries[key]
	if ok && !now.Before(e.deadline) {
		delete(b.entries, key)
		return refEntry{}, false
	}
	return e, ok
}

// wake tells waiters that a key may have freed. b.mu must be held.
func (b *refBackend) wake() {
	close(b.freed)
	b.freed = make(chan struct{})
}

// Acquire implements drivers.Driver: a mutex of one key, waiting or not.
func (r *Reference) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if len(req.Keys) != 1 || req.Claim != (drivers.Claim{}) {
		return drivers.Grant{}, fmt.Errorf("%w: the reference driver takes one mutex at a time", drivers.ErrUnsupported)
	}
	var fence uint64
	var held drivers.HeldBy
	var err error
	ok := true
	if req.Wait {
		fence, err = r.acquireWait(ctx, req.Key(), req.Owner, req.TTL)
	} else {
		fence, ok, held, err = r.acquire(ctx, req.Key(), req.Owner, req.TTL)
	}
	if err != nil || !ok {
		return drivers.Grant{Busy: drivers.Busy{Key: req.Key(), HeldBy: held}}, err
	}
	return drivers.Grant{Acquired: true, Fences: []uint64{fence}}, nil
}

// Capabilities implements drivers.Driver: it waits for one key.
func (r *Reference) Capabilities() drivers.Capabilities { return drivers.Capabilities{Wait: true} }

func (r *Reference) acquire(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, drivers.HeldBy, error) {
	if err := r.check(ctx); err != nil {
		return 0, false, drivers.HeldBy{}, err
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	e, held := b.live(key, now)
	switch {
	case held && e.owner != owner:
		return 0, false, drivers.HeldBy{Holder: drivers.HolderOf(e.owner), TTL: e.deadline.Sub(now)}, nil
	case held:
		e.deadline = now.Add(ttl)
	default:
		b.fence++
		e = refEntry{owner: owner, fence: b.fence, deadline: now.Add(ttl)}
	}
	b.entries[key] = e
	return e.fence, true, drivers.HeldBy{}, nil
}

// Release implements drivers.Driver.
func (r *Reference) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := r.check(ctx); err != nil {
		return false, err
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, held := b.live(key, time.Now()); !held || e.owner != owner {
		return false, nil
	}
	delete(b.entries, key)
	b.wake()
	return true, nil
}

// ForceRelease implements drivers.Driver.
func (r *Reference) ForceRelease(ctx context.Context, key string) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
	b.wake()
	return nil
}

// Exists implements drivers.Driver.
func (r *Reference) Exists(ctx context.Context, key string) (bool, error) {
	if err := r.check(ctx); err != nil {
		return false, err
	}
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	_, held := r.b.live(key, time.Now())
	return held, nil
}

// Extend implements drivers.Extender.
func (r *Reference) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := r.check(ctx); err != nil {
		return false, err
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	e, held := b.live(key, now)
	if !held || e.owner != owner {
		return false, nil
	}
	e.deadline = now.Add(ttl)
	b.entries[key] = e
	return true, nil
}

// acquireWait tries again whenever a key may have freed (a release, a
// force release, a Close) and at the holder's deadline; it ignores
// RetryDelay.
func (r *Reference) acquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	for {
		fence, ok, _, err := r.acquire(ctx, key, owner, ttl)
		if err != nil {
			return 0, err
		}
		if ok {
			return fence, nil
		}
		r.b.mu.Lock()
		freed := r.b.freed
		e, held := r.b.live(key, time.Now())
		r.b.mu.Unlock()
		if !held {
			continue
		}
		t := time.NewTimer(time.Until(e.deadline))
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-freed:
		case <-t.C:
		}
		t.Stop()
	}
}

// Close implements drivers.Driver; it wakes this backend's waiters, so
// that this handle's find it closed.
func (r *Reference) Close() error {
	r.mu.Lock()
	wasClosed := r.closed
	r.closed = true
	r.mu.Unlock()
	if !wasClosed {
		r.b.mu.Lock()
		r.b.wake()
		r.b.mu.Unlock()
	}
	return nil
}

var (
	_ drivers.Driver   = (*Reference)(nil)
	_ drivers.Extender = (*Reference)(nil)
)
