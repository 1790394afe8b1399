package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/zerotal/lock/drivers"
)

// One data model for every claim (schema version 4): a key's grants are
// rows of zerotal_locks, one per owner, each with the claim it was made
// for (kind, limit, and whether it is exclusive: a mutex is the exclusive
// claim of one slot, a write the exclusive side of a read/write lock); its
// waiters are places in zerotal_queue, in order of arrival. A row whose
// deadline has passed counts for nothing. This file holds the rules over
// that state, as driverstest.Model states them, written once for every
// claim and for sets.

// waiterLease is how long a place in a queue, or a key a set's wait has
// taken, outlives the waiter's last visit: the place of a process that
// died lapses after it, and the queue moves on.
const waiterLease = 3 * time.Second

// row is one live grant or place of a key, as read.
type row struct {
	owner     string
	fence     uint64 // a grant's; 0 for a place
	expiresUS int64  // a grant's deadline, or a place's lease
	claim     drivers.Claim
	ttlUS     int64 // a place's TTL, given to its grant
	maxHoldUS int64 // a place's MaxHold, its grant's cap from then; 0: none
	seq       int64 // a place's order
}

// keyState is a key's live grants, by fence, and places, in order.
type keyState struct {
	grants, places []row
}

// exclusive reports a claim that holds its key alone: a mutex or a write.
func exclusive(c drivers.Claim) bool { return c.Kind == drivers.Mutex || c.Write }

// claimArgs are the statements' ?5..?8 for c: its kind, its limit, whether
// it is exclusive, and how many grants its key may have at once.
func claimArgs(c drivers.Claim) []any {
	most := int64(drivers.MaxHolders)
	switch {
	case exclusive(c):
		most = 1
	case c.Kind == drivers.Semaphore:
		most = int64(c.Limit)
	}
	return []any{int64(c.Kind), int64(c.Limit), exclusive(c), most}
}

// claimOf is the claim of a row's columns.
func claimOf(kind, lim int64, excl bool) drivers.Claim {
	c := drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}
	c.Write = excl && c.Kind == drivers.RWLock
	return c
}

// readState reads key's live state through q at nowUS.
func readState(ctx context.Context, q querier, key string, nowUS int64) (keyState, error) {
	m, err := readStates(ctx, q, key, key, nowUS)
	if s := m[key]; s != nil {
		return *s, err
	}
	return keyState{}, err
}

