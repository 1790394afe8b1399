// Package rules is the waiting rules of the backends that keep a key's
// grants and places as rows of a database (SQLite, PostgreSQL), over one
// row type, as driverstest.Model states them: which claim a key is held
// as, who may join its grants, how many of its queue are let in, who is
// in a refused acquire's way, when it may change unseen, and the cap on
// a grant's total hold time. A driver reads and writes its rows its own
// way; the decisions over them are these, once.
package rules

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/zerotal/lock/drivers"
)

// PlaceLease is how long a place in a queue, or a key a set's wait has
// taken, outlives the waiter's last visit: the place of a process that
// died lapses after it, and the queue moves on.
const PlaceLease = 3 * time.Second

// Row is one live grant or place of a key, as read.
type Row struct {
	Owner     string
	Fence     uint64 // a grant's; 0 for a place
	ExpiresUS int64  // a grant's deadline, or a place's lease
	Claim     drivers.Claim
	TTLUS     int64 // a place's TTL, given to its grant
	MaxHoldUS int64 // a place's MaxHold, its grant's cap from then; 0: none
	Seq       int64 // a place's order
}

// LetIn is the grant place p becomes when it is let in at nowUS: its own
// TTL from then, never past its cap, which counts from then too.
func (p Row) LetIn(nowUS int64) (Row, Cap) {
	c := CapAt(nowUS, p.MaxHoldUS)
	p.ExpiresUS = c.Bound(nowUS + p.TTLUS)
	return p, c
}

// State is a key's live grants, by fence, and places, in order.
type State struct {
	Grants, Places []Row
}

// Sort puts the grants in order of fence and the places in order of
// arrival, as the rules read them.
func (s *State) Sort() {
	slices.SortFunc(s.Grants, func(a, b Row) int { return cmp.Compare(a.Fence, b.Fence) })
	slices.SortFunc(s.Places, func(a, b Row) int { return cmp.Compare(a.Seq, b.Seq) })
}

// Exclusive reports a claim that holds its key alone: a mutex or a write.
func Exclusive(c drivers.Claim) bool { return c.Kind == drivers.Mutex || c.Write }

// ClaimOf is the claim of a row's columns: kind, limit, exclusive.
func ClaimOf(kind, lim int64, excl bool) drivers.Claim {
	c := drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}
	c.Write = excl && c.Kind == drivers.RWLock
	return c
}

// Claim is what the key is held or waited for as; ok is false when
// nobody does.
func (s State) Claim() (c drivers.Claim, ok bool) {
	for _, r := range append(s.Grants, s.Places...) {
		return drivers.Claim{Kind: r.Claim.Kind, Limit: r.Claim.Limit}, true
	}
	return drivers.Claim{}, false
}

// Find is the index of owner's row in rs, -1 when it has none.
func Find(rs []Row, owner string) int {
	for i, r := range rs {
		if r.Owner == owner {
			return i
		}
	}
	return -1
}

// Refusal is the error an acquire of key with c meets in s, if any: the
// key held or waited for as another kind or limit, or owner holding the
// other side of a read/write lock.
func (s State) Refusal(key, owner string, c drivers.Claim) error {
	if held, ok := s.Claim(); ok && (held.Kind != c.Kind || held.Limit != c.Limit) {
		return drivers.KindMismatch(key, held.Describe(), c)
	}
	if i := Find(s.Grants, owner); i >= 0 && s.Grants[i].Claim.Write != c.Write {
		return &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner holds the other side of %q; release it first", key)}
	}
	if i := Find(s.Places, owner); i >= 0 && s.Places[i].Claim.Write != c.Write {
		return &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner already waits for the other side of %q", key)}
	}
	return nil
}

// Fits reports whether a grant of c may join grants.
func Fits(grants []Row, c drivers.Claim) bool {
	n := len(grants)
	switch {
	case c.Kind == drivers.Semaphore:
		return uint32(n) < c.Limit
	case Exclusive(c):
		return n == 0
	}
	// A reader beyond drivers.MaxHolders meets a busy key, as on every
	// backend.
	return n == 0 || !grants[0].Claim.Write && n < drivers.MaxHolders
}

// Admitted is how many places, from the head of the queue, are let in
// now: while they fit (a waiting writer stops the readers behind it).
func (s State) Admitted() int {
	grants := s.Grants
	for i, p := range s.Places {
		if !Fits(grants, p.Claim) {
			return i
		}
		grants = append(grants[:len(grants):len(grants)], p)
	}
	return len(s.Places)
}

// Look is what a waiter finds of owner in s without writing: its grant's
// fence (held), or else whether a step would change anything (act): its
// place is gone, or it is let in once someone writes.
func (s State) Look(owner string) (fence uint64, held, act bool) {
	if g := Find(s.Grants, owner); g >= 0 {
		return s.Grants[g].Fence, true, false
	}
	p := Find(s.Places, owner)
	return 0, false, p < 0 || p < s.Admitted()
}

// InTheWay is what a refused acquire of c is told at nowUS of the holder
// in the way (drivers.Claim.InTheWay): the grant that ends first, or for
// a write the one that ends last; ties go to the lower fence, or for a
// write the higher.
func (s State) InTheWay(c drivers.Claim, nowUS int64) drivers.HeldBy {
	if len(s.Grants) == 0 {
		return drivers.HeldBy{}
	}
	last := c.InTheWay()
	w := s.Grants[0]
	for _, h := range s.Grants[1:] {
		later := h.ExpiresUS > w.ExpiresUS || h.ExpiresUS == w.ExpiresUS && h.Fence > w.Fence
		if later == last {
			w = h
		}
	}
	return drivers.HeldBy{Holder: drivers.HolderOf(w.Owner), TTL: untilUS(w.ExpiresUS, nowUS)}
}

// NextChange is the earliest deadline or lease in s, other than owner's:
// when a look at the key may find it changed although nobody wrote.
func (s State) NextChange(owner string) int64 {
	var at int64
	for _, r := range append(s.Grants, s.Places...) {
		if r.Owner != owner && (at == 0 || r.ExpiresUS < at) {
			at = r.ExpiresUS
		}
	}
	return at
}

// Holding is s as a drivers.Inspector describes it at nowUS; ok is false
// when nobody holds the key.
func (s State) Holding(nowUS int64) (h drivers.Holding, ok bool) {
	h.Claim, _ = s.Claim()
	for _, g := range s.Grants {
		h.Holders = append(h.Holders, drivers.Holder{Owner: g.Owner, Fence: g.Fence, Remaining: time.Duration(g.ExpiresUS-nowUS) * time.Microsecond, Write: g.Claim.Write})
	}
	for _, p := range s.Places {
		h.Waiters = append(h.Waiters, drivers.Waiting{Owner: p.Owner, Write: p.Claim.Write})
	}
	h.WaiterCount = len(h.Waiters)
	return h, len(s.Grants) > 0
}

// untilUS is how long from nowUS until atUS, never less than zero.
func untilUS(atUS, nowUS int64) time.Duration {
	return max(time.Duration(atUS-nowUS)*time.Microsecond, 0)
}
