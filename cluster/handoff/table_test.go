package handoff

import (
	"slices"

	"github.com/zerotal/lock/engine"
)

// modelTable is one key of the lock table the model test's "raft" applies
// to: up to limit holders (1: a mutex; more: a semaphore), a FIFO queue
// served from its head, a fence per grant,
// no expiry (TTLs are an hour, the schedules last minutes). The real
// engine keeps its reply channels in a pool across tests, which a
// synctest bubble may not share; the table's rules are the engine's,
// tested against its own model in package engine.
type modelTable struct {
	limit   int
	holders []engine.Grant
	queue   []string
}

func (t *modelTable) apply(c engine.Command) engine.Result {
	switch c.Op {
	case engine.OpAcquire:
		if i := t.holderIndex(c.Owner); i >= 0 {
			return engine.Result{OK: true, Grant: t.holders[i]}
		}
		if len(t.queue) == 0 && len(t.holders) < t.limit {
			return engine.Result{OK: true, Grant: t.grant(c, c.Owner)}
		}
		r := engine.Result{Grant: t.blocker()}
		if !c.Wait {
			return r
		}
		if !slices.Contains(t.queue, c.Owner) {
			t.queue = append(t.queue, c.Owner)
		}
		r.Queued = true
		return r
	case engine.OpRelease:
		i := t.holderIndex(c.Owner)
		if i < 0 || c.Owner == "" {
			return engine.Result{}
		}
		t.holders = slices.Delete(t.holders, i, i+1)
		return engine.Result{OK: true, Handoffs: t.admit(c)}
	case engine.OpCancelWait:
		i := slices.Index(t.queue, c.Owner)
		if i < 0 {
			return engine.Result{}
		}
		t.queue = slices.Delete(t.queue, i, i+1)
		return engine.Result{OK: true, Handoffs: t.admit(c)}
	}
	panic("the model applies no " + c.Op.String())
}

func (t *modelTable) grant(c engine.Command, owner string) engine.Grant {
	fence := c.Fence
	if n := len(t.holders); n > 0 {
		fence = max(fence, t.holders[n-1].Fence+1)
	}
	g := engine.Grant{Key: c.Key, Owner: owner, Fence: fence}
	t.holders = append(t.holders, g)
	return g
}

// admit lets waiters in from the head while there is room.
func (t *modelTable) admit(c engine.Command) []engine.Grant {
	var out []engine.Grant
	for len(t.queue) > 0 && len(t.holders) < t.limit {
		next := t.queue[0]
		t.queue = t.queue[1:]
		out = append(out, t.grant(c, next))
	}
	return out
}

func (t *modelTable) holderIndex(owner string) int {
	return slices.IndexFunc(t.holders, func(g engine.Grant) bool { return g.Owner == owner })
}

func (t *modelTable) holds(owner string, fence uint64) bool {
	i := t.holderIndex(owner)
	return i >= 0 && t.holders[i].Fence == fence
}

func (t *modelTable) blocker() engine.Grant {
	if len(t.holders) == 0 {
		return engine.Grant{}
	}
	return t.holders[0]
}

func (t *modelTable) queued(owner string) bool { return slices.Contains(t.queue, owner) }

// modelTables is the table of every key the model names. An acquire of
// keys (engine.OpAcquireKeys) takes every key or none; with Wait it takes
// the free keys and queues the owner for the busy ones in the same step,
// as the engine does (Result.Grants: a zero Grant for each key queued
// for). v0.1.0's acquire entry (engine.OpAcquire) is answered as the one
// acquire of its key is.
type modelTables map[string]*modelTable

func (ts modelTables) apply(c engine.Command) engine.Result {
	if c.Op == engine.OpAcquire {
		c.Op, c.Keys = engine.OpAcquireKeys, []string{c.Key}
	}
	if c.Op != engine.OpAcquireKeys {
		return ts[c.Key].apply(c)
	}
	one := func(k string) engine.Command {
		return engine.Command{Op: engine.OpAcquire, Key: k, Owner: c.Owner, Fence: c.Fence}
	}
	free := func(t *modelTable) bool {
		return t.holderIndex(c.Owner) >= 0 || (len(t.queue) == 0 && len(t.holders) < t.limit)
	}
	grants := make([]engine.Grant, len(c.Keys))
	queued := false
	for i, k := range c.Keys {
		t := ts[k]
		switch {
		case free(t) && c.Wait:
			grants[i] = t.apply(one(k)).Grant
		case free(t):
		case !c.Wait:
			return engine.Result{Grant: t.blocker()}
		default:
			if !slices.Contains(t.queue, c.Owner) {
				t.queue = append(t.queue, c.Owner)
			}
			queued = true
		}
	}
	if queued {
		return engine.Result{Queued: true, Grants: grants}
	}
	if !c.Wait {
		for i, k := range c.Keys {
			grants[i] = ts[k].apply(one(k)).Grant
		}
	}
	return engine.Result{OK: true, Grant: grants[0], Grants: grants}
}
