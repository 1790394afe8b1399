// Package memory is the in-process lock driver: a thin layer over the
// embedded engine, whose single goroutine owns the lock table.
//
// Locks live in this process only; use it for tests, development and
// single-instance services. Waiting is pushed and FIFO: a blocked acquirer
// is handed the lock inside the engine when the holder releases it or it
// expires, without polling.
//
// It is lock.Open's default driver, registered when the package is
// initialised; package lock imports it, so every program has it.
package memory

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
)

// Config configures a memory driver. The zero value is ready to use.
type Config struct {
	// Clock drives TTL expiry; nil means the system clock. Tests inject an
	// engine.FakeClock to make time explicit.
	Clock engine.Clock
	// MaxKeys caps the number of held keys, a semaphore or read/write
	// lock counting one per holder and per waiter; 0 (the default) and
	// drivers.Unlimited mean no cap. When the cap
	// is reached, new keys are refused with an error matching drivers.ErrFull.
	MaxKeys int
	// MaxWaitersPerKey caps the waiters queued on one key; 0 (the default)
	// and drivers.Unlimited mean no cap.
	MaxWaitersPerKey int
	// MaxHoldersPerKey caps the holders of one semaphore or read/write
	// lock: 0 (the default) means drivers.MaxHolders, the most any backend
	// allows, so it can only be lowered (engine.Config.MaxHoldersPerKey).
	MaxHoldersPerKey int
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxKeys < drivers.Unlimited {
		return &drivers.InvalidError{Field: "MaxKeys", Reason: "must be positive, 0 (the default: no cap) or drivers.Unlimited"}
	}
	if c.MaxWaitersPerKey < drivers.Unlimited {
		return &drivers.InvalidError{Field: "MaxWaitersPerKey", Reason: "must be positive, 0 (the default: no cap) or drivers.Unlimited"}
	}
	return engine.Config{MaxHoldersPerKey: c.MaxHoldersPerKey}.Validate()
}

// Driver is a handle on an engine. It implements drivers.Driver with
// every capability, drivers.Extender, drivers.Inspector, drivers.Lister
// and drivers.ChangeWatcher.
type Driver struct {
	e      *engine.Engine
	owns   bool // Close also closes the engine
	closed atomic.Bool
}

var (
	_ drivers.Driver    = (*Driver)(nil)
	_ drivers.Extender  = (*Driver)(nil)
	_ drivers.Inspector = (*Driver)(nil)
)

// New starts an engine and returns a driver that owns it: Close stops it.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e, err := engine.New(engine.Config{
		Clock:            cfg.Clock,
		MaxKeys:          cfg.MaxKeys,
		MaxWaitersPerKey: cfg.MaxWaitersPerKey,
		MaxHoldersPerKey: cfg.MaxHoldersPerKey,
	})
	if err != nil {
		return nil, err
	}
	return &Driver{e: e, owns: true}, nil
}

// Wrap returns another handle on an engine that the caller owns. Closing
// the handle does not stop the engine, so several handles (as several
// components of one program would have) can share one lock table.
func Wrap(e *engine.Engine) *Driver { return &Driver{e: e} }

// Engine returns the engine behind the driver, for inspection.
func (d *Driver) Engine() *engine.Engine { return d.e }

func (d *Driver) ready(ctx context.Context) error {
	if d.closed.Load() {
		return drivers.ErrClosed
	}
	return ctx.Err()
}

// Changed tells when key's mutex changes hands (drivers.ChangeWatcher;
// see engine.Changed).
func (d *Driver) Changed(key string) (<-chan struct{}, func()) { return d.e.Changed(key) }

// Inspect describes key: its kind, holders and waiters (drivers.Inspector).
func (d *Driver) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	if err := d.ready(ctx); err != nil {
		return drivers.Holding{}, false, err
	}
	info, ok, err := d.e.Get(ctx, key)
	if err != nil || !ok {
		return drivers.Holding{}, false, err
	}
	return HoldingOf(info, d.e.Remaining), true, nil
}

// HoldingOf describes an engine's entry as a drivers.Holding; remaining
// tells a grant's time left.
func HoldingOf(info engine.Info, remaining func(engine.Grant) time.Duration) drivers.Holding {
	s := info.Shared
	if s == nil {
		return drivers.Holding{
			Holders:     []drivers.Holder{{Owner: info.Owner, Fence: info.Fence, Remaining: remaining(info.Grant)}},
			WaiterCount: info.Waiters,
		}
	}
	h := drivers.Holding{Claim: drivers.Claim{Kind: s.Kind, Limit: s.Limit}, WaiterCount: info.Waiters}
	for _, g := range s.Holders {
		h.Holders = append(h.Holders, drivers.Holder{Owner: g.Owner, Fence: g.Fence, Remaining: remaining(g), Write: s.Writer})
	}
	for _, w := range s.Queue {
		h.Waiters = append(h.Waiters, drivers.Waiting{Owner: w.Owner, Write: w.Write})
	}
	return h
}

// Release frees key if owner holds it.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.ready(ctx); err != nil {
		return false, err
	}
	return d.e.Release(ctx, key, owner)
}

// Extend moves the deadline of a lock owner still holds.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.ready(ctx); err != nil {
		return false, err
	}
	_, ok, err := d.e.Extend(ctx, key, owner, ttl)
	return ok, err
}

// ForceRelease frees key whoever holds it.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.ready(ctx); err != nil {
		return err
	}
	_, err := d.e.ForceRelease(ctx, key)
	return err
}

// Exists reports whether key is held.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.ready(ctx); err != nil {
		return false, err
	}
	_, ok, err := d.e.Get(ctx, key)
	return ok, err
}

// Close closes the handle, and the engine when the handle owns it.
func (d *Driver) Close() error {
	if d.closed.Swap(true) || !d.owns {
		return nil
	}
	return d.e.Close()
}

// Importing the package registers the "memory" driver of lock.Open (package
// lock imports it: it is always there).
func init() {
	drivers.Register("memory", func(context.Context, drivers.OpenOptions) (drivers.Driver, error) {
		return New(Config{})
	})
}
