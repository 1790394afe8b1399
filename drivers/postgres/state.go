package postgres

import (
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
)

// One data model for every claim: a key's grants are rows of
// zerotal_lock.grants, one per owner, each with the claim it was made for
// (a mutex is the exclusive claim of one slot, a write the exclusive side
// of a read/write lock); its waiters are places in zerotal_lock.queue, in
// order of arrival. A row past its deadline counts for nothing. The rules
// over that state, as driverstest.Model states them, are package rules;
// this driver reads the rows under their keys' locks and writes in the
// same transaction (tx.go).

// keyState is a key's live grants and places, and whether rows past
// their deadline were read beside them: then the transaction sweeps them.
type keyState struct {
	rules.State
	stale bool
}

// claimArgs are a claim's columns: kind, limit, exclusive.
func claimArgs(c drivers.Claim) (int16, int32, bool) {
	return int16(c.Kind), int32(c.Limit), rules.Exclusive(c)
}
