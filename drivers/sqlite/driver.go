package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
)

// sweepEvery is how often a handle deletes rows whose deadline has passed
// (left by holders that died or never released). Expired rows are already
// free; the sweep only keeps the table small.
const sweepEvery = 30 * time.Second

// Driver is a handle on a SQLite lock database. It implements
// drivers.Driver, drivers.Extender and drivers.Waiter, and is safe for
// concurrent use.
type Driver struct {
	cfg    Config // with defaults applied
	memory bool   // Path is ":memory:": no reader pool, no poller

	wdb     *sql.DB
	wconn   *sql.Conn     // the one connection that writes
	wsc     stmtCache     // the shared keys' statements on wconn
	rsc     stmtCache     // and on the readers
	wsem    chan struct{} // one slot: who may use wconn
	pmu     sync.Mutex
	pending []*writeOp // calls waiting for wconn, in arrival order
	rdb     *sql.DB    // readers (nil in memory mode)
	w       writeStmts
	r       readStmts

	watch  *watcher
	queues keyQueues

	lastSweep atomic.Int64 // Unix microseconds of the last sweep
	busyWaits atomic.Int64 // pauses on a database another connection locked
	closed    atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Extender = (*Driver)(nil)
)

func newDriver(cfg Config) *Driver {
	return &Driver{
		cfg:   cfg,
		wsem:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		watch: newWatcher(min(minPoll, cfg.PollInterval), cfg.PollInterval),
	}
}

// deadlineUS is now+ttl in Unix microseconds, at least one microsecond
// after now so that a grant is never born expired.
func deadlineUS(now time.Time, ttl time.Duration) int64 {
	return now.UnixMicro() + max(ttl.Microseconds(), 1)
}

// acquireKey takes key for owner for ttl, takes it over when the holder's
// deadline has passed, or refreshes the deadline (keeping the fence) when
// owner holds it. ok is false, with a nil error, when another owner holds
// the key. One statement does all of it, fence counter included.
func (d *Driver) acquireKey(ctx context.Context, key, owner string, ttl time.Duration) (fence uint64, ok bool, err error) {
	var refused error // the key is a shared one
	err = d.write(ctx, "acquire", func(ctx context.Context) error {
		refused = nil
		now := time.Now()
		var f int64
		err := d.w.acquire.QueryRowContext(ctx, key, owner, deadlineUS(now, ttl), now.UnixMicro()).Scan(&f)
		if errors.Is(err, sql.ErrNoRows) {
			fence, ok = 0, false
			return nil
		}
		if isSharedMarker(err) {
			refused = drivers.KindMismatch(key, drivers.AnyShared, drivers.Claim{})
			return nil
		}
		if err != nil {
			return err
		}
		fence, ok = uint64(f), true
		return nil
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return 0, false, err
	}
	if ok {
		d.maybeSweep(ctx)
	}
	return fence, ok, nil
}

// acquireKeyHolder is Acquire that, when another owner holds the key, also
// says who (drivers.HolderOf its owner) and how long its row has left
// (read after the attempt, so it may be a little less than at the
// attempt).
func (d *Driver) acquireKeyHolder(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, drivers.HeldBy, error) {
	fence, ok, err := d.acquireKey(ctx, key, owner, ttl)
	if err != nil || ok {
		return fence, ok, drivers.HeldBy{}, err
	}
	h, err := d.holder(ctx, key)
	if err != nil {
		return 0, false, drivers.HeldBy{}, nil // the attempt's answer stands; the holder is unknown
	}
	return 0, false, drivers.HeldBy{Holder: drivers.HolderOf(h.owner),
		TTL: max(time.Duration(h.expiresUS-time.Now().UnixMicro())*time.Microsecond, 0)}, nil
}

// Release deletes key if owner holds it. It reports false when the lock
// had expired or someone else holds it; an expired row of owner's is
// deleted all the same.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	var deleted, released bool
	err := d.write(ctx, "release", func(ctx context.Context) error {
		var expires int64
		err := d.w.release.QueryRowContext(ctx, key, owner).Scan(&expires)
		if errors.Is(err, sql.ErrNoRows) {
			deleted, released, err = d.releaseShared(ctx, key, owner)
			return err
		}
		if err != nil {
			return err
		}
		deleted, released = true, expires > time.Now().UnixMicro()
		return nil
	})
	if deleted {
		d.watch.bump()
	}
	return released, err
}

