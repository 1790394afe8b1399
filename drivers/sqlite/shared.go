package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Semaphores and read/write locks (drivers.Sharer) live in tables of their
// own (schema version 2): a key's kind and limit (zerotal_shared_names),
// its grants (zerotal_shared_holders) and its queue (zerotal_shared_queue),
// every operation one write transaction. Unlike the mutex's per-handle
// lines, the queue is in the file, so waiting is first come, first served
// across processes: only the head of the queue is granted, when it fits.
// A waiting process keeps its place alive (alive_us) while it waits; the
// place of a process that died lapses after waiterLease and the queue
// moves on.
// waiterLease is how long a waiter's place in a queue outlives its last
// visit; a waiter visits at least three times per lease.
const waiterLease = 3 * time.Second

// sharedMarker is the message of the trigger that keeps a mutex off a
// shared key.
const sharedMarker = "zerotal: the key is held as a semaphore or read/write lock"

// sharedStmts are the shared keys' statements (prepared on first use).
const (
	sharedMutexSQL   = `SELECT expires_us FROM zerotal_locks WHERE key = ?1`
	sharedDropMutex  = `DELETE FROM zerotal_locks WHERE key = ?1 AND expires_us <= ?2`
	sharedNameSQL    = `SELECT kind, lim FROM zerotal_shared_names WHERE key = ?1`
	sharedPurgeSQL   = `DELETE FROM zerotal_shared_holders WHERE key = ?1 AND expires_us <= ?2`
	sharedPurgeQSQL  = `DELETE FROM zerotal_shared_queue WHERE key = ?1 AND alive_us <= ?2`
	sharedHoldersSQL = `SELECT owner, fence, expires_us, write FROM zerotal_shared_holders WHERE key = ?1 ORDER BY fence`
	sharedQueueSQL   = `SELECT owner, write, ttl_us FROM zerotal_shared_queue WHERE key = ?1 ORDER BY seq`
	sharedFenceSQL   = `UPDATE zerotal_lock_meta SET value = value + 1 WHERE name = 'last_fence' RETURNING value`
	sharedGrantSQL   = `INSERT INTO zerotal_shared_holders (key, owner, fence, expires_us, write) VALUES (?1, ?2, ?3, ?4, ?5)`
	sharedRefreshSQL = `UPDATE zerotal_shared_holders SET expires_us = ?3 WHERE key = ?1 AND owner = ?2 AND expires_us > ?4`
	sharedNameSet    = `INSERT INTO zerotal_shared_names (key, kind, lim) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO NOTHING`
	sharedEnqueueSQL = `INSERT INTO zerotal_shared_queue (key, owner, seq, write, alive_us, ttl_us)
VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM zerotal_shared_queue WHERE key = ?1), ?3, ?4, ?5)
ON CONFLICT (key, owner) DO UPDATE SET alive_us = excluded.alive_us`
	sharedDequeueSQL = `DELETE FROM zerotal_shared_queue WHERE key = ?1 AND owner = ?2`
	sharedReleaseSQL = `DELETE FROM zerotal_shared_holders WHERE key = ?1 AND owner = ?2 RETURNING expires_us`
	sharedForceSQL   = `DELETE FROM zerotal_shared_holders WHERE key = ?1`
	// sharedForgetSQL drops a key's name once nobody holds or waits for
	// it, so that it may be taken as another kind.
	sharedForgetSQL = `DELETE FROM zerotal_shared_names WHERE key = ?1
AND NOT EXISTS (SELECT 1 FROM zerotal_shared_holders WHERE key = ?1 AND expires_us > ?2)
AND NOT EXISTS (SELECT 1 FROM zerotal_shared_queue WHERE key = ?1 AND alive_us > ?2)`
	sharedSweepSQL = `DELETE FROM zerotal_shared_holders WHERE expires_us <= ?1`
)

// sharedHolder is one grant of a shared key as read.
type sharedHolder struct {
	owner     string
	fence     uint64
	expiresUS int64
	write     bool
}

