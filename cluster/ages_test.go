package cluster

import (
	"strconv"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// The ages a listing shows come from the entries as the node applied
// them: a waiter's from the entry that queued it (kept when it asks
// again), a grant's from the entry that made it or handed it over (kept
// by a refresh), and what a key no longer has is forgotten.
func TestTableAges_FromTheAppliedEntries(t *testing.T) {
	const s = int64(time.Second)
	var ages tableAges
	acquire := func(now int64, owner string, res engine.Result) {
		ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: owner, Now: now}, Result: res})
	}
	acquire(1*s, "a", engine.Result{OK: true, Grants: []engine.Grant{{Key: "k", Owner: "a", Fence: 1}}})
	acquire(2*s, "b", engine.Result{Queued: true, Grants: []engine.Grant{{}}})
	acquire(3*s, "b", engine.Result{Queued: true, Grants: []engine.Grant{{}}}) // b asks again: its place, and its age, stay
	acquire(4*s, "a", engine.Result{OK: true, Grants: []engine.Grant{{Key: "k", Owner: "a", Fence: 1}}})

	l := api.Lock{Key: "k", Fence: 1, Queue: []api.Waiting{{Owner: "b"}}}
	ages.fill(&l, 5*s)
	if l.Age != 4*time.Second || l.Queue[0].AgeMillis != 3000 {
		t.Fatalf("at 5s: grant age %v, waiter age %dms; want 4s (granted at 1s, refreshed since) and 3000ms (queued at 2s)", l.Age, l.Queue[0].AgeMillis)
	}

	// a releases, k goes to b.
	ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpRelease, Key: "k", Owner: "a", Now: 6 * s},
		Result: engine.Result{OK: true, Handoffs: []engine.Grant{{Key: "k", Owner: "b", Fence: 2}}}})
	l = api.Lock{Key: "k", Fence: 2}
	ages.fill(&l, 8*s)
	if l.Age != 2*time.Second {
		t.Fatalf("b's grant is %v old at 8s, want 2s (handed over at 6s)", l.Age)
	}
	if ages.grants.n != 1 || ages.waiters.n != 0 {
		t.Fatalf("%d grants and %d waiters remembered, want 1 and 0 (a's grant and b's place are gone)", ages.grants.n, ages.waiters.n)
	}

	// A waiter that left in a way not seen (here: never queued as far as
	// this node knows) has no age; a cancelled one is forgotten.
	acquire(9*s, "c", engine.Result{Queued: true, Grants: []engine.Grant{{}}})
	ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpCancelWait, Key: "k", Owner: "c", Now: 10 * s}, Result: engine.Result{OK: true}})
	l = api.Lock{Key: "k", Fence: 2, Queue: []api.Waiting{{Owner: "c"}, {Owner: "d"}}}
	ages.fill(&l, 11*s)
	if l.Queue[0].AgeMillis != 0 || l.Queue[1].AgeMillis != 0 {
		t.Fatalf("ages %+v, want none known", l.Queue)
	}
}

// A restore forgets every waiter's age (the snapshot may stand for
// entries that let the waiter in and queued its owner again) and keeps
// every grant's (its fence names that one grant).
func TestTableAges_RestoreForgetsWaitersKeepsGrants(t *testing.T) {
	const s = int64(time.Second)
	var ages tableAges
	ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "a", Now: 1 * s},
		Result: engine.Result{OK: true, Grants: []engine.Grant{{Key: "k", Owner: "a", Fence: 1}}}})
	ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "b", Now: 2 * s},
		Result: engine.Result{Queued: true, Grants: []engine.Grant{{}}}})
	ages.restored()
	l := api.Lock{Key: "k", Fence: 1, Queue: []api.Waiting{{Owner: "b"}}}
	ages.fill(&l, 5*s)
	if l.Age != 4*time.Second || l.Queue[0].AgeMillis != 0 {
		t.Fatalf("after a restore: grant age %v, waiter age %dms; want 4s (fence 1 granted at 1s) and none known", l.Age, l.Queue[0].AgeMillis)
	}
}

// A grant's age is forgotten when the grant ends (release, expiry, force
// release), so that a busy table, whose released keys nobody lists, does
// not fill the record and wipe the age of a grant held all along: the
// wedged holder an operator looks for. Before, more than maxAges grants
// made since wiped every age, and the page said the grant began before
// the node started.
func TestTableAges_EndedGrantsAreForgotten(t *testing.T) {
	const s = int64(time.Second)
	var ages tableAges
	grant := func(now int64, key, owner string, fence uint64) {
		ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpAcquireKeys, Keys: []string{key}, Owner: owner, Now: now},
			Result: engine.Result{OK: true, Grants: []engine.Grant{{Key: key, Owner: owner, Fence: fence}}}})
	}
	grant(1*s, "old", "w", 1)
	for i := range maxAges + 10 {
		key, fence := "k"+strconv.Itoa(i%100), uint64(2+i)
		grant(2*s, key, "o", fence)
		switch i % 3 {
		case 0:
			ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpRelease, Key: key, Owner: "o", Now: 2 * s}, Result: engine.Result{OK: true}})
		case 1:
			ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpExpire, Key: key, Owner: "o", ExpectFence: fence, Now: 2 * s}, Result: engine.Result{OK: true}})
		case 2:
			ages.applied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpForceRelease, Key: key, Now: 2 * s}, Result: engine.Result{OK: true}})
		}
	}
	l := api.Lock{Key: "old", Owner: "w", Fence: 1}
	ages.fill(&l, 5*s)
	if l.Age != 4*time.Second {
		t.Fatalf("the grant held since 1s is %v old at 5s after %d grants made and ended, want 4s", l.Age, maxAges+10)
	}
	if ages.grants.n != 1 {
		t.Fatalf("%d grants remembered, want 1: every other has ended", ages.grants.n)
	}
}
