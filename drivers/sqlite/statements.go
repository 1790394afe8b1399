package sqlite

import (
	"context"
	"database/sql"
)

// The statements of a lock cycle. Each one is atomic: run alone it is its
// own write transaction, for which SQLite takes the write lock before it
// reads; run with other calls of the handle it is one statement of a
// BEGIN IMMEDIATE transaction (see runOnce).
//
// Their parameters, where they have them: ?1 key, ?2 owner, ?3 the new
// deadline, ?4 now (both Unix microseconds), ?5 kind, ?6 limit, ?7
// exclusive, ?8 how many may hold the key at once (see claimArgs).
//
// A grant's cap on total hold time (cap_us, NULL for none) is written by
// the statement that makes the grant, and every statement that moves a
// deadline after keeps it at most the cap (capOrNone), so no refresh
// outlasts it; at the cap the grant has lapsed like any other.
const (
	// acquireSQL is the whole of an acquire that needs nobody's turn: it
	// refreshes owner's live grant of the same claim (same fence), or
	// grants the key when nobody waits for it, no live grant is of
	// another kind or limit, and the claim fits beside the others' grants;
	// the fence is last_fence+1, which the triggers store back in the same
	// statement. A grant of owner's that has lapsed is replaced, with a new
	// fence and cap (?9). A refresh keeps the grant's cap. No row comes back
	// otherwise (busy, queued, or a refusal that a read then names).
	acquireSQL = `INSERT INTO zerotal_locks (key, owner, fence, expires_us, kind, lim, excl, cap_us)
SELECT ?1, ?2, (SELECT value + 1 FROM zerotal_lock_meta WHERE name = 'last_fence'), ?3, ?5, ?6, ?7, ?9
WHERE EXISTS (SELECT 1 FROM zerotal_locks WHERE key = ?1 AND owner = ?2 AND expires_us > ?4 AND kind = ?5 AND lim = ?6 AND excl = ?7)
OR (NOT EXISTS (SELECT 1 FROM zerotal_queue WHERE key = ?1 AND alive_us > ?4)
	AND NOT EXISTS (SELECT 1 FROM zerotal_locks WHERE key = ?1 AND expires_us > ?4
		AND (kind <> ?5 OR lim <> ?6 OR owner <> ?2 AND (excl OR ?7)))
	AND (?7 OR (SELECT count(*) FROM zerotal_locks WHERE key = ?1 AND owner <> ?2 AND expires_us > ?4) < ?8))
ON CONFLICT (key, owner) DO UPDATE SET
	fence = CASE WHEN expires_us > ?4 THEN fence ELSE excluded.fence END,
	expires_us = CASE WHEN expires_us > ?4 THEN min(excluded.expires_us, ` + capOrNone + `) ELSE excluded.expires_us END,
	cap_us = CASE WHEN expires_us > ?4 THEN cap_us ELSE excluded.cap_us END,
	kind = excluded.kind, lim = excluded.lim, excl = excluded.excl
WHERE expires_us <= ?4 OR excl = excluded.excl
RETURNING fence`

	// releaseSQL also says the key's kind and limit, and whether anyone
	// waits for it, who may now be let in.
	releaseSQL = `DELETE FROM zerotal_locks WHERE key = ?1 AND owner = ?2
RETURNING expires_us, kind, lim, EXISTS (SELECT 1 FROM zerotal_queue WHERE key = ?1)`
	forceSQL  = `DELETE FROM zerotal_locks WHERE key = ?1`
	extendSQL = `UPDATE zerotal_locks SET expires_us = min(?3, ` + capOrNone + `) WHERE key = ?1 AND owner = ?2 AND expires_us > ?4`
	sweepSQL  = `DELETE FROM zerotal_locks WHERE expires_us <= ?1`
	sweepQSQL = `DELETE FROM zerotal_queue WHERE alive_us <= ?1`
	existsSQL = `SELECT EXISTS (SELECT 1 FROM zerotal_locks WHERE key = ?1 AND expires_us > ?2)`

	// stateSQL reads the state of the keys from ?1 to ?2 as the waiting
	// rules see it (state.go) at ?3: their live grants (place 0) and live
	// places (place 1, with their order and MaxHold), in one statement;
	// readStates sorts them.
	stateSQL = `SELECT key, 0, owner, fence, expires_us, kind, lim, excl, 0, NULL FROM zerotal_locks
WHERE key >= ?1 AND key <= ?2 AND expires_us > ?3
UNION ALL SELECT key, 1, owner, ttl_us, alive_us, kind, lim, excl, seq, max_hold_us FROM zerotal_queue
WHERE key >= ?1 AND key <= ?2 AND alive_us > ?3`

	// headSQL reads what the waiting rules need of key ?1 for owner ?2 at
	// ?3 (readHead): its live grants, the head of its queue (the first ?4
	// live places, in order: as many as the key's kind lets hold it at
	// once, so that no place behind them can be let in now), and owner's
	// own place. A hot key's long queue is not read at every hand-off.
	headSQL = `SELECT 0, owner, fence, expires_us, kind, lim, excl, 0, NULL FROM zerotal_locks
WHERE key = ?1 AND expires_us > ?3
UNION ALL SELECT * FROM (SELECT 1, owner, ttl_us, alive_us, kind, lim, excl, seq, max_hold_us FROM zerotal_queue
	WHERE key = ?1 AND alive_us > ?3 ORDER BY seq LIMIT ?4)
UNION ALL SELECT 1, owner, ttl_us, alive_us, kind, lim, excl, seq, max_hold_us FROM zerotal_queue
WHERE key = ?1 AND owner = ?2 AND alive_us > ?3`

	// The writes of a step (acquire.go) and of admission. What has lapsed
	// counts for nothing, and the sweep deletes it.
	// grantSQL's ?7 is the grant's cap.
	grantSQL = `INSERT INTO zerotal_locks (key, owner, fence, expires_us, kind, lim, excl, cap_us)
VALUES (?1, ?2, (SELECT value + 1 FROM zerotal_lock_meta WHERE name = 'last_fence'), ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (key, owner) DO UPDATE SET fence = excluded.fence, expires_us = excluded.expires_us,
	kind = excluded.kind, lim = excluded.lim, excl = excluded.excl, cap_us = excluded.cap_us
RETURNING fence`
	// enqueueSQL queues owner's place at the end of key's queue, or keeps
	// its live place alive (a lapsed one goes to the end, as new); ?9 is
	// the request's MaxHold.
	enqueueSQL = `INSERT INTO zerotal_queue (key, owner, seq, kind, lim, excl, alive_us, ttl_us, max_hold_us)
VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM zerotal_queue WHERE key = ?1), ?3, ?4, ?5, ?6, ?7, ?9)
ON CONFLICT (key, owner) DO UPDATE SET alive_us = excluded.alive_us,
	seq = CASE WHEN alive_us > ?8 THEN seq ELSE excluded.seq END,
	kind = excluded.kind, lim = excluded.lim, excl = excluded.excl, ttl_us = excluded.ttl_us,
	max_hold_us = excluded.max_hold_us`
	// queueSQL is the whole of a step that only queues (queueBehind):
	// owner's place at the end of key's queue, or its live place kept
	// alive, when the key has another live place, owner holds no grant of
	// it and no live row of it is of another kind or limit, nor owner's
	// place of the other side. Nothing is written otherwise, and the caller
	// steps. ?3 is the place's lease, ?8 its TTL, ?9 its MaxHold.
	queueSQL = `INSERT INTO zerotal_queue (key, owner, seq, kind, lim, excl, alive_us, ttl_us, max_hold_us)
SELECT ?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM zerotal_queue WHERE key = ?1), ?5, ?6, ?7, ?3, ?8, ?9
WHERE EXISTS (SELECT 1 FROM zerotal_queue WHERE key = ?1 AND owner <> ?2 AND alive_us > ?4)
AND NOT EXISTS (SELECT 1 FROM zerotal_locks WHERE key = ?1 AND expires_us > ?4 AND (owner = ?2 OR kind <> ?5 OR lim <> ?6))
AND NOT EXISTS (SELECT 1 FROM zerotal_queue WHERE key = ?1 AND alive_us > ?4
	AND (kind <> ?5 OR lim <> ?6 OR owner = ?2 AND excl <> ?7))
ON CONFLICT (key, owner) DO UPDATE SET alive_us = excluded.alive_us,
	seq = CASE WHEN alive_us > ?4 THEN seq ELSE excluded.seq END, ttl_us = excluded.ttl_us,
	max_hold_us = excluded.max_hold_us`
	dequeueSQL = `DELETE FROM zerotal_queue WHERE key = ?1 AND owner = ?2`
	// holdSQL sets the deadline of owner's grant: a completed wait's TTL,
	// or, while a set still waits, at least a place's lease; ?5 is the cap
	// a grant without one starts with (NULL: none), ?3 no later.
	holdSQL = `UPDATE zerotal_locks SET expires_us = min(CASE WHEN ?4 THEN max(expires_us, ?3) ELSE ?3 END, ` + capOrNone + `),
	cap_us = ifnull(cap_us, ?5)
WHERE key = ?1 AND owner = ?2`
	dropSQL = `DELETE FROM zerotal_locks WHERE key = ?1 AND owner = ?2`

	dataVersionSQL = `PRAGMA data_version`

	// capOrNone is a grant's cap, or the largest deadline when it has none.
	capOrNone = `ifnull(cap_us, 9223372036854775807)`
)

