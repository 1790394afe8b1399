package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
)

// One data model for every claim (schema version 4): a key's grants are
// rows of zerotal_locks, one per owner, each with the claim it was made
// for (kind, limit, and whether it is exclusive: a mutex is the exclusive
// claim of one slot, a write the exclusive side of a read/write lock); its
// waiters are places in zerotal_queue, in order of arrival. A row whose
// deadline has passed counts for nothing. This file reads and writes that
// state; the rules over it, as driverstest.Model states them, are package
// rules, for every claim and for sets.

// claimArgs are the statements' ?5..?8 for c: its kind, its limit, whether
// it is exclusive, and how many grants its key may have at once.
func claimArgs(c drivers.Claim) []any {
	most := int64(drivers.MaxHolders)
	switch {
	case rules.Exclusive(c):
		most = 1
	case c.Kind == drivers.Semaphore:
		most = int64(c.Limit)
	}
	return []any{int64(c.Kind), int64(c.Limit), rules.Exclusive(c), most}
}

// readState reads key's live state through q at nowUS.
func readState(ctx context.Context, q querier, key string, nowUS int64) (rules.State, error) {
	m, err := readStates(ctx, q, key, key, nowUS)
	if s := m[key]; s != nil {
		return *s, err
	}
	return rules.State{}, err
}

// readStates reads the live state of the keys from lo to hi (bytewise,
// both included) through q at nowUS.
func readStates(ctx context.Context, q querier, lo, hi string, nowUS int64) (map[string]*rules.State, error) {
	m := map[string]*rules.State{}
	rows, err := q.QueryContext(ctx, stateSQL, lo, hi, nowUS)
	if err != nil {
		return m, err
	}
	for rows.Next() {
		var key string
		var r rules.Row
		var place, fenceOrTTL, kind, lim int64
		var excl bool
		var maxHold sql.NullInt64
		if err := rows.Scan(&key, &place, &r.Owner, &fenceOrTTL, &r.ExpiresUS, &kind, &lim, &excl, &r.Seq, &maxHold); err != nil {
			rows.Close()
			return m, err
		}
		r.Claim, r.MaxHoldUS = rules.ClaimOf(kind, lim, excl), maxHold.Int64
		s := m[key]
		if s == nil {
			s = &rules.State{}
			m[key] = s
		}
		if place == 0 {
			r.Fence = uint64(fenceOrTTL)
			s.Grants = append(s.Grants, r)
		} else {
			r.TTLUS = fenceOrTTL
			s.Places = append(s.Places, r)
		}
	}
	for _, s := range m {
		s.Sort()
	}
	return m, closeRows(rows)
}

// slots is how many may hold a key of c's kind at once, at most: as many
// places at the head of its queue can be let in together.
func slots(c drivers.Claim) int64 {
	switch c.Kind {
	case drivers.Mutex:
		return 1
	case drivers.Semaphore:
		return int64(c.Limit)
	}
	return drivers.MaxHolders
}

// anyKind is slots of a key whose kind is not known.
const anyKind = drivers.MaxHolders

// readHead reads through q at nowUS what the waiting rules need of key
// for owner (headSQL): its live grants, by fence, the first most places
// of its queue (slots of its kind) and owner's place, in order. Every
// rule of this file holds on it as on the whole state; only Inspect and
// List read every place.
func readHead(ctx context.Context, q querier, key, owner string, most, nowUS int64) (rules.State, error) {
	var s rules.State
	rows, err := q.QueryContext(ctx, headSQL, key, owner, nowUS, most)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var r rules.Row
		var place, fenceOrTTL, kind, lim int64
		var excl bool
		var maxHold sql.NullInt64
		if err := rows.Scan(&place, &r.Owner, &fenceOrTTL, &r.ExpiresUS, &kind, &lim, &excl, &r.Seq, &maxHold); err != nil {
			rows.Close()
			return s, err
		}
		r.Claim, r.MaxHoldUS = rules.ClaimOf(kind, lim, excl), maxHold.Int64
		if place == 0 {
			r.Fence = uint64(fenceOrTTL)
			s.Grants = append(s.Grants, r)
		} else if r.TTLUS = fenceOrTTL; rules.Find(s.Places, r.Owner) < 0 { // owner's place may be in the head
			s.Places = append(s.Places, r)
		}
	}
	s.Sort()
	return s, closeRows(rows)
}

// admitTx lets the head of key's queue in while it fits, each waiter for
// its own TTL, its cap (if its request has one) counted from now, inside
// the caller's transaction: a waiter of this handle is
// handed its fence once the transaction commits (see inTx), one of
// another process learns it at its next look, which finds it holds the
// key. It returns the key's state after, as readHead reads it for owner
// and most.
func (d *Driver) admitTx(ctx context.Context, key, owner string, most int64, now time.Time) (rules.State, error) {
	nowUS := now.UnixMicro()
	s, err := readHead(ctx, d.wq(), key, owner, most, nowUS)
	if err != nil {
		return s, err
	}
	n := s.Admitted()
	for _, p := range s.Places[:n] {
		g, ceiling := p.LetIn(nowUS)
		if g.Fence, err = d.grantTx(ctx, key, g.Owner, g.ExpiresUS, g.Claim, ceiling); err != nil {
			return s, err
		}
		if _, err := d.wq().ExecContext(ctx, dequeueSQL, key, g.Owner); err != nil {
			return s, err
		}
		s.Grants = append(s.Grants, g)
		d.admits = append(d.admits, admission{key, g.Owner, g.Fence})
	}
	s.Places = s.Places[n:]
	return s, nil
}

// admission is a grant admitTx made to a waiter, handed to this handle's
// waiter of it, if any, once committed.
type admission struct {
	key, owner string
	fence      uint64
}

// deliverAdmits hands the admissions of the transaction that has just
// committed to this handle's waiters. The caller holds the write
// connection, which guards admits.
func (d *Driver) deliverAdmits() {
	for _, a := range d.admits {
		d.lines.deliver(a.key, a.owner, a.fence)
	}
	d.admits = d.admits[:0]
}

// grantTx writes a new grant of key to owner, with the next fence and
// cap, until expiresUS (no later than the cap).
func (d *Driver) grantTx(ctx context.Context, key, owner string, expiresUS int64, c drivers.Claim, ceiling rules.Cap) (uint64, error) {
	a := claimArgs(c)
	var fence int64
	err := d.wq().QueryRowContext(ctx, grantSQL, key, owner, expiresUS, a[0], a[1], a[2], ceiling.Arg()).Scan(&fence)
	return uint64(fence), err
}

// admitKey runs admitTx for key in a transaction of its own (or the joint
// run's), after a grant or place of it ended. The caller may leave its
// failure to the waiters when the ending has taken effect on its own: the
// next waiter to write admits as well.
func (d *Driver) admitKey(ctx context.Context, key string, most int64) error {
	return d.inTx(ctx, func(ctx context.Context) error {
		_, err := d.admitTx(ctx, key, "", most, time.Now())
		return err
	})
}

// inTx runs fn as one transaction: inside the run's BEGIN IMMEDIATE when
// the call is part of a joint run (see runOnce), in one of its own
// otherwise.
func (d *Driver) inTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if inRun(ctx) {
		return fn(ctx)
	}
	d.admits = d.admits[:0]
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
	d.txs.Add(1)
	d.deliverAdmits()
	return nil
}

// runKey marks the context of a call run inside a joint transaction.
type runKey struct{}

func inRun(ctx context.Context) bool { return ctx.Value(runKey{}) != nil }
