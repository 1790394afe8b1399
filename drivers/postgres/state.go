package postgres

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/zerotal/lock/drivers"
)

// One data model for every claim: a key's grants are rows of
// zerotal_lock.grants, one per owner, each with the claim it was made for
// (a mutex is the exclusive claim of one slot, a write the exclusive side
// of a read/write lock); its waiters are places in zerotal_lock.queue, in
// order of arrival. A row past its deadline counts for nothing. This file
// holds the rules over that state, as driverstest.Model states them.

// waiterLease is how long a place in a queue, or a key a set's wait has
// taken, outlives the waiter's last visit: the place of a process that
// died lapses after it, and the queue moves on.
const waiterLease = 3 * time.Second

// row is one grant or place of a key, as read.
type row struct {
	owner     string
	fence     uint64  // a grant's; 0 for a place
	pending   *uint64 // a grant written in this transaction: its fence once it runs
	expiresUS int64   // a grant's deadline, or a place's lease
	claim     drivers.Claim
	capUS     int64 // a grant's cap on its deadline, 0 for none
	ttlUS     int64 // a place's TTL, given to its grant
	maxHoldUS int64 // a place's MaxHold, its grant's cap from the grant on
	seq       int64 // a place's order
}

// capAt is the cap of a grant made at nowUS for maxHoldUS, 0 for none.
func capAt(nowUS, maxHoldUS int64) int64 {
	if maxHoldUS <= 0 {
		return 0
	}
	return nowUS + maxHoldUS
}

// within is a deadline no later than capUS (0: no cap).
func within(expiresUS, capUS int64) int64 {
	if capUS > 0 {
		return min(expiresUS, capUS)
	}
	return expiresUS
}

// orNull is a cap as a statement's argument: NULL for none.
func orNull(capUS int64) any {
	if capUS <= 0 {
		return nil
	}
	return capUS
}

// keyState is a key's live grants, by fence, and places, in order.
type keyState struct {
	grants, places []row
	stale          bool // rows past their deadline were read: sweep them
}

// exclusive reports a claim that holds its key alone: a mutex or a write.
func exclusive(c drivers.Claim) bool { return c.Kind == drivers.Mutex || c.Write }

// claimArgs are a claim's columns: kind, limit, exclusive.
func claimArgs(c drivers.Claim) (int16, int32, bool) {
	return int16(c.Kind), int32(c.Limit), exclusive(c)
}

// claimOf is the claim of a row's columns.
func claimOf(kind int16, lim int32, excl bool) drivers.Claim {
	c := drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}
	c.Write = excl && c.Kind == drivers.RWLock
	return c
}

func (s *keyState) sort() {
	slices.SortFunc(s.grants, func(a, b row) int { return cmp.Compare(a.fence, b.fence) })
	slices.SortFunc(s.places, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
}

// claim is what the key is held or waited for as; ok is false when
// nobody does.
func (s *keyState) claim() (c drivers.Claim, ok bool) {
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
func (s *keyState) refusal(key, owner string, c drivers.Claim) error {
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
func (s *keyState) admitted() int {
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
// (drivers.Claim.InTheWay) at nowUS: the grant that ends first, or for a
// write the one that ends last; ties go to the lower fence, or for a write
// the higher.
func (s *keyState) inTheWay(c drivers.Claim, nowUS int64) drivers.HeldBy {
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
	return drivers.HeldBy{Holder: drivers.HolderOf(w.owner), TTL: max(time.Duration(w.expiresUS-nowUS)*time.Microsecond, 0)}
}

// nextChange is the earliest deadline or lease in s, other than owner's:
// when a look at the key may find it changed although nobody wrote.
func (s *keyState) nextChange(owner string) int64 {
	var at int64
	for _, r := range append(s.grants, s.places...) {
		if r.owner != owner && (at == 0 || r.expiresUS < at) {
			at = r.expiresUS
		}
	}
	return at
}