// ForceRelease deletes key whoever holds it: a mutex's holder, or every
// holder of a shared key (whose waiters then come in).
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	return d.deleteRows(ctx, "force release", func(ctx context.Context) (sql.Result, error) {
		res, err := d.w.force.ExecContext(ctx, key)
		if n, _ := rowsAffected(res, err); n > 0 || err != nil {
			return res, err
		}
		if res, err = d.wq().ExecContext(ctx, sharedForceSQL, key); err != nil {
			return res, err
		}
		d.forget(ctx, key, time.Now().UnixMicro())
		return res, nil
	})
}

func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// deleteRows runs one deleting statement as a write, and tells this host's
// waiters when it deleted anything.
func (d *Driver) deleteRows(ctx context.Context, op string, exec func(ctx context.Context) (sql.Result, error)) error {
	var deleted bool
	err := d.write(ctx, op, func(ctx context.Context) error {
		res, err := exec(ctx)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		deleted = n > 0
		return err
	})
	if deleted {
		d.watch.bump()
	}
	return err
}

// Exists reports whether key is held and its deadline has not passed.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	var held bool
	err := d.read(ctx, "exists", func(ctx context.Context, r *readStmts) error {
		return r.exists.QueryRowContext(ctx, key, time.Now().UnixMicro()).Scan(&held)
	})
	return held, err
}

// Extend sets the deadline of key to now+ttl if owner holds it and it has
// not expired. It never creates a row.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	var extended bool
	err := d.write(ctx, "extend", func(ctx context.Context) error {
		now := time.Now()
		res, err := d.w.extend.ExecContext(ctx, key, owner, deadlineUS(now, ttl), now.UnixMicro())
		n, err := rowsAffected(res, err)
		if n == 0 && err == nil {
			n, err = rowsAffected(d.wq().ExecContext(ctx, sharedRefreshSQL, key, owner, deadlineUS(now, ttl), now.UnixMicro()))
		}
		extended = n == 1
		return err
	})
	return extended, err
}

// Close stops the poller, waits for the write in flight and closes the
// connections. Locks held through this handle stay in the file until they
// are released by owner or expire. Close is idempotent.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		close(d.done)
		d.watch.stop()
		d.wsem <- struct{}{} // the write in flight, if any, has finished
		d.closeErr = d.closeConns()
	})
	return d.closeErr
}

func (d *Driver) closeConns() error {
	d.wsc.close()
	d.rsc.close()
	var errs []error
	if d.wconn != nil {
		errs = append(errs, d.wconn.Close())
	}
	if d.wdb != nil {
		errs = append(errs, d.wdb.Close())
	}
	if d.rdb != nil {
		errs = append(errs, d.rdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// maybeSweep deletes expired rows when the last sweep is old enough. Its
// failure is ignored: the rows are free already, only the table is bigger.
func (d *Driver) maybeSweep(ctx context.Context) {
	now := time.Now().UnixMicro()
	last := d.lastSweep.Load()
	if now-last < sweepEvery.Microseconds() || !d.lastSweep.CompareAndSwap(last, now) {
		return
	}
	_ = d.deleteRows(ctx, "sweep", func(ctx context.Context) (sql.Result, error) {
		now := time.Now().UnixMicro()
		if _, err := d.wq().ExecContext(ctx, sharedSweepSQL, now); err != nil {
			return nil, err
		}
		return d.w.sweep.ExecContext(ctx, now)
	})
}
