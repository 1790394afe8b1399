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
	"github.com/zerotal/lock/drivers/internal/rules"
)

// sweepEvery is how often a handle deletes rows whose deadline has passed
// (left by holders that died or never released). Expired rows are already
// free; the sweep only keeps the table small.
const sweepEvery = 30 * time.Second

// Driver is a handle on a SQLite lock database. It implements
// drivers.Driver (every claim, sets and waits: Capabilities),
// drivers.Extender, drivers.Inspector, drivers.Lister and
// drivers.ChangeWatcher, and is safe for concurrent use.
type Driver struct {
	cfg    Config // with defaults applied
	memory bool   // Path is ":memory:": no reader pool, no poller

	wdb     *sql.DB
	wconn   *sql.Conn     // the one connection that writes
	wsc     stmtCache     // statements prepared on wconn
	rsc     stmtCache     // and on the readers
	wsem    chan struct{} // one slot: who may use wconn
	pmu     sync.Mutex
	pending []*writeOp // calls waiting for wconn, in arrival order
	rdb     *sql.DB    // readers (nil in memory mode)
	w       writeStmts
	r       readStmts

	watch  *watcher
	lines  lines
	hot    hotKeys
	admits []admission // made by the transaction in progress (guarded by wsem)

	lastSweep atomic.Int64 // Unix microseconds of the last sweep
	busyWaits atomic.Int64 // pauses on a database another connection locked
	// What the handle has run, for its tests to count per hand-off: reads,
	// and commits of a transaction of several statements.
	reads, txs atomic.Int64

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

// maxHoldArg is a request's MaxHold as a place's max_hold_us: NULL for
// none.
func maxHoldArg(maxHold time.Duration) any {
	if maxHold <= 0 {
		return nil
	}
	return rules.MaxHoldUS(maxHold)
}

// Release deletes owner's grant of key. It reports false when the grant
// had expired or owner holds none; an expired grant of owner's is deleted
// all the same. One statement, which also says whether anyone waits for
// the key: then the head of its queue is let in.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	var deleted, released, queued bool
	hot := d.hot.has(key)
	release := func(ctx context.Context) error {
		var expires, kind, lim int64
		err := d.w.release.QueryRowContext(ctx, key, owner).Scan(&expires, &kind, &lim, &queued)
		if errors.Is(err, sql.ErrNoRows) {
			deleted, released, queued = false, false, hot
			return nil
		}
		if err != nil {
			return err
		}
		deleted, released = true, expires > time.Now().UnixMicro()
		most := slots(rules.ClaimOf(kind, lim, false))
		switch {
		case !queued:
			return nil
		case hot:
			_, err := d.admitTx(ctx, key, "", most, time.Now())
			return err
		}
		return d.admitAfter(ctx, key, most)
	}
	err := d.write(ctx, "release", func(ctx context.Context) error {
		if hot { // one commit for the release and the hand-off
			return d.inTx(ctx, release)
		}
		return release(ctx)
	})
	if err == nil {
		d.hot.set(key, queued)
	}
	if deleted {
		d.watch.bump()
	}
	return released, err
}

// admitAfter lets key's waiters in after a grant of it ended by a
// statement that has taken effect on its own. In a joint run its failure
// fails the run, which then runs each call alone; alone, it is left to the
// waiters, the next of which to write lets them in as well.
func (d *Driver) admitAfter(ctx context.Context, key string, most int64) error {
	if err := d.admitKey(ctx, key, most); err != nil && inRun(ctx) {
		return err
	}
	return nil
}

// ForceRelease deletes every grant of key, whoever holds it; its waiters
// then come in.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	var deleted bool
	err := d.write(ctx, "force release", func(ctx context.Context) error {
		res, err := d.wq().ExecContext(ctx, forceSQL, key)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		deleted = n > 0
		if err != nil || !deleted {
			return err
		}
		return d.admitAfter(ctx, key, anyKind)
	})
	if deleted {
		d.watch.bump()
	}
	return err
}

// Exists reports whether key has a grant whose deadline has not passed.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	var held bool
	err := d.read(ctx, "exists", func(ctx context.Context, r *readStmts) error {
		return r.exists.QueryRowContext(ctx, key, time.Now().UnixMicro()).Scan(&held)
	})
	return held, err
}

// Extend sets the deadline of owner's grant of key to now+ttl, or to the
// grant's cap if that comes first, if it has not expired. It never creates
// a grant.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	var extended bool
	err := d.write(ctx, "extend", func(ctx context.Context) error {
		now := time.Now()
		res, err := d.wq().ExecContext(ctx, extendSQL, key, owner, deadlineUS(now, ttl), now.UnixMicro())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
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

// maybeSweep deletes the grants and places that have lapsed when the last
// sweep is old enough. Its failure is ignored: they count for nothing
// already, only the tables are bigger.
func (d *Driver) maybeSweep(ctx context.Context) {
	now := time.Now().UnixMicro()
	last := d.lastSweep.Load()
	if now-last < sweepEvery.Microseconds() || !d.lastSweep.CompareAndSwap(last, now) {
		return
	}
	_ = d.write(ctx, "sweep", func(ctx context.Context) error {
		now := time.Now().UnixMicro()
		if _, err := d.wq().ExecContext(ctx, sweepQSQL, now); err != nil {
			return err
		}
		_, err := d.wq().ExecContext(ctx, sweepSQL, now)
		return err
	})
}