// sharedOutcome is what one shared acquire decided.
type sharedOutcome struct {
	fence   uint64
	ok      bool
	queued  bool
	blocker int64 // the earliest holder's deadline (us) when not granted
	// inTheWay, when not granted, is the holder a refusal names
	// (drivers.Claim.InTheWay); its owner is "" when nobody holds the key.
	inTheWay sharedHolder
	err      error // a refusal to report (kind or limit mismatch), not a failure
}

// acquireClaim takes a semaphore's slot or a read/write lock's side of
// key for owner (drivers.Sharer). ok is false when the key has no room for
// owner now, or others wait before it; held then names the holder in the
// way.
func (d *Driver) acquireClaim(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim) (uint64, bool, drivers.HeldBy, error) {
	out, err := d.acquireShared(ctx, key, owner, ttl, c, false)
	if err != nil {
		return 0, false, drivers.HeldBy{}, err
	}
	if out.ok || out.err != nil {
		return out.fence, out.ok, drivers.HeldBy{}, out.err
	}
	return 0, false, out.heldBy(), nil
}

// heldBy is what a refusal tells of the holder in the way, as it was when
// the transaction ran.
func (o sharedOutcome) heldBy() drivers.HeldBy {
	if o.inTheWay.owner == "" {
		return drivers.HeldBy{}
	}
	return drivers.HeldBy{Holder: drivers.HolderOf(o.inTheWay.owner), TTL: max(time.Until(time.UnixMicro(o.inTheWay.expiresUS)), 0)}
}

// acquireClaimWait waits in key's queue, in the file, until owner is at
// its head and fits, or ctx ends; then its place is given up.
func (d *Driver) acquireClaimWait(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim, opts drivers.WaitOptions) (uint64, error) {
	if err := d.enter(ctx, "acquire wait"); err != nil {
		return 0, err
	}
	d.watch.subscribe()
	defer d.watch.unsubscribe()
	retryDelay := opts.RetryDelay
	if retryDelay <= 0 {
		retryDelay = fallbackRetryDelay
	}
	var visited time.Time // the last write attempt, which keeps the place alive
	for {
		changed := d.watch.next()
		// A waiter not at the head of the queue would only take the write
		// lock from those that are: it reads first, and writes when its
		// turn may have come or its place needs keeping alive.
		if !visited.IsZero() && time.Since(visited) < waiterLease/3 {
			fence, turn, err := d.sharedTurn(ctx, key, owner, c)
			if err == nil && fence != 0 {
				return fence, nil
			}
			if err == nil && !turn {
				if err := d.waitChange(ctx, min(waiterLease/3-time.Since(visited), retryDelay*10), changed); err != nil {
					d.leaveShared(ctx, key, owner)
					return 0, err
				}
				continue
			}
		}
		out, err := d.acquireShared(ctx, key, owner, ttl, c, true)
		visited = time.Now()
		switch {
		case err != nil:
			d.leaveShared(ctx, key, owner)
			return 0, err
		case out.err != nil:
			return 0, out.err
		case out.ok:
			return out.fence, nil
		}
		// Look again at a change, when the first holder's grant ends, and
		// in time to keep the place alive.
		wait := min(waiterLease/3, retryDelay*10)
		if until := time.Until(time.UnixMicro(out.blocker)); out.blocker > 0 && until < wait {
			wait = max(until, time.Millisecond)
		}
		if err := d.waitChange(ctx, wait, changed); err != nil {
			d.leaveShared(ctx, key, owner)
			if ctx.Err() != nil && out.blocker > 0 {
				err = drivers.HeldByWhenEnded(err, key, out.heldBy())
			}
			return 0, err
		}
	}
}

// sharedTurn reads, without the write lock, whether owner's attempt may
// succeed now: it holds the key, has no place (the attempt queues it
// again), or is at the head of the queue and fits. One statement, as
// every waiter of the key asks it at every change.
//
// A waiter a release let in holds the key already: its fence comes back,
// and no write is needed.
func (d *Driver) sharedTurn(ctx context.Context, key, owner string, c drivers.Claim) (fence uint64, turn bool, err error) {
	err = d.read(ctx, "read queue", func(ctx context.Context, r *readStmts) error {
		var held, head sql.NullString
		var own sql.NullInt64
		var holders, writers int64
		err := r.db.QueryRowContext(ctx, sharedTurnSQL, key, owner, time.Now().UnixMicro()).Scan(&own, &held, &head, &holders, &writers)
		if err != nil {
			return err
		}
		switch {
		case own.Valid:
			fence, turn = uint64(own.Int64), true
		case !held.Valid: // no place: the attempt queues it again
			turn = true
		case head.String != owner:
		case c.Kind == drivers.Semaphore:
			turn = uint32(holders) < c.Limit
		case c.Write:
			turn = holders == 0
		default:
			turn = writers == 0 && holders < drivers.MaxHolders
		}
		return nil
	})
	return fence, turn, err
}

