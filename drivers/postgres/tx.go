package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zerotal/lock/drivers"
)

// txn is one transaction over some keys: their state as read under their
// locks, at the database's now, and the writes queued for its commit.
type txn struct {
	keys   []string
	nowUS  int64
	states map[string]*keyState
	writes pgx.Batch
	woken  map[string]bool
}

func (t *txn) state(key string) *keyState { return t.states[key] }

// queue adds a write to the transaction's commit.
func (t *txn) queue(sql string, args ...any) *pgx.QueuedQuery { return t.writes.Queue(sql, args...) }

// wake notifies the waiters of key at commit.
func (t *txn) wake(key string) {
	if !t.woken[key] {
		t.woken[key] = true
		t.queue(notifySQL, key)
	}
}

// grant queues a new grant of key to owner until expiresUS, never past
// capUS (0: no cap); its fence is known once the transaction has run.
func (t *txn) grant(key, owner string, expiresUS, capUS int64, c drivers.Claim) *uint64 {
	fence := new(uint64)
	kind, lim, excl := claimArgs(c)
	t.queue(grantSQL, key, owner, within(expiresUS, capUS), kind, lim, excl, orNull(capUS)).QueryRow(func(r pgx.Row) error {
		var f int64
		err := r.Scan(&f)
		*fence = uint64(f)
		return err
	})
	return fence
}

// admit lets the head of key's queue in while it fits, each waiter for
// its own TTL and with its own cap from now, and wakes the key's waiters:
// those let in find their grant at their next look.
func (t *txn) admit(key string) {
	s := t.states[key]
	n := s.admitted()
	for _, p := range s.places[:n] {
		p.capUS = capAt(t.nowUS, p.maxHoldUS)
		p.expiresUS = within(t.nowUS+p.ttlUS, p.capUS)
		p.pending = t.grant(key, p.owner, p.expiresUS, p.capUS, p.claim)
		t.queue(dequeueSQL, key, p.owner)
		s.grants = append(s.grants, p)
	}
	s.places = s.places[n:]
	if n > 0 {
		t.wake(key)
	}
}

// errRollback ends a transaction without its writes, as fn found it
// should; inTx returns the error it carries.
type errRollback struct{ err error }

func (e *errRollback) Error() string { return e.err.Error() }

// inTx runs fn as one transaction over keys: one round trip takes their
// locks and reads their state and the database's now; fn decides in Go
// and queues its writes; a second sends them with the COMMIT. A
// transaction whose fn queues nothing is one round trip. An error of the
// second round trip that may have followed the commit is reported as
// such (sent): the caller says ErrOutcomeUnknown.
func (d *Driver) inTx(ctx context.Context, op string, keys []string, fn func(t *txn) error) error {
	if err := d.enter(ctx, op); err != nil {
		return err
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return d.failed(ctx, op, err, false)
	}
	defer conn.Release()
	t := &txn{keys: keys, states: map[string]*keyState{}, woken: map[string]bool{}}
	for _, k := range keys {
		t.states[k] = &keyState{}
	}
	if err := readLocked(ctx, conn, t); err != nil {
		abort(ctx, conn)
		return d.failed(ctx, op, err, false)
	}
	ferr := fn(t)
	var rb *errRollback
	if errors.As(ferr, &rb) || t.writes.Len() == 0 {
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			abort(ctx, conn)
		}
		if rb != nil {
			return rb.err
		}
		return ferr
	}
	if ferr != nil {
		abort(ctx, conn)
		return ferr
	}
	t.writes.Queue("COMMIT")
	if err := conn.SendBatch(ctx, &t.writes).Close(); err != nil {
		abort(ctx, conn)
		return d.failed(ctx, op, err, true)
	}
	return nil
}

// readLocked begins t's transaction, takes its keys' locks and reads
// their state, in one round trip.
func readLocked(ctx context.Context, conn *pgxpool.Conn, t *txn) error {
	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue(lockSQL, t.keys)
	b.Queue(nowSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&t.nowUS) })
	b.Queue(stateSQL, t.keys).Query(func(rows pgx.Rows) error { return scanState(rows, t) })
	return conn.SendBatch(ctx, &b).Close()
}

// scanState files the rows of stateSQL into t's states, live ones as
// grants and places, lapsed ones only marked for the sweep.
func scanState(rows pgx.Rows, t *txn) error {
	for rows.Next() {
		var key string
		var place bool
		var r row
		var fenceOrTTL int64
		var kind int16
		var lim int32
		var excl bool
		var capOrMaxHold int64
		if err := rows.Scan(&key, &place, &r.owner, &fenceOrTTL, &r.expiresUS, &kind, &lim, &excl, &r.seq, &capOrMaxHold); err != nil {
			return err
		}
		s := t.states[key]
		if s == nil {
			s = &keyState{}
			t.states[key] = s
		}
		if r.expiresUS <= t.nowUS {
			s.stale = true
			continue
		}
		r.claim = claimOf(kind, lim, excl)
		if place {
			r.ttlUS, r.maxHoldUS = fenceOrTTL, capOrMaxHold
			s.places = append(s.places, r)
		} else {
			r.fence, r.capUS = uint64(fenceOrTTL), capOrMaxHold
			s.grants = append(s.grants, r)
		}
	}
	for _, s := range t.states {
		s.sort()
	}
	return rows.Err()
}

// sweep queues the deletion of the lapsed rows t read.
func (t *txn) sweep() {
	for _, s := range t.states {
		if s.stale {
			t.queue(sweepGrantsSQL, t.keys, t.nowUS)
			t.queue(sweepQueueSQL, t.keys, t.nowUS)
			return
		}
	}
}

// abort ends a connection's transaction that went wrong half-way: a
// ROLLBACK with a fresh short context, or, failing that, the connection
// closed, which ends the transaction at the server (or the pooler).
func abort(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	if _, err := conn.Exec(rctx, "ROLLBACK"); err != nil {
		_ = conn.Conn().Close(rctx)
	}
}
