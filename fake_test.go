package lock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
)

// fakeDriver is a mutex-and-map driver with fencing, expiry by the wall
// clock and fault injection. It implements only drivers.Driver; the types
// below add the optional capabilities.
type fakeDriver struct {
	mu      sync.Mutex
	entries map[string]fakeEntry
	fence   uint64
	freed   chan struct{} // closed and replaced whenever a key may have freed
	closed  bool

	failing  atomic.Bool  // every call fails as if the backend were unreachable
	calls    atomic.Int64 // every call
	acquires atomic.Int64
	extends  atomic.Int64
	waits    atomic.Int64
	keysMu   sync.Mutex
	keys     []string // every key the driver was asked about, in order
}

type fakeEntry struct {
	owner    string
	fence    uint64
	deadline time.Time
}

func newFake() *fakeDriver {
	return &fakeDriver{entries: make(map[string]fakeEntry), freed: make(chan struct{})}
}

var errFakeDown = drivers.Unavailable("fake", context.DeadlineExceeded)

// begin counts a call and returns the error it must fail with, if any.
func (f *fakeDriver) begin(ctx context.Context, key string) error {
	f.calls.Add(1)
	if key != "" {
		f.keysMu.Lock()
		f.keys = append(f.keys, key)
		f.keysMu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.failing.Load() {
		return errFakeDown
	}
	return nil
}

func (f *fakeDriver) seenKeys() []string {
	f.keysMu.Lock()
	defer f.keysMu.Unlock()
	return append([]string(nil), f.keys...)
}

// live returns the entry of key if it has not expired. f.mu must be held.
func (f *fakeDriver) live(key string) (fakeEntry, bool) {
	e, ok := f.entries[key]
	if ok && !time.Now().Before(e.deadline) {
		delete(f.entries, key)
		return fakeEntry{}, false
	}
	return e, ok
}

// wake tells waiters that a key may have freed. f.mu must be held.
func (f *fakeDriver) wake() {
	close(f.freed)
	f.freed = make(chan struct{})
}

func (f *fakeDriver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	f.acquires.Add(1)
	if err := f.begin(ctx, key); err != nil {
		return 0, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, false, drivers.ErrClosed
	}
	e, held := f.live(key)
	switch {
	case held && e.owner == owner:
		e.deadline = time.Now().Add(ttl)
	case held:
		return 0, false, nil
	default:
		f.fence++
		e = fakeEntry{owner: owner, fence: f.fence, deadline: time.Now().Add(ttl)}
	}
	f.entries[key] = e
	return e.fence, true, nil
}

func (f *fakeDriver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := f.begin(ctx, key); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false, drivers.ErrClosed
	}
	if e, ok := f.live(key); !ok || e.owner != owner {
		return false, nil
	}
	delete(f.entries, key)
	f.wake()
	return true, nil
}

func (f *fakeDriver) ForceRelease(ctx context.Context, key string) error {
	if err := f.begin(ctx, key); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return drivers.ErrClosed
	}
	delete(f.entries, key)
	f.wake()
	return nil
}

func (f *fakeDriver) Exists(ctx context.Context, key string) (bool, error) {
	if err := f.begin(ctx, key); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false, drivers.ErrClosed
	}
	_, ok := f.live(key)
	return ok, nil
}

func (f *fakeDriver) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		f.wake()
	}
	return nil
}

func (f *fakeDriver) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// held reports the owner and fence of key at the fake, bypassing counters.
func (f *fakeDriver) held(key string) (owner string, fence uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.live(key)
	return e.owner, e.fence, ok
}

// fakeExtender adds drivers.Extender.
type fakeExtender struct{ *fakeDriver }

func (f fakeExtender) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	f.extends.Add(1)
	if err := f.begin(ctx, key); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false, drivers.ErrClosed
	}
	e, ok := f.live(key)
	if !ok || e.owner != owner {
		return false, nil
	}
	e.deadline = time.Now().Add(ttl)
	f.entries[key] = e
	return true, nil
}

// fakeWaiter adds drivers.Extender and drivers.Waiter; waiters wake on every
// release and at the holder's deadline.
type fakeWaiter struct{ fakeExtender }

func (f fakeWaiter) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration, _ drivers.WaitOptions) (uint64, error) {
	f.waits.Add(1)
	for {
		fence, ok, err := f.Acquire(ctx, key, owner, ttl)
		if err != nil {
			return 0, err
		}
		if ok {
			return fence, nil
		}
		f.mu.Lock()
		freed := f.freed
		e, held := f.live(key)
		f.mu.Unlock()
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

var (
	_ drivers.Driver   = (*fakeDriver)(nil)
	_ drivers.Extender = fakeExtender{}
	_ drivers.Waiter   = fakeWaiter{}
)
