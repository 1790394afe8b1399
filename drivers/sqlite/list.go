package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
)

var _ drivers.Lister = (*Driver)(nil)

// ListHeld describes the held keys that start with prefix, sorted, at most
// limit of them (drivers.Lister), read in one read transaction, so the
// list is one moment of the file. The query of the keys walks the primary
// key from prefix on and stops after limit+1 keys.
func (d *Driver) ListHeld(ctx context.Context, prefix string, limit int) ([]drivers.Listed, bool, error) {
	var locks []drivers.Listed
	var truncated bool
	err := d.readTx(ctx, "list", func(ctx context.Context, q querier) error {
		var err error
		locks, truncated, err = listTx(ctx, q, prefix, limit)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return locks, truncated, nil
}

// readTx runs fn in one read transaction: on a connection of the reader
// pool with BEGIN (deferred: in WAL mode it takes no lock and sees the
// file as of its first read), or inside a write run in memory mode.
func (d *Driver) readTx(ctx context.Context, op string, fn func(ctx context.Context, q querier) error) error {
	if d.memory {
		return d.read(ctx, op, func(ctx context.Context, r *readStmts) error { return fn(ctx, r.db) })
	}
	if err := d.enter(ctx, op); err != nil {
		return err
	}
	return d.classify(ctx, op, d.retryBusy(ctx, op, func(ctx context.Context) error {
		conn, err := d.rdb.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
		err = fn(ctx, conn)
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			// A connection left inside a transaction must not go back to
			// the pool, where it would pin this snapshot: drop it.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return err
	}))
}

// keyRange is the SQL condition of the keys that start with a prefix, as a
// range of the primary key (SQLite compares TEXT bytewise): key >= ?1
// and key < ?2, the prefix's successor, when it has one; and the values
// of ?1 and ?2.
func keyRange(prefix string) (cond string, args []any) {
	if end, ok := prefixEnd(prefix); ok {
		return "key >= ?1 AND key < ?2", []any{prefix, end}
	}
	return "key >= ?1", []any{prefix, ""}
}

// prefixEnd is the smallest string above every string that starts with
// prefix: its last byte below 0xff raised by one, what follows dropped.
// ok is false when there is none (an empty prefix, or all 0xff).
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// listTx reads the list through q, which must be one transaction: the
// first limit+1 keys with a live grant, then their grants and places.
func listTx(ctx context.Context, q querier, prefix string, limit int) ([]drivers.Listed, bool, error) {
	nowUS := time.Now().UnixMicro()
	cond, args := keyRange(prefix)
	args = append(args, nowUS, limit+1) // ?3, ?4
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT key FROM zerotal_locks
		WHERE `+cond+` AND expires_us > ?3 ORDER BY key LIMIT ?4`, args...)
	if err != nil {
		return nil, false, err
	}
	var locks []drivers.Listed
	for rows.Next() {
		var l drivers.Listed
		if err := rows.Scan(&l.Key); err != nil {
			rows.Close()
			return nil, false, err
		}
		locks = append(locks, l)
	}
	if err := closeRows(rows); err != nil {
		return nil, false, err
	}
	truncated := len(locks) > limit
	if truncated {
		locks = locks[:limit]
	}
	if len(locks) == 0 {
		return nil, false, nil
	}
	states, err := readStates(ctx, q, locks[0].Key, locks[len(locks)-1].Key, nowUS)
	if err != nil {
		return nil, false, err
	}
	for i := range locks {
		if s := states[locks[i].Key]; s != nil { // always, in one transaction
			locks[i].Holding, _ = s.Holding(time.Now().UnixMicro())
		}
	}
	return locks, truncated, nil
}

// Inspect describes key (drivers.Inspector): its claim, its grants by
// fence and its waiters in order; ok is false when nobody holds it.
func (d *Driver) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	var s rules.State
	err := d.read(ctx, "inspect", func(ctx context.Context, r *readStmts) (err error) {
		s, err = readState(ctx, r.db, key, time.Now().UnixMicro())
		return err
	})
	if err != nil {
		return drivers.Holding{}, false, err
	}
	h, ok := s.Holding(time.Now().UnixMicro())
	return h, ok, nil
}

// closeRows closes rows and returns the error that ended them, if any.
func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}
