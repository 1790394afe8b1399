package postgres

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers"
)

var _ drivers.Lister = (*Driver)(nil)

// listSQL reads, like stateSQL, every row of the first $2 names under the
// prefix $1 with a live grant, bytewise in order.
const listSQL = `WITH ks AS (SELECT DISTINCT key COLLATE "C" AS k FROM zerotal_lock.Grants
	WHERE starts_with(key, $1::text) AND expires_us > zerotal_lock.now_us() ORDER BY 1 LIMIT $2::integer)
SELECT key, false, owner, fence, expires_us, kind, lim, excl, 0::bigint, coalesce(cap_us, 0) FROM zerotal_lock.Grants WHERE key IN (SELECT k FROM ks)
UNION ALL SELECT key, true, owner, ttl_us, alive_us, kind, lim, excl, seq, max_hold_us FROM zerotal_lock.queue WHERE key IN (SELECT k FROM ks)`

// Inspect describes key: its claim, its live grants by fence and its
// queue in order, read at one moment. ok is false when nobody holds it.
func (d *Driver) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	t, err := d.read(ctx, "inspect", []string{key})
	if err != nil {
		return drivers.Holding{}, false, err
	}
	return holding(t.state(key), t.nowUS)
}

// ListHeld lists the held names under prefix, bytewise in order, each as
// Inspect describes it, read in one statement.
func (d *Driver) ListHeld(ctx context.Context, prefix string, limit int) ([]drivers.Listed, bool, error) {
	if err := d.enter(ctx, "list"); err != nil {
		return nil, false, err
	}
	t := &txn{states: map[string]*keyState{}}
	var b pgx.Batch
	b.Queue(nowSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&t.nowUS) })
	b.Queue(listSQL, prefix, int32(limit+1)).Query(func(rows pgx.Rows) error { return scanState(rows, t) })
	if err := d.pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, false, d.failed(ctx, "list", err, false)
	}
	var locks []drivers.Listed
	for k, s := range t.states {
		if h, ok, _ := holding(s, t.nowUS); ok {
			locks = append(locks, drivers.Listed{Key: k, Holding: h})
		}
	}
	slices.SortFunc(locks, func(a, b drivers.Listed) int { return strings.Compare(a.Key, b.Key) })
	if len(locks) > limit {
		return locks[:limit], true, nil
	}
	return locks, false, nil
}

// holding is what Inspect says of s at nowUS: nothing when nobody holds
// the key.
func holding(s *keyState, nowUS int64) (drivers.Holding, bool, error) {
	if h, ok := s.Holding(nowUS); ok {
		return h, true, nil
	}
	return drivers.Holding{}, false, nil
}