// sharedTurnSQL: owner's fence if it holds key, whether it has a place,
// who is at the head of the queue, and the live holders and writers.
const sharedTurnSQL = `SELECT
	(SELECT fence FROM zerotal_shared_holders WHERE key = ?1 AND owner = ?2 AND expires_us > ?3),
	(SELECT owner FROM zerotal_shared_queue WHERE key = ?1 AND owner = ?2 AND alive_us > ?3),
	(SELECT owner FROM zerotal_shared_queue WHERE key = ?1 AND alive_us > ?3 ORDER BY seq LIMIT 1),
	(SELECT count(*) FROM zerotal_shared_holders WHERE key = ?1 AND expires_us > ?3),
	(SELECT count(*) FROM zerotal_shared_holders WHERE key = ?1 AND expires_us > ?3 AND write)`

// leaveShared gives up owner's place in key's queue, and a grant an
// acquire whose ctx ended may have written, with a fresh bounded context.
func (d *Driver) leaveShared(ctx context.Context, key, owner string) {
	if ctx.Err() == nil || d.closed.Load() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.BusyTimeout)
	defer cancel()
	_ = d.write(rctx, "leave queue", func(ctx context.Context) error {
		return d.inTx(ctx, func(ctx context.Context) error {
			now := time.Now().UnixMicro()
			if _, err := d.wq().ExecContext(ctx, sharedDequeueSQL, key, owner); err != nil {
				return err
			}
			if _, err := d.wq().ExecContext(ctx, `DELETE FROM zerotal_shared_holders WHERE key = ?1 AND owner = ?2`, key, owner); err != nil {
				return err
			}
			_, err := d.wq().ExecContext(ctx, sharedForgetSQL, key, now)
			return err
		})
	})
	d.watch.bump()
}

// acquireShared runs one shared acquire as one write transaction.
func (d *Driver) acquireShared(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim, wait bool) (sharedOutcome, error) {
	if err := c.CheckShared(); err != nil {
		return sharedOutcome{}, err
	}
	var out sharedOutcome
	err := d.write(ctx, "acquire", func(ctx context.Context) error {
		return d.inTx(ctx, func(ctx context.Context) (err error) {
			out, err = d.acquireSharedTx(ctx, key, owner, ttl, c, wait)
			return err
		})
	})
	if err == nil && out.ok {
		d.watch.bump() // a waiter behind may fit too
	}
	return out, err
}

