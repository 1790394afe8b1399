package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// The statements of a lock cycle. Each one is atomic: run alone it is its
// own write transaction, for which SQLite takes the write lock before it
// reads; run with other calls of the handle it is one statement of a
// BEGIN IMMEDIATE transaction (see runOnce).
const (
	// acquireSQL inserts the row, or takes over a row whose deadline has
	// passed, or refreshes a row owner holds (keeping its fence). The
	// excluded.fence is last_fence+1; the triggers store it back into
	// last_fence in the same statement. No row comes back when another
	// owner holds the key.
	acquireSQL = `INSERT INTO zerotal_locks (key, owner, fence, expires_us)
VALUES (?1, ?2, (SELECT value + 1 FROM zerotal_lock_meta WHERE name = 'last_fence'), ?3)
ON CONFLICT (key) DO UPDATE SET
	fence = CASE WHEN owner = excluded.owner AND expires_us > ?4 THEN fence ELSE excluded.fence END,
	owner = excluded.owner,
	expires_us = excluded.expires_us
WHERE owner = excluded.owner OR expires_us <= ?4
RETURNING fence`

	releaseSQL = `DELETE FROM zerotal_locks WHERE key = ?1 AND owner = ?2 RETURNING expires_us`
	forceSQL   = `DELETE FROM zerotal_locks WHERE key = ?1`
	extendSQL  = `UPDATE zerotal_locks SET expires_us = ?3 WHERE key = ?1 AND owner = ?2 AND expires_us > ?4`
	sweepSQL   = `DELETE FROM zerotal_locks WHERE expires_us <= ?1`

	existsSQL = `SELECT EXISTS (SELECT 1 FROM zerotal_locks WHERE key = ?1 AND expires_us > ?2)
OR EXISTS (SELECT 1 FROM zerotal_shared_holders WHERE key = ?1 AND expires_us > ?2)`
	holderSQL = `SELECT owner, expires_us FROM zerotal_locks WHERE key = ?1`

	dataVersionSQL = `PRAGMA data_version`
)

// writeStmts are prepared once on the write connection.
type writeStmts struct {
	acquire, release, force, extend, sweep *sql.Stmt
}

// readStmts are prepared on the reader pool (on the write connection in
// memory mode).
type readStmts struct {
	exists, holder *sql.Stmt
	db             querier // where other reads go
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
		&d.w.force:   forceSQL,
		&d.w.extend:  extendSQL,
		&d.w.sweep:   sweepSQL,
	})
	if err != nil || !d.memory {
		return err
	}
	d.rsc = stmtCache{p: d.wconn, raw: d.wconn}
	d.r.db = stmtQuerier{&d.rsc}
	return prepareAll(ctx, d.wconn, map[**sql.Stmt]string{
		&d.r.exists: existsSQL,
		&d.r.holder: holderSQL,
	})
}

func (d *Driver) prepareReads(ctx context.Context) error {
	d.rsc = stmtCache{p: d.rdb, raw: d.rdb}
	d.r.db = stmtQuerier{&d.rsc}
	return prepareAll(ctx, d.rdb, map[**sql.Stmt]string{
		&d.r.exists: existsSQL,
		&d.r.holder: holderSQL,
	})
}

// holder is who holds a key according to one read.
type holder struct {
	owner     string
	expiresUS int64 // 0: no row
}

func (h holder) heldAt(nowUS int64) bool { return h.expiresUS > nowUS }

func (d *Driver) holder(ctx context.Context, key string) (holder, error) {
	var h holder
	err := d.read(ctx, "read holder", func(ctx context.Context, r *readStmts) error {
		err := r.holder.QueryRowContext(ctx, key).Scan(&h.owner, &h.expiresUS)
		if errors.Is(err, sql.ErrNoRows) {
			h = holder{}
			return nil
		}
		return err
	})
	return h, err
}
