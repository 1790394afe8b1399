package driverstest

import (
	"slices"

	"github.com/zerotal/lock/drivers"
)

// Branch is one legal course of a step whose answer hangs on timing: what
// the step answered in it, and the model after it.
type Branch struct {
	Outcome Outcome
	Model   *Model
}

// RaceCancel is step racing the end of owner's wait (its ctx's deadline,
// a cancel): both orders are legal, and a backend may take either. With
// the wait ended first its places are gone before step; with step first
// the wait may have been granted by it, and then it returns its grant
// (the Done is in the Outcome) instead of its ctx's error. A grant made in
// the instant the wait ended and never reported is not a third course:
// the driver releases it (the contract, without OwnerReused), which ends
// as the first. One Branch when both orders end alike.
func (m *Model) RaceCancel(owner string, step func(*Model) Outcome) []Branch {
	first := m.Clone()
	out := first.Cancel(owner)
	o := step(first)
	o.Done = append(out.Done, o.Done...)
	branches := []Branch{{Outcome: o, Model: first}}

	second := m.Clone()
	o = step(second)
	if second.Waiting(owner) {
		o.Done = append(o.Done, second.Cancel(owner).Done...)
	}
	if !sameCourse(branches[0], Branch{Outcome: o, Model: second}) {
		branches = append(branches, Branch{Outcome: o, Model: second})
	}
	return branches
}

// sameCourse reports whether two branches answered alike and left the
// same holders and queues.
func sameCourse(a, b Branch) bool {
	if len(a.Outcome.Done) != len(b.Outcome.Done) || !slices.Equal(a.Model.Keys(), b.Model.Keys()) {
		return false
	}
	for i, d := range a.Outcome.Done {
		if d.Owner != b.Outcome.Done[i].Owner || !slices.Equal(d.Fences, b.Outcome.Done[i].Fences) {
			return false
		}
	}
	for _, k := range a.Model.Keys() {
		x, _ := a.Model.Holding(k)
		y, _ := b.Model.Holding(k)
		if !sameHolding(x, y) {
			return false
		}
	}
	return true
}

// sameHolding compares two descriptions of a key by owners, sides,
// fences, claim and queue, not by time left.
func sameHolding(x, y drivers.Holding) bool {
	if x.Claim != y.Claim || len(x.Holders) != len(y.Holders) || !slices.Equal(x.Waiters, y.Waiters) {
		return false
	}
	for i, h := range x.Holders {
		g := y.Holders[i]
		if h.Owner != g.Owner || h.Fence != g.Fence || h.Write != g.Write {
			return false
		}
	}
	return true
}