// acquireSharedTx is acquireShared's transaction: it checks the key's
// kind, drops the grants and places that have lapsed, then refreshes
// owner's grant, grants owner when it is at the head and fits, or queues
// it (wait) or refuses.
func (d *Driver) acquireSharedTx(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim, wait bool) (sharedOutcome, error) {
	conn := d.wq()
	now := time.Now()
	nowUS := now.UnixMicro()
	if held, err := d.mutexHeld(ctx, key, nowUS); err != nil || held {
		return sharedOutcome{err: drivers.KindMismatch(key, drivers.Claim{}.Describe(), c)}, err
	}
	// What has lapsed goes first, and the key's name with it when nothing
	// is left: a key nobody holds or waits for may be taken as any kind.
	for _, q := range []string{sharedPurgeSQL, sharedPurgeQSQL, sharedForgetSQL} {
		if _, err := conn.ExecContext(ctx, q, key, nowUS); err != nil {
			return sharedOutcome{}, err
		}
	}
	var kind, lim int64
	err := conn.QueryRowContext(ctx, sharedNameSQL, key).Scan(&kind, &lim)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return sharedOutcome{}, err
	case drivers.Kind(kind) != c.Kind || uint32(lim) != c.Limit:
		return sharedOutcome{err: drivers.KindMismatch(key, drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}.Describe(), c)}, nil
	}
	holders, err := d.sharedHolders(ctx, key)
	if err != nil {
		return sharedOutcome{}, err
	}
	queue, err := d.sharedQueue(ctx, key)
	if err != nil {
		return sharedOutcome{}, err
	}
	if holders, queue, err = d.admitTx(ctx, key, c, now, holders, queue); err != nil {
		return sharedOutcome{}, err
	}
	for _, h := range holders {
		if h.owner != owner {
			continue
		}
		if h.write != c.Write {
			return sharedOutcome{err: &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner holds the other side of %q; release it first", key)}}, nil
		}
		_, err := conn.ExecContext(ctx, sharedRefreshSQL, key, owner, deadlineUS(now, ttl), nowUS)
		return sharedOutcome{fence: h.fence, ok: true}, err
	}
	ahead := len(queue)
	for i, q := range queue {
		if q.owner == owner {
			ahead = i
			break
		}
	}
	if _, err := conn.ExecContext(ctx, sharedNameSet, key, int64(c.Kind), int64(c.Limit)); err != nil {
		return sharedOutcome{}, err
	}
	if ahead == 0 && fits(holders, c) {
		return d.grantShared(ctx, key, owner, deadlineUS(now, ttl), c.Write)
	}
	out := sharedOutcome{blocker: earliest(holders), inTheWay: inTheWay(holders, c)}
	if !wait {
		_, err := conn.ExecContext(ctx, sharedForgetSQL, key, nowUS)
		return out, err
	}
	if ahead < len(queue) && queue[ahead].write != c.Write {
		out.err = &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner already waits for the other side of %q", key)}
		return out, nil
	}
	_, err = conn.ExecContext(ctx, sharedEnqueueSQL, key, owner, c.Write, now.Add(waiterLease).UnixMicro(), max(ttl.Microseconds(), 1))
	out.queued = true
	return out, err
}

// admitTx lets waiters in from the head of key's queue while they fit,
// each for its own TTL, inside the caller's transaction: the owner learns
// it at its next look, which finds it holds the key. It returns the
// holders and queue after.
func (d *Driver) admitTx(ctx context.Context, key string, c drivers.Claim, now time.Time,
	holders []sharedHolder, queue []sharedWaiter) ([]sharedHolder, []sharedWaiter, error) {
	for len(queue) > 0 {
		q := queue[0]
		if !fits(holders, drivers.Claim{Kind: c.Kind, Limit: c.Limit, Write: q.write}) {
			break
		}
		exp := now.UnixMicro() + q.ttlUS
		g, err := d.grantShared(ctx, key, q.owner, exp, q.write)
		if err != nil {
			return nil, nil, err
		}
		holders = append(holders, sharedHolder{owner: q.owner, fence: g.fence, expiresUS: exp, write: q.write})
		queue = queue[1:]
	}
	return holders, queue, nil
}

// admitKey is admitTx for a key whose claim is read from its name, after
// a grant of it ended.
func (d *Driver) admitKey(ctx context.Context, key string, now time.Time) error {
	var kind, lim int64
	err := d.wq().QueryRowContext(ctx, sharedNameSQL, key).Scan(&kind, &lim)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	holders, err := d.sharedHolders(ctx, key)
	if err != nil {
		return err
	}
	queue, err := d.sharedQueue(ctx, key)
	if err != nil {
		return err
	}
	_, _, err = d.admitTx(ctx, key, drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}, now, holders, queue)
	return err
}

// mutexHeld reports whether key is held as a mutex, dropping its row when
// it has lapsed.
func (d *Driver) mutexHeld(ctx context.Context, key string, nowUS int64) (bool, error) {
	var exp int64
	err := d.wq().QueryRowContext(ctx, sharedMutexSQL, key).Scan(&exp)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	case exp > nowUS:
		return true, nil
	}
	_, err = d.wq().ExecContext(ctx, sharedDropMutex, key, nowUS)
	return false, err
}

