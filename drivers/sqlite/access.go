package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zerotal/lock/drivers"
)

// The pauses between two attempts of a statement that found the database
// locked by another process. They are much finer than SQLite's own busy
// handler (1, 2, 5 ... 100 ms), which is where the 20-40 ms tail latency of
// plain SQLite under contention comes from.
const (
	busyMinPause = 20 * time.Microsecond
	busyMaxPause = 250 * time.Microsecond
)

// enter refuses a call on an ended context or a closed handle.
func (d *Driver) enter(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if d.closed.Load() {
		return drivers.ErrClosed
	}
	return nil
}

// write runs fn on the write connection and returns its error, retrying
// while other processes hold the write lock. Calls made while another is
// in flight are run together, in one transaction, by whichever of them
// gets the connection next (see runPending): one write lock and one commit
// for the lot.
//
// When ctx ends before the call was taken into a run, write returns at
// once and fn never runs. Once taken, fn may take effect even though ctx
// ends; write then waits for the run (a few statements) and reports it.
func (d *Driver) write(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if err := d.enter(ctx, op); err != nil {
		return err
	}
	w := &writeOp{ctx: ctx, fn: fn, result: make(chan error, 1)}
	d.pmu.Lock()
	d.pending = append(d.pending, w)
	d.pmu.Unlock()
	var err error
	select {
	case err = <-w.result:
	case d.wsem <- struct{}{}:
		// Any earlier run has finished, so w either has its result or is
		// still pending and goes into this run.
		d.runPending()
		<-d.wsem
		err = <-w.result
	case <-ctx.Done():
		if !d.unqueue(w) {
			err = <-w.result
			break
		}
		return fmt.Errorf("sqlite: %s: %w", op, ctx.Err())
	case <-d.done:
		if !d.unqueue(w) {
			err = <-w.result
			break
		}
		return drivers.ErrClosed
	}
	return d.classify(ctx, op, err)
}

// read runs fn with the read statements: on the reader pool, which never
// waits for writers in WAL mode, or on the write connection in memory mode.
func (d *Driver) read(ctx context.Context, op string, fn func(ctx context.Context, r *readStmts) error) error {
	d.reads.Add(1)
	if d.memory {
		return d.write(ctx, op, func(ctx context.Context) error { return fn(ctx, &d.r) })
	}
	if err := d.enter(ctx, op); err != nil {
		return err
	}
	// As a write's, a read's statements are not cut short (see runOnce).
	return d.classify(ctx, op, d.retryBusy(ctx, op, func(ctx context.Context) error { return fn(context.WithoutCancel(ctx), &d.r) }))
}

// retryBusy runs fn until it returns something other than SQLITE_BUSY, the
// context ends, the handle closes, or Config.BusyTimeout passes. A busy
// statement took no lock and changed nothing, so running it again is safe.
func (d *Driver) retryBusy(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	b := d.newBusyBackoff()
	for {
		err := fn(ctx)
		if !isBusy(err) {
			return err
		}
		if err := b.wait(ctx, op, err); err != nil {
			return err
		}
	}
}

// busyBackoff paces the attempts of one call on a locked database.
type busyBackoff struct {
	d        *Driver
	pause    time.Duration
	deadline time.Time
}

func (d *Driver) newBusyBackoff() *busyBackoff {
	return &busyBackoff{d: d, pause: busyMinPause}
}

// wait pauses before the next attempt, or returns why there is none.
func (b *busyBackoff) wait(ctx context.Context, op string, busy error) error {
	now := time.Now()
	if b.deadline.IsZero() {
		b.deadline = now.Add(b.d.cfg.BusyTimeout)
	} else if now.After(b.deadline) {
		return fmt.Errorf("%s: database locked by other connections for %v: %w", op, b.d.cfg.BusyTimeout, busy)
	}
	b.d.busyWaits.Add(1)
	if err := b.d.sleep(ctx, jitter(b.pause)); err != nil {
		return err
	}
	b.pause = min(2*b.pause, busyMaxPause)
	return nil
}

// sleep pauses for d, or less when the context ends or the handle closes.
func (d *Driver) sleep(ctx context.Context, pause time.Duration) error {
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.done:
		return drivers.ErrClosed
	}
}

// jitter returns a duration uniformly in [d/2, d], so that processes
// backing off together spread out.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
