package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"slices"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

var _ drivers.Lister = (*Driver)(nil)

// ListHeld describes the held keys that start with prefix, sorted, at most
// limit of them (drivers.Lister): the mutexes of zerotal_locks and the
// shared keys of zerotal_shared_names with a live grant, read in one
// read transaction, so the list is one moment of the file. Each query
// walks the primary key from prefix on and stops after limit+1 keys.
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

// listTx reads the list through q, which must be one transaction.
func listTx(ctx context.Context, q querier, prefix string, limit int) ([]drivers.Listed, bool, error) {
	now := time.Now()
	nowUS := now.UnixMicro()
	cond, args := keyRange(prefix)
	args = append(args, nowUS, limit+1) // ?3, ?4
	remaining := func(exp int64) time.Duration { return time.UnixMicro(exp).Sub(now) }

	// The mutexes with a live grant, and the shared keys with a live
	// grant: limit+1 of each, so that the first limit+1 of both are known.
	var mutexes []drivers.Listed
	rows, err := q.QueryContext(ctx, `SELECT key, owner, fence, expires_us FROM zerotal_locks
		WHERE `+cond+` AND expires_us > ?3 ORDER BY key LIMIT ?4`, args...)
	if err != nil {
		return nil, false, err
	}
	for rows.Next() {
		var l drivers.Listed
		var h drivers.Holder
		var fence, exp int64
		if err := rows.Scan(&l.Key, &h.Owner, &fence, &exp); err != nil {
			rows.Close()
			return nil, false, err
		}
		h.Fence, h.Remaining = uint64(fence), remaining(exp)
		l.Holders = []drivers.Holder{h}
		mutexes = append(mutexes, l)
	}
	if err := closeRows(rows); err != nil {
		return nil, false, err
	}
	var shared []drivers.Listed
	rows, err = q.QueryContext(ctx, `SELECT n.key, n.kind, n.lim FROM zerotal_shared_names n
		WHERE `+strings.ReplaceAll(cond, "key", "n.key")+` AND EXISTS (SELECT 1 FROM zerotal_shared_holders h
			WHERE h.key = n.key AND h.expires_us > ?3)
		ORDER BY n.key LIMIT ?4`, args...)
	if err != nil {
		return nil, false, err
	}
	for rows.Next() {
		var l drivers.Listed
		var kind, lim int64
		if err := rows.Scan(&l.Key, &kind, &lim); err != nil {
			rows.Close()
			return nil, false, err
		}
		l.Claim = drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}
		shared = append(shared, l)
	}
	if err := closeRows(rows); err != nil {
		return nil, false, err
	}

	// A key is a mutex or shared, never both while held (the trigger and
	// the shared acquire see to it): merge, and keep limit.
	locks := append(mutexes, shared...)
	slices.SortFunc(locks, func(a, b drivers.Listed) int { return strings.Compare(a.Key, b.Key) })
	truncated := len(locks) > limit
	if truncated {
		locks = locks[:limit]
	}
	if err := fillShared(ctx, q, locks, prefix, nowUS, remaining); err != nil {
		return nil, false, err
	}
	return locks, truncated, nil
}

// fillShared reads the holders and queues of the shared keys of locks:
// one query each over the range from prefix to the last shared key kept,
// where every shared key with a live grant is one of them.
func fillShared(ctx context.Context, q querier, locks []drivers.Listed, prefix string, nowUS int64, remaining func(int64) time.Duration) error {
	at := map[string]*drivers.Listed{}
	last := ""
	for i := range locks {
		if l := &locks[i]; l.Claim.Kind != drivers.Mutex {
			at[l.Key], last = l, l.Key
		}
	}
	if len(at) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT key, owner, fence, expires_us, write FROM zerotal_shared_holders
		WHERE key >= ?1 AND key <= ?2 AND expires_us > ?3 ORDER BY key, fence`, prefix, last, nowUS)
	if err != nil {
		return err
	}
	for rows.Next() {
		var key string
		var h drivers.Holder
		var fence, exp int64
		if err := rows.Scan(&key, &h.Owner, &fence, &exp, &h.Write); err != nil {
			rows.Close()
			return err
		}
		if l := at[key]; l != nil {
			h.Fence, h.Remaining = uint64(fence), remaining(exp)
			l.Holders = append(l.Holders, h)
		}
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	rows, err = q.QueryContext(ctx, `SELECT key, owner, write FROM zerotal_shared_queue
		WHERE key >= ?1 AND key <= ?2 AND alive_us > ?3 ORDER BY key, seq`, prefix, last, nowUS)
	if err != nil {
		return err
	}
	for rows.Next() {
		var key string
		var w drivers.Waiting
		if err := rows.Scan(&key, &w.Owner, &w.Write); err != nil {
			rows.Close()
			return err
		}
		if l := at[key]; l != nil {
			l.Waiters = append(l.Waiters, w)
			l.WaiterCount++
		}
	}
	return closeRows(rows)
}

// closeRows closes rows and returns the error that ended them, if any.
func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}