func (d *Driver) grantShared(ctx context.Context, key, owner string, expiresUS int64, write bool) (sharedOutcome, error) {
	var fence int64
	if err := d.wq().QueryRowContext(ctx, sharedFenceSQL).Scan(&fence); err != nil {
		return sharedOutcome{}, err
	}
	if _, err := d.wq().ExecContext(ctx, sharedGrantSQL, key, owner, fence, expiresUS, write); err != nil {
		return sharedOutcome{}, err
	}
	_, err := d.wq().ExecContext(ctx, sharedDequeueSQL, key, owner)
	return sharedOutcome{fence: uint64(fence), ok: true}, err
}

func fits(holders []sharedHolder, c drivers.Claim) bool {
	switch {
	case c.Kind == drivers.Semaphore:
		return uint32(len(holders)) < c.Limit
	case c.Write:
		return len(holders) == 0
	}
	// A reader beyond drivers.MaxHolders meets a busy key, as on every
	// backend.
	return len(holders) == 0 || (!holders[0].write && len(holders) < drivers.MaxHolders)
}

// inTheWay is the holder a refused acquire of c names (see
// drivers.Claim.InTheWay): the grant that ends first, or for a write the
// one that ends last; ties go to the lower fence, or for a write the
// higher, as in the engine.
func inTheWay(holders []sharedHolder, c drivers.Claim) sharedHolder {
	last := c.InTheWay()
	var w sharedHolder
	for i, h := range holders {
		switch {
		case i == 0:
		case !last && (h.expiresUS < w.expiresUS || h.expiresUS == w.expiresUS && h.fence < w.fence):
		case last && (h.expiresUS > w.expiresUS || h.expiresUS == w.expiresUS && h.fence > w.fence):
		default:
			continue
		}
		w = h
	}
	return w
}

func earliest(holders []sharedHolder) int64 {
	var e int64
	for i, h := range holders {
		if i == 0 || h.expiresUS < e {
			e = h.expiresUS
		}
	}
	return e
}

