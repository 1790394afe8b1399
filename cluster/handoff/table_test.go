package handoff

import (
	"slices"

	"github.com/zerotal/lock/engine"
)

// modelTable is the lock table the model test's "raft" applies to: one
// holder, a FIFO queue, a fence per grant, no expiry (TTLs are an hour,
// the schedules last minutes). The real engine keeps its reply channels in
// a pool across tests, which a synctest bubble may not share; the table's
// rules are the engine's, tested against its own model in package engine.
type modelTable struct {
	holder engine.Grant // Owner "" when free
	queue  []string
}

func (t *modelTable) apply(c engine.Command) engine.Result {
	switch c.Op {
	case engine.OpAcquire:
		switch {
		case t.holder.Owner == "":
			t.holder = engine.Grant{Key: c.Key, Owner: c.Owner, Fence: c.Fence}
			return engine.Result{OK: true, Grant: t.holder}
		case t.holder.Owner == c.Owner:
			return engine.Result{OK: true, Grant: t.holder}
		case !c.Wait:
			return engine.Result{Grant: t.holder}
		}
		if !slices.Contains(t.queue, c.Owner) {
			t.queue = append(t.queue, c.Owner)
		}
		return engine.Result{Queued: true, Grant: t.holder}
	case engine.OpRelease:
		if t.holder.Owner != c.Owner || c.Owner == "" {
			return engine.Result{}
		}
		r := engine.Result{OK: true}
		if g := t.handOn(c); g != nil {
			r.Handoffs = []engine.Grant{*g}
		}
		return r
	case engine.OpCancelWait:
		i := slices.Index(t.queue, c.Owner)
		if i < 0 {
			return engine.Result{}
		}
		t.queue = slices.Delete(t.queue, i, i+1)
		return engine.Result{OK: true}
	}
	panic("the model applies no " + c.Op.String())
}

// handOn ends the grant: the head of the queue gets the next one.
func (t *modelTable) handOn(c engine.Command) *engine.Grant {
	if len(t.queue) == 0 {
		t.holder = engine.Grant{}
		return nil
	}
	next := t.queue[0]
	t.queue = t.queue[1:]
	t.holder = engine.Grant{Key: c.Key, Owner: next, Fence: c.Fence}
	g := t.holder
	return &g
}

func (t *modelTable) queued(owner string) bool { return slices.Contains(t.queue, owner) }
