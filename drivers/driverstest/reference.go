package driverstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Reference is the simplest correct driver: the Model, the contract's
// rules written once, on the wall clock. It implements drivers.Driver
// (mutexes of one key, with Wait, first come, first served, and a cap on
// total hold time) and
// drivers.Extender, and passes the suite: tests of code above the drivers
// use it as their backend, alone or behind Faulty.
//
// Handle opens more handles on the same locks; each closes on its own.
type Reference struct {
	b         *refBackend
	closeOnce sync.Once
	closed    chan struct{}
}

// refBackend is the Model on the wall clock, which the handles of one
// Reference share.
type refBackend struct {
	mu      sync.Mutex
	m       *Model
	start   time.Time       // the model's time 0
	ended   map[string]Done // waits the model ended, by owner, until their Acquire reads them
	changed chan struct{}   // closed and replaced at every step
}

// NewReference returns a handle on a new, empty backend.
func NewReference() *Reference {
	b := &refBackend{m: NewModel(), start: time.Now(), ended: map[string]Done{}, changed: make(chan struct{})}
	return b.handle()
}

func (b *refBackend) handle() *Reference { return &Reference{b: b, closed: make(chan struct{})} }

// Handle returns a new handle on r's backend: it sees and takes the same
// locks, and is closed independently of r.
func (r *Reference) Handle() *Reference { return r.b.handle() }

// Held reports the owner and fence of key if it is held, reading the
// backend directly (r may be closed).
func (r *Reference) Held(key string) (owner string, fence uint64, ok bool) {
	r.b.read(func(m *Model) {
		if h, held := m.Holding(key); held && len(h.Holders) > 0 {
			owner, fence, ok = h.Holders[0].Owner, h.Holders[0].Fence, true
		}
	})
	return owner, fence, ok
}

// Closed reports whether Close was called on this handle.
func (r *Reference) Closed() bool {
	select {
	case <-r.closed:
		return true
	default:
		return false
	}
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

// do runs the step f on the model, brought to the wall clock's time
// first, under the backend's lock, and wakes the waiting acquires: a wait
// may have ended, or a grant come that lapses first.
func (b *refBackend) do(f func(*Model) Outcome) Outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance()
	o := f(b.m)
	b.record(o)
	return o
}

// read runs f, which changes nothing of the model, on the model brought
// to the wall clock's time, under the backend's lock.
func (b *refBackend) read(f func(*Model)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance()
	f(b.m)
}

// advance brings the model to the wall clock's time; the waits a lapse
// ended are woken. b.mu is held.
func (b *refBackend) advance() {
	if o := b.m.Advance(time.Since(b.start)); len(o.Done) > 0 {
		b.record(o)
	}
}

// record keeps the waits o ended for their Acquire and wakes the waiting
// acquires. b.mu is held.
func (b *refBackend) record(o Outcome) {
	for _, d := range o.Done {
		b.ended[d.Owner] = d
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// Acquire implements drivers.Driver: a mutex of one key, waiting or not.
func (r *Reference) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if len(req.Keys) != 1 || req.Claim != (drivers.Claim{}) {
		return drivers.Grant{}, fmt.Errorf("%w: the reference driver takes one mutex at a time", drivers.ErrUnsupported)
	}
	if err := r.check(ctx); err != nil {
		return drivers.Grant{}, err
	}
	return r.b.acquire(ctx, req, (*Model).Acquire, (*Model).Cancel, r.closed)
}

// Capabilities implements drivers.Driver: it waits for one key, and
// keeps a grant's cap on total hold time (the Model's).
func (r *Reference) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, MaxHold: true}
}

// acquire is an Acquire on the model: try makes the request (the model's
// Acquire, or in this package's tests one with a rule broken); a request
// that waits then waits for the model to end its wait, waking at every
// step and lapse, unless ctx ends first or closed is closed.
func (b *refBackend) acquire(ctx context.Context, req drivers.Request, try func(*Model, drivers.Request) Outcome, leave func(*Model, string) Outcome, closed <-chan struct{}) (drivers.Grant, error) {
	o := b.do(func(m *Model) Outcome { return try(m, req) })
	if o.Err != nil || !o.Queued {
		return o.Grant, o.Err
	}
	for {
		var d Done
		var done bool
		var changed chan struct{}
		next := forever
		b.read(func(m *Model) {
			d, done = b.ended[req.Owner]
			delete(b.ended, req.Owner)
			changed = b.changed
			if _, at, ok := m.nextLapse(); ok {
				next = time.Until(b.start.Add(at))
			}
		})
		if done {
			return drivers.Grant{Acquired: d.Err == nil, Fences: d.Fences}, d.Err
		}
		lapse := time.NewTimer(next)
		var err error
		select {
		case <-changed:
		case <-lapse.C:
		case <-ctx.Done():
			err = ctx.Err()
		case <-closed:
			err = drivers.ErrClosed
		}
		lapse.Stop()
		if err != nil {
			return b.quit(req, o.Grant.Busy.Key, leave), err
		}
	}
}

// quit ends the wait of req, whose caller went away: it leaves (the
// model's Cancel, or a broken one), or, granted as it ended, lets go of
// the keys nobody will have. It answers the holder in key's way now.
func (b *refBackend) quit(req drivers.Request, key string, leave func(*Model, string) Outcome) (g drivers.Grant) {
	b.do(func(m *Model) Outcome {
		var o Outcome
		d, done := b.ended[req.Owner]
		delete(b.ended, req.Owner)
		switch {
		case !done:
			o = leave(m, req.Owner)
		case d.Err == nil:
			for _, k := range req.Keys {
				o.Done = append(o.Done, m.Release(k, req.Owner).Done...)
			}
		}
		if g.Busy = (drivers.Busy{Key: key}); m.keys[key] != nil {
			g.Busy = m.busy(key, req.Claim)
		}
		return o
	})
	return g
}

// Release implements drivers.Driver.
func (r *Reference) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := r.check(ctx); err != nil {
		return false, err
	}
	return r.b.do(func(m *Model) Outcome { return m.Release(key, owner) }).OK, nil
}

// ForceRelease implements drivers.Driver.
func (r *Reference) ForceRelease(ctx context.Context, key string) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	r.b.do(func(m *Model) Outcome { return m.ForceRelease(key) })
	return nil
}

// Exists implements drivers.Driver.
func (r *Reference) Exists(ctx context.Context, key string) (bool, error) {
	if err := r.check(ctx); err != nil {
		return false, err
	}
	_, _, held := r.Held(key)
	return held, nil
}

// Extend implements drivers.Extender.
func (r *Reference) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := r.check(ctx); err != nil {
		return false, err
	}
	return r.b.do(func(m *Model) Outcome { return m.Extend(key, owner, ttl) }).OK, nil
}

// Close implements drivers.Driver: this handle's calls, and its waits
// under way, end with drivers.ErrClosed; a wait leaves its place.
func (r *Reference) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return nil
}

var (
	_ drivers.Driver   = (*Reference)(nil)
	_ drivers.Extender = (*Reference)(nil)
)