func (d *Driver) sharedHolders(ctx context.Context, key string) ([]sharedHolder, error) {
	rows, err := d.wq().QueryContext(ctx, sharedHoldersSQL, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hs []sharedHolder
	for rows.Next() {
		var h sharedHolder
		var fence int64
		if err := rows.Scan(&h.owner, &fence, &h.expiresUS, &h.write); err != nil {
			return nil, err
		}
		h.fence = uint64(fence)
		hs = append(hs, h)
	}
	return hs, rows.Err()
}

type sharedWaiter struct {
	owner string
	write bool
	ttlUS int64
}

func (d *Driver) sharedQueue(ctx context.Context, key string) ([]sharedWaiter, error) {
	rows, err := d.wq().QueryContext(ctx, sharedQueueSQL, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var qs []sharedWaiter
	for rows.Next() {
		var q sharedWaiter
		if err := rows.Scan(&q.owner, &q.write, &q.ttlUS); err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, rows.Err()
}

// releaseShared is Release of a shared key's grant: it reports whether
// owner held one that had not lapsed.
//
// The waiters that now fit are let in by the same transaction (the mutex
// statement before it, which found no row, changed nothing, so running
// this as a transaction of its own is as atomic as the call).
func (d *Driver) releaseShared(ctx context.Context, key, owner string) (deleted, released bool, err error) {
	err = d.inTx(ctx, func(ctx context.Context) error {
		var expires int64
		err := d.wq().QueryRowContext(ctx, sharedReleaseSQL, key, owner).Scan(&expires)
		if errors.Is(err, sql.ErrNoRows) {
			deleted, released = false, false
			return nil
		}
		if err != nil {
			return err
		}
		now := time.Now()
		deleted, released = true, expires > now.UnixMicro()
		if _, err := d.wq().ExecContext(ctx, sharedPurgeSQL, key, now.UnixMicro()); err != nil {
			return err
		}
		if err := d.admitKey(ctx, key, now); err != nil {
			return err
		}
		_, err = d.wq().ExecContext(ctx, sharedForgetSQL, key, now.UnixMicro())
		return err
	})
	return deleted, released, err
}

// forget drops key's name once nobody holds or waits for it. It is the
// second statement of a release or force release, which run without a
// transaction of their own when alone: the first has taken effect, so a
// failure here (the database busy) must not fail the call and have it
// run again. A name left behind goes at the key's next acquire.
func (d *Driver) forget(ctx context.Context, key string, nowUS int64) {
	_, _ = d.wq().ExecContext(ctx, sharedForgetSQL, key, nowUS)
}

// inTx runs fn as one transaction: inside the run's BEGIN IMMEDIATE when
// the call is part of a joint run (see runOnce), in one of its own
// otherwise.
func (d *Driver) inTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if inRun(ctx) {
		return fn(ctx)
	}
	if _, err := d.wconn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := fn(ctx); err != nil {
		d.rollback(context.WithoutCancel(ctx))
		return err
	}
	if _, err := d.wconn.ExecContext(ctx, "COMMIT"); err != nil {
		d.rollback(context.WithoutCancel(ctx))
		return err
	}
	return nil
}

// runKey marks the context of a call run inside a joint transaction.
type runKey struct{}

func inRun(ctx context.Context) bool { return ctx.Value(runKey{}) != nil }

// isSharedMarker reports the trigger's refusal of a mutex on a shared key.
func isSharedMarker(err error) bool { return err != nil && strings.Contains(err.Error(), sharedMarker) }

// Inspect describes key (drivers.Inspector): a mutex's holder, or a
// shared key's kind, holders and queue.
func (d *Driver) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	var h drivers.Holding
	var ok bool
	err := d.read(ctx, "inspect", func(ctx context.Context, r *readStmts) error {
		var err error
		h, ok, err = inspectTx(ctx, r.db, key)
		return err
	})
	return h, ok, err
}

// inspectTx reads key's state through q.
func inspectTx(ctx context.Context, q querier, key string) (drivers.Holding, bool, error) {
	now := time.Now()
	var owner string
	var fence, exp int64
	err := q.QueryRowContext(ctx, `SELECT owner, fence, expires_us FROM zerotal_locks WHERE key = ?1 AND expires_us > ?2`, key, now.UnixMicro()).Scan(&owner, &fence, &exp)
	if err == nil {
		return drivers.Holding{Holders: []drivers.Holder{{Owner: owner, Fence: uint64(fence), Remaining: time.UnixMicro(exp).Sub(now)}}}, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return drivers.Holding{}, false, err
	}
	var kind, lim int64
	err = q.QueryRowContext(ctx, sharedNameSQL, key).Scan(&kind, &lim)
	if errors.Is(err, sql.ErrNoRows) {
		return drivers.Holding{}, false, nil
	}
	if err != nil {
		return drivers.Holding{}, false, err
	}
	h := drivers.Holding{Claim: drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}}
	rows, err := q.QueryContext(ctx, `SELECT owner, fence, expires_us, write FROM zerotal_shared_holders WHERE key = ?1 AND expires_us > ?2 ORDER BY fence`, key, now.UnixMicro())
	if err != nil {
		return drivers.Holding{}, false, err
	}
	for rows.Next() {
		var x drivers.Holder
		if err := rows.Scan(&x.Owner, &fence, &exp, &x.Write); err != nil {
			rows.Close()
			return drivers.Holding{}, false, err
		}
		x.Fence, x.Remaining = uint64(fence), time.UnixMicro(exp).Sub(now)
		h.Holders = append(h.Holders, x)
	}
	rows.Close()
	rows, err = q.QueryContext(ctx, `SELECT owner, write FROM zerotal_shared_queue WHERE key = ?1 AND alive_us > ?2 ORDER BY seq`, key, now.UnixMicro())
	if err != nil {
		return drivers.Holding{}, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var w drivers.Waiting
		if err := rows.Scan(&w.Owner, &w.Write); err != nil {
			return drivers.Holding{}, false, err
		}
		h.Waiters = append(h.Waiters, w)
	}
	h.WaiterCount = len(h.Waiters)
	return h, len(h.Holders) > 0, rows.Err()
}

// wq runs statements on the write connection, each prepared once.
func (d *Driver) wq() stmtQuerier { return stmtQuerier{&d.wsc} }

// querier is what inspectTx reads through: the reader pool or the write
// connection.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}
