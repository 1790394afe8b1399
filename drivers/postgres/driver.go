package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
	"github.com/zerotal/lock/internal/background"
)

// Importing the package registers the "postgres" driver of lock.Open.
func init() {
	drivers.Register("postgres", func(ctx context.Context, o drivers.OpenOptions) (drivers.Driver, error) {
		return Open(ctx, Config{URL: o.PostgresURL, Logger: o.Logger})
	})
}

// Driver is a lock backend on a PostgreSQL database. It is safe for
// concurrent use; every process that opens the same database shares its
// locks.
type Driver struct {
	cfg    Config
	pool   *pgxpool.Pool
	hub    hub
	done   chan struct{}
	closed atomic.Bool
	life   context.Context // ends at Close: the listener's and the clean-ups'
	stop   context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	// leaving records the clean-ups under way by key: a later call on a
	// key comes after them (afterCall, after).
	leaving background.Keys
}

var (
	_ drivers.Driver    = (*Driver)(nil)
	_ drivers.Extender  = (*Driver)(nil)
	_ drivers.Inspector = (*Driver)(nil)
)

// Open connects to cfg.URL, checks that the server answers, creates the
// lock schema on first use (or upgrades it) and starts listening for
// releases. It refuses a schema newer than it knows (ErrSchemaTooNew).
func Open(ctx context.Context, cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, &drivers.InvalidError{Field: "postgres URL", Reason: "cannot be parsed (its text is not repeated here: it may hold a password)"}
	}
	// No prepared statement outlives its exchange, so that a pooler in
	// transaction mode may route every one.
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, drivers.Unavailable("postgres: open", err)
	}
	d := &Driver{cfg: cfg, pool: pool, done: make(chan struct{})}
	d.life, d.stop = context.WithCancel(context.Background())
	d.hub.init()
	if err := d.setUp(ctx); err != nil {
		d.stop()
		pool.Close()
		return nil, err
	}
	if !cfg.NoListen {
		d.wg.Go(func() { d.listen(d.life) })
	}
	return d, nil
}

// setUp creates or upgrades the schema on one connection of the pool.
func (d *Driver) setUp(ctx context.Context) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return d.failed(ctx, "open", err, false)
	}
	defer conn.Release()
	if err := migrate(ctx, conn.Conn()); err != nil {
		if errors.Is(err, ErrSchemaTooNew) {
			return err
		}
		return d.failed(ctx, "open: lock schema", err, false)
	}
	return nil
}

// Close stops listening and closes the pool. It is idempotent.
func (d *Driver) Close() error {
	d.once.Do(func() {
		d.closed.Store(true)
		close(d.done)
		d.stop()
		d.wg.Wait()
		d.pool.Close()
	})
	return nil
}

// enter refuses a call on a closed handle or with an ended context.
func (d *Driver) enter(ctx context.Context, op string) error {
	if d.closed.Load() {
		return drivers.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	return nil
}

// Capabilities: every claim, sets, and waits for one key or a set, all
// first come, first served across every process on the database; the cap
// on total hold time, kept in each grant's row (cap_us) and applied by
// every statement that sets a deadline.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Shared: true, Sets: true, SetWait: true, MaxHold: true}
}

// oneShot runs one statement that changes key in a transaction of its
// own, under key's lock, in one round trip; read sets how its answer is
// read.
func (d *Driver) oneShot(ctx context.Context, op, key, sql string, args []any, read func(q *pgx.QueuedQuery)) error {
	if err := d.enter(ctx, op); err != nil {
		return err
	}
	if err := d.after(ctx, op, key); err != nil {
		return err
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return d.failed(ctx, op, err, false)
	}
	defer conn.Release()
	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue(lockSQL, []string{key})
	read(b.Queue(sql, args...))
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, &b).Close(); err != nil {
		abort(ctx, conn)
		return d.failed(ctx, op, err, true)
	}
	return nil
}

// Release deletes owner's grant of key. It reports false when the grant
// had lapsed or owner holds none. When the key has waiters, the head is
// let in, in the same transaction when this handle has waiters of the
// key (the release and the hand-over in two round trips), and otherwise
// in one of its own after the release (which stays one round trip when
// nobody waits).
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if d.hub.waits(key) {
		if err := d.after(ctx, "release", key); err != nil {
			return false, err
		}
		return d.letGo(ctx, "release", owner, []string{key})
	}
	var live, queued bool
	err := d.oneShot(ctx, "release", key, releaseSQL, []any{key, owner}, func(q *pgx.QueuedQuery) {
		q.QueryRow(func(r pgx.Row) error { return r.Scan(&live, &queued) })
	})
	if err == nil && queued {
		_, _ = d.letGo(ctx, "release: let the next in", "", []string{key})
	}
	return live, err
}