// readStates reads the live state of the keys from lo to hi (bytewise,
// both included) through q at nowUS.
func readStates(ctx context.Context, q querier, lo, hi string, nowUS int64) (map[string]*keyState, error) {
	m := map[string]*keyState{}
	rows, err := q.QueryContext(ctx, stateSQL, lo, hi, nowUS)
	if err != nil {
		return m, err
	}
	for rows.Next() {
		var key string
		var r row
		var place, fenceOrTTL, kind, lim int64
		var excl bool
		var maxHold sql.NullInt64
		if err := rows.Scan(&key, &place, &r.owner, &fenceOrTTL, &r.expiresUS, &kind, &lim, &excl, &r.seq, &maxHold); err != nil {
			rows.Close()
			return m, err
		}
		r.claim, r.maxHoldUS = claimOf(kind, lim, excl), maxHold.Int64
		s := m[key]
		if s == nil {
			s = &keyState{}
			m[key] = s
		}
		if place == 0 {
			r.fence = uint64(fenceOrTTL)
			s.grants = append(s.grants, r)
		} else {
			r.ttlUS = fenceOrTTL
			s.places = append(s.places, r)
		}
	}
	for _, s := range m {
		slices.SortFunc(s.grants, func(a, b row) int { return cmp.Compare(a.fence, b.fence) })
		slices.SortFunc(s.places, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
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
func readHead(ctx context.Context, q querier, key, owner string, most, nowUS int64) (keyState, error) {
	var s keyState
	rows, err := q.QueryContext(ctx, headSQL, key, owner, nowUS, most)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var r row
		var place, fenceOrTTL, kind, lim int64
		var excl bool
		var maxHold sql.NullInt64
		if err := rows.Scan(&place, &r.owner, &fenceOrTTL, &r.expiresUS, &kind, &lim, &excl, &r.seq, &maxHold); err != nil {
			rows.Close()
			return s, err
		}
		r.claim, r.maxHoldUS = claimOf(kind, lim, excl), maxHold.Int64
		if place == 0 {
			r.fence = uint64(fenceOrTTL)
			s.grants = append(s.grants, r)
		} else if r.ttlUS = fenceOrTTL; find(s.places, r.owner) < 0 { // owner's place may be in the head
			s.places = append(s.places, r)
		}
	}
	slices.SortFunc(s.grants, func(a, b row) int { return cmp.Compare(a.fence, b.fence) })
	slices.SortFunc(s.places, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	return s, closeRows(rows)
}

// claim is what the key is held or waited for as; ok is false when
// nobody does.
func (s keyState) claim() (c drivers.Claim, ok bool) {
	for _, r := range append(s.grants, s.places...) {
		return drivers.Claim{Kind: r.claim.Kind, Limit: r.claim.Limit}, true
	}
	return drivers.Claim{}, false
}

func find(rs []row, owner string) int {
	for i, r := range rs {
		if r.owner == owner {
			return i
		}
	}
	return -1
}

// refusal is the error an acquire of key with c meets in s, if any: the
// key held or waited for as another kind or limit, or owner holding the
// other side of a read/write lock.
func (s keyState) refusal(key, owner string, c drivers.Claim) error {
	if held, ok := s.claim(); ok && (held.Kind != c.Kind || held.Limit != c.Limit) {
		return drivers.KindMismatch(key, held.Describe(), c)
	}
	if i := find(s.grants, owner); i >= 0 && s.grants[i].claim.Write != c.Write {
		return &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner holds the other side of %q; release it first", key)}
	}
	if i := find(s.places, owner); i >= 0 && s.places[i].claim.Write != c.Write {
		return &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner already waits for the other side of %q", key)}
	}
	return nil
}

// fits reports whether a grant of c may join grants.
func fits(grants []row, c drivers.Claim) bool {
	n := len(grants)
	switch {
	case c.Kind == drivers.Semaphore:
		return uint32(n) < c.Limit
	case exclusive(c):
		return n == 0
	}
	// A reader beyond drivers.MaxHolders meets a busy key, as on every
	// backend.
	return n == 0 || !grants[0].claim.Write && n < drivers.MaxHolders
}

// admitted is how many places, from the head of the queue, are let in
// now: while they fit (a waiting writer stops the readers behind it).
func (s keyState) admitted() int {
	grants := s.grants
	for i, p := range s.places {
		if !fits(grants, p.claim) {
			return i
		}
		grants = append(grants[:len(grants):len(grants)], p)
	}
	return len(s.places)
}

// inTheWay is what a refused acquire of c is told of the holder in the way
// (drivers.Claim.InTheWay): the grant that ends first, or for a write the
// one that ends last; ties go to the lower fence, or for a write the
// higher.
func (s keyState) inTheWay(c drivers.Claim) drivers.HeldBy {
	if len(s.grants) == 0 {
		return drivers.HeldBy{}
	}
	last := c.InTheWay()
	w := s.grants[0]
	for _, h := range s.grants[1:] {
		later := h.expiresUS > w.expiresUS || h.expiresUS == w.expiresUS && h.fence > w.fence
		if later == last {
			w = h
		}
	}
	return drivers.HeldBy{Holder: drivers.HolderOf(w.owner), TTL: max(time.Until(time.UnixMicro(w.expiresUS)), 0)}
}

// nextChange is the earliest deadline or lease in s, other than owner's:
// when a look at the key may find it changed although nobody wrote.
func (s keyState) nextChange(owner string) int64 {
	var at int64
	for _, r := range append(s.grants, s.places...) {
		if r.owner != owner && (at == 0 || r.expiresUS < at) {
			at = r.expiresUS
		}
	}
	return at
}

// admitTx lets the head of key's queue in while it fits, each waiter for
// its own TTL, its cap (if its request has one) counted from now, inside
// the caller's transaction: a waiter of this handle is
// handed its fence once the transaction commits (see inTx), one of
// another process learns it at its next look, which finds it holds the
// key. It returns the key's state after, as readHead reads it for owner
// and most.
func (d *Driver) admitTx(ctx context.Context, key, owner string, most int64, now time.Time) (keyState, error) {
	nowUS := now.UnixMicro()
	s, err := readHead(ctx, d.wq(), key, owner, most, nowUS)
	if err != nil {
		return s, err
	}
	n := s.admitted()
	for _, p := range s.places[:n] {
		ceiling := capAt(nowUS, p.maxHoldUS)
		p.expiresUS = ceiling.bound(nowUS + p.ttlUS)
		if p.fence, err = d.grantTx(ctx, key, p.owner, p.expiresUS, p.claim, ceiling); err != nil {
			return s, err
		}
		if _, err := d.wq().ExecContext(ctx, dequeueSQL, key, p.owner); err != nil {
			return s, err
		}
		s.grants = append(s.grants, p)
		d.admits = append(d.admits, admission{key, p.owner, p.fence})
	}
	s.places = s.places[n:]
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
func (d *Driver) grantTx(ctx context.Context, key, owner string, expiresUS int64, c drivers.Claim, ceiling capUS) (uint64, error) {
	a := claimArgs(c)
	var fence int64
	err := d.wq().QueryRowContext(ctx, grantSQL, key, owner, expiresUS, a[0], a[1], a[2], ceiling.arg()).Scan(&fence)
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