// writeStmts are prepared once on the write connection.
type writeStmts struct {
	acquire, release *sql.Stmt
}

// readStmts are prepared on the reader pool (on the write connection in
// memory mode).
type readStmts struct {
	exists *sql.Stmt
	db     querier // where other reads go
}

// querier is what reads go through: the reader pool, a read transaction
// or the write connection.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func prepareAll(ctx context.Context, p preparer, dst map[**sql.Stmt]string) error {
	for stmt, query := range dst {
		s, err := p.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		*stmt = s
	}
	return nil
}

func (d *Driver) prepare(ctx context.Context) error {
	d.wsc = stmtCache{p: d.wconn, raw: d.wconn}
	err := prepareAll(ctx, d.wconn, map[**sql.Stmt]string{
		&d.w.acquire: acquireSQL,
		&d.w.release: releaseSQL,
	})
	if err != nil || !d.memory {
		return err
	}
	d.rsc = stmtCache{p: d.wconn, raw: d.wconn}
	d.r.db = stmtQuerier{&d.rsc}
	return prepareAll(ctx, d.wconn, map[**sql.Stmt]string{&d.r.exists: existsSQL})
}

func (d *Driver) prepareReads(ctx context.Context) error {
	d.rsc = stmtCache{p: d.rdb, raw: d.rdb}
	d.r.db = stmtQuerier{&d.rsc}
	return prepareAll(ctx, d.rdb, map[**sql.Stmt]string{&d.r.exists: existsSQL})
}

// wq runs statements on the write connection, each prepared once.
func (d *Driver) wq() stmtQuerier { return stmtQuerier{&d.wsc} }