// ForceRelease deletes every grant of key, whoever holds it, and lets
// the head of its queue in.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	var n int64
	var queued bool
	err := d.oneShot(ctx, "force release", key, forceSQL, []any{key}, func(q *pgx.QueuedQuery) {
		q.QueryRow(func(r pgx.Row) error { return r.Scan(&n, &queued) })
	})
	if err == nil && queued {
		_, _ = d.letGo(ctx, "force release: let the next in", "", []string{key})
	}
	return err
}

// letGo lets go owner's grants of keys ("" lets go of none) and lets the
// head of each key's queue in, in one transaction, so that the waiters
// let in are told of their grants (letInSQL) and need not read the key
// and let themselves in. It reports whether owner held one of the keys.
// A hand-over after a release that fails is left to the waiters, who find
// their turn at their next look.
func (d *Driver) letGo(ctx context.Context, op, owner string, keys []string) (bool, error) {
	var held bool
	err := d.inTx(ctx, op, keys, func(t *txn) error {
		held = false
		t.sweep()
		for _, k := range keys {
			s := t.state(k)
			if g := rules.Find(s.Grants, owner); g >= 0 && owner != "" {
				t.queue(dropSQL, k, owner)
				s.Grants = slices.Delete(s.Grants, g, g+1)
				held = true
			}
			t.admit(k)
		}
		return nil
	})
	return held, err
}

// Extend sets the deadline of owner's live grant of key to ttl from the
// database's now, never past the grant's cap; it never grants anew.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	var n int64
	err := d.oneShot(ctx, "extend", key, extendSQL, []any{key, owner, max(ttl.Microseconds(), 1)}, func(q *pgx.QueuedQuery) {
		q.Exec(func(tag pgconn.CommandTag) error { n = tag.RowsAffected(); return nil })
	})
	return n > 0, err
}

// Exists reports whether key has a live grant.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.enter(ctx, "exists"); err != nil {
		return false, err
	}
	if err := d.after(ctx, "exists", key); err != nil {
		return false, err
	}
	var ok bool
	if err := d.pool.QueryRow(ctx, existsSQL, key).Scan(&ok); err != nil {
		return false, d.failed(ctx, "exists", err, false)
	}
	return ok, nil
}

// leaveWait bounds how long a call that has ended waits for its clean-up
// (a wait's places given up, a grant whose answer was lost let go) before
// it returns; the clean-up goes on in the background, until abortTimeout
// or Close, and the driver's later calls on its keys wait for it.
const leaveWait = 250 * time.Millisecond

// afterCall runs fn, a call's clean-up of keys, with a context of its own
// bounded by abortTimeout and ended by Close, and returns once fn has, or
// after leaveWait, so that the call returns by its deadline whatever the
// database does. Until fn returns, keys are recorded as leaving: a later
// call of this driver on one of them comes after fn, so that it does not
// find the places or grants of a caller that is gone (another process's
// calls may; the places then lapse after their lease).
func (d *Driver) afterCall(keys []string, fn func(ctx context.Context)) {
	if d.closed.Load() {
		return
	}
	done := make([]func(), len(keys))
	for i, k := range keys {
		done[i] = d.leaving.Add(k)
	}
	ended := make(chan struct{})
	d.wg.Go(func() {
		defer close(ended)
		defer func() {
			for _, f := range done {
				f()
			}
		}()
		ctx, cancel := context.WithTimeout(d.life, abortTimeout)
		defer cancel()
		fn(ctx)
	})
	t := time.NewTimer(leaveWait)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
	}
}

// after waits until no clean-up of keys that afterCall started before it
// is under way, or ctx ends, or the driver closes. A call whose ctx ends
// first is ErrUnavailable: the database has not answered the clean-up in
// its way.
func (d *Driver) after(ctx context.Context, op string, keys ...string) error {
	switch k, err := d.leaving.After(ctx, d.done, keys...); {
	case errors.Is(err, background.ErrStopped):
		return drivers.ErrClosed
	case err != nil:
		return drivers.Unavailable(fmt.Sprintf("postgres: %s: the clean-up of %q not answered", op, k), err)
	}
	return nil
}
