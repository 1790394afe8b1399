package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
)

// txn is one transaction over some keys: their state as read under their
// locks, at the database's now, and the writes queued for its commit.
type txn struct {
	keys   []string
	nowUS  int64
	states map[string]*keyState
	writes pgx.Batch
	in     []letIn // the places let in, told to this handle's waiters at commit
}

func (t *txn) state(key string) *keyState { return t.states[key] }

// queue adds a write to the transaction's commit.
func (t *txn) queue(sql string, args ...any) *pgx.QueuedQuery { return t.writes.Queue(sql, args...) }

// grant queues a new grant of key to owner until expiresUS, never past
// its cap; its fence is known once the transaction has run.
func (t *txn) grant(key, owner string, expiresUS int64, ceiling rules.Cap, c drivers.Claim) *uint64 {
	return t.write(grantSQL, key, owner, expiresUS, ceiling, c)
}

// write queues sql, grantSQL or letInSQL (with the place's seq in
// extra), and returns where the grant's fence is put once the
// transaction has run.
func (t *txn) write(sql, key, owner string, expiresUS int64, ceiling rules.Cap, c drivers.Claim, extra ...any) *uint64 {
	fence := new(uint64)
	kind, lim, excl := claimArgs(c)
	args := append([]any{key, owner, ceiling.Bound(expiresUS), kind, lim, excl, ceiling.Arg()}, extra...)
	t.queue(sql, args...).QueryRow(func(r pgx.Row) error {
		var f int64
		err := r.Scan(&f)
		*fence = uint64(f)
		return err
	})
	return fence
}

// fenceOf is where the fence of g, a grant of key, is: that of a place
// this transaction lets in is known once the transaction has run.
func (t *txn) fenceOf(key string, g rules.Row) *uint64 {
	for _, in := range t.in {
		if in.key == key && in.owner == g.Owner {
			return in.fence
		}
	}
	return &g.Fence
}

// admit lets the head of key's queue in while it fits, each waiter for
// its own TTL and with its own cap from now, and tells each waiter let in
// of its grant (letInSQL), and no other.
func (t *txn) admit(key string) {
	s := t.states[key]
	n := s.Admitted()
	for _, p := range s.Places[:n] {
		g, ceiling := p.LetIn(t.nowUS)
		fence := t.write(letInSQL, key, g.Owner, g.ExpiresUS, ceiling, g.Claim, g.Seq)
		t.in = append(t.in, letIn{key: key, owner: g.Owner, seq: g.Seq, fence: fence})
		t.queue(dequeueSQL, key, g.Owner)
		s.Grants = append(s.Grants, g)
	}
	s.Places = s.Places[n:]
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
	t := &txn{keys: keys, states: map[string]*keyState{}}
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
	// This handle's waiters let in hear of it now, before the notice
	// comes back through the listening connection.
	for _, in := range t.in {
		d.hub.letIn(in.key, in.owner, in.seq, *in.fence)
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
		var r rules.Row
		var fenceOrTTL int64
		var kind int16
		var lim int32
		var excl bool
		var capOrMaxHold int64
		if err := rows.Scan(&key, &place, &r.Owner, &fenceOrTTL, &r.ExpiresUS, &kind, &lim, &excl, &r.Seq, &capOrMaxHold); err != nil {
			return err
		}
		s := t.states[key]
		if s == nil {
			s = &keyState{}
			t.states[key] = s
		}
		if r.ExpiresUS <= t.nowUS {
			s.stale = true
			continue
		}
		r.Claim = rules.ClaimOf(int64(kind), int64(lim), excl)
		if place {
			r.TTLUS, r.MaxHoldUS = fenceOrTTL, capOrMaxHold
			s.Places = append(s.Places, r)
		} else {
			r.Fence = uint64(fenceOrTTL) // its cap (capOrMaxHold) stays in the row
			s.Grants = append(s.Grants, r)
		}
	}
	for _, s := range t.states {
		s.Sort()
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
