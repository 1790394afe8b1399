package engine

import (
	"fmt"

	"github.com/zerotal/lock/drivers"
)

// Claims: one admission rule for every kind.
//
//   - FIFO: an acquire is granted at once only when nobody waits and it
//     fits; otherwise it queues (or is refused without wait). The head of
//     the queue is served first, and nobody behind it is granted while it
//     waits, even one that would fit: a waiting writer stops new readers,
//     and no waiter is ever overtaken by a later one.
//   - fits: anything fits a name nobody holds; beside others, only a
//     grant that is not exclusive, while no exclusive one holds and fewer
//     than the name's slots are taken. A mutex has one slot, a semaphore
//     Limit, a read/write lock the table's holder cap (Config.
//     MaxHoldersPerKey) for its readers; a write is exclusive. A reader
//     beyond the cap meets a busy key, as at a full semaphore.
//   - a semaphore's Limit is at most the holder cap (above it: ErrInvalid),
//     and every grant, and every waiter of a name that can have several
//     holders, counts towards MaxKeys: what the table holds stays bounded
//     by MaxKeys and MaxWaitersPerKey whatever its kinds.
//   - every grant gets its own fence, strictly increasing per table; a
//     refresh by a holder keeps its fence; one owner holds one grant of a
//     name (asking for the other side of a read/write lock while holding
//     one is refused: release first).
//   - when a grant ends (release, expiry, force release) or a waiter
//     leaves, the waiters from the head are let in while they fit.
//   - a holder past its deadline is ended whenever its name is acquired,
//     as a live expiry would: the expired are never counted as holders.

// checkClaim reports a claim that cannot be served.
func checkClaim(c Claim) error {
	if c == (Claim{}) {
		return nil // a mutex
	}
	return c.CheckShared()
}

// checkLimit refuses a semaphore whose limit is above the table's cap.
func (t *table) checkLimit(c Claim) error {
	if c.Kind == Semaphore && c.Limit > uint32(t.maxHolders) {
		return invalid("claim", fmt.Sprintf("a semaphore of %d is above this table's cap of %d holders per key", c.Limit, t.maxHolders))
	}
	return nil
}

// claim is what e is held as: its kind and limit.
func (e *entry) claim() Claim {
	if e.queue == nil {
		return Claim{}
	}
	return Claim{Kind: e.queue.kind, Limit: e.queue.limit}
}

func (t *table) errFull() error {
	return fmt.Errorf("engine: key limit %d reached: %w", t.maxKeys, drivers.ErrFull)
}

// kindMismatch is the error for claim c on e, a name of another kind or
// limit.
func kindMismatch(e *entry, c Claim) error {
	return drivers.KindMismatch(e.key, e.claim().Describe(), c)
}

func side(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

// slots is how many grants e can have side by side.
func (t *table) slots(e *entry) int {
	switch e.claim().Kind {
	case Semaphore:
		return int(e.queue.limit)
	case RWLock:
		return t.maxHolders
	}
	return 1
}

// fits reports whether a grant, exclusive (write) or not, may join e's
// holders: the one admission rule.
func (t *table) fits(e *entry, write bool) bool {
	n := e.holders()
	return n == 0 || (!write && n < t.slots(e) && !e.queue.writer)
}

// blocker is the grant a refused acquire is told of (see
// drivers.Claim.InTheWay): the holder whose deadline comes first (the
// lowest fence among equals), or with last the one whose deadline comes
// last (the highest fence among equals). Only the first is kept at hand;
// the last costs a look at every holder, which only a refused write pays
// (at most drivers.MaxHolders, who are all readers).
func (e *entry) blocker(last bool) Grant {
	h := &e.first
	for i := 1; last && i < e.holders(); i++ {
		if x := e.holder(i); x.deadline > h.deadline || x.deadline == h.deadline && x.fence > h.fence {
			h = x
		}
	}
	return h.grant(e.key)
}
