package api_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/zerotal/lock/api"
)

func waiting(holders ...string) []api.Waiting {
	out := make([]api.Waiting, len(holders))
	for i, h := range holders {
		out[i] = api.Waiting{Owner: "0123456789abcdef0123456789abcdef:" + h, Holder: h}
	}
	return out
}

func TestWaitsFor_TwoKeyCycleIsFlagged(t *testing.T) {
	locks := []api.Lock{
		{Key: "a", Owner: "tA:A", Holder: "A", Queue: waiting("B")},
		{Key: "b", Owner: "tB:B", Holder: "B", Queue: waiting("A", "C")},
		{Key: "c", Owner: "tC:D", Holder: "D", Queue: waiting("A")},
	}
	edges, cycles, _ := api.WaitsFor(locks)
	want := []api.WaitEdge{
		{From: "A", To: "B", Key: "b", InCycle: true},
		{From: "A", To: "D", Key: "c"},
		{From: "B", To: "A", Key: "a", InCycle: true},
		{From: "C", To: "B", Key: "b"},
	}
	if !reflect.DeepEqual(edges, want) {
		t.Errorf("edges = %+v\nwant    %+v", edges, want)
	}
	if !reflect.DeepEqual(cycles, [][]string{{"A", "B"}}) {
		t.Errorf("cycles = %v, want [[A B]]", cycles)
	}
}

func TestWaitsFor_SharedHoldersAndHiddenOwners(t *testing.T) {
	locks := []api.Lock{
		// A semaphore held by two: its waiter waits for both.
		{Key: "s", Kind: api.KindSemaphore, Holders: []api.Holder{{Owner: "x", Holder: "P"}, {Owner: "y", Holder: "Q"}},
			Queue: waiting("R")},
		// An owner without a holder is its own party; one whose token is
		// hidden and that names no holder is nobody the caller may see.
		{Key: "m", Owner: "plain-owner", Queue: []api.Waiting{{Owner: "00000000000000000000000000000000"}, {Owner: "other"}}},
		// A process waiting for a key it holds through another lock is
		// not a wait for anyone else.
		{Key: "self", Owner: "t1:P", Holder: "P", Queue: waiting("P")},
	}
	edges, cycles, _ := api.WaitsFor(locks)
	want := []api.WaitEdge{
		{From: "R", To: "P", Key: "s"},
		{From: "R", To: "Q", Key: "s"},
		{From: "other", To: "plain-owner", Key: "m"},
	}
	if !reflect.DeepEqual(edges, want) || cycles != nil {
		t.Errorf("edges = %+v, cycles %v\nwant    %+v, none", edges, cycles, want)
	}
}

// TestWaitsFor_MatchesReachability checks WaitsFor on random tables
// against the definition: an edge is on a cycle exactly when its To
// reaches its From, and the cycles are the classes of parties that reach
// each other, each of more than one.
func TestWaitsFor_MatchesReachability(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	parties := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6"}
	for round := range 2000 {
		var locks []api.Lock
		for k := range rng.IntN(8) {
			l := api.Lock{Key: fmt.Sprintf("k%d", k), Holder: parties[rng.IntN(len(parties))]}
			if rng.IntN(3) == 0 {
				l.Holder = ""
				for range 1 + rng.IntN(3) {
					l.Holders = append(l.Holders, api.Holder{Holder: parties[rng.IntN(len(parties))]})
				}
			}
			for range rng.IntN(4) {
				l.Queue = append(l.Queue, api.Waiting{Holder: parties[rng.IntN(len(parties))]})
			}
			locks = append(locks, l)
		}
		edges, cycles, _ := api.WaitsFor(locks)

		// The edges are exactly every (waiter, holder, key) but a
		// party's wait for itself.
		want := map[api.WaitEdge]bool{}
		for _, l := range locks {
			hs := []string{l.Holder}
			if l.Holders != nil {
				hs = nil
				for _, h := range l.Holders {
					hs = append(hs, h.Holder)
				}
			}
			for _, q := range l.Queue {
				for _, h := range hs {
					if q.Holder != h {
						want[api.WaitEdge{From: q.Holder, To: h, Key: l.Key}] = true
					}
				}
			}
		}
		reach := map[string]map[string]bool{}
		for _, p := range parties {
			reach[p] = reachable(edges, p)
		}
		got := map[api.WaitEdge]bool{}
		for _, e := range edges {
			if e.InCycle != reach[e.To][e.From] {
				t.Fatalf("round %d: %+v InCycle = %v, but %s reaches %s: %v; locks %+v", round, e, e.InCycle, e.To, e.From, reach[e.To][e.From], locks)
			}
			e.InCycle = false
			got[e] = true
		}
		if !reflect.DeepEqual(got, want) || len(got) != len(edges) {
			t.Fatalf("round %d: edges %+v, want %v (no duplicates); locks %+v", round, edges, want, locks)
		}
		var wantCycles [][]string
		for _, p := range parties {
			var class []string
			for _, q := range parties {
				if p == q || reach[p][q] && reach[q][p] {
					class = append(class, q)
				}
			}
			if len(class) > 1 && class[0] == p {
				wantCycles = append(wantCycles, class)
			}
		}
		if !slices.EqualFunc(cycles, wantCycles, slices.Equal) {
			t.Fatalf("round %d: cycles %v, want %v; edges %+v", round, cycles, wantCycles, edges)
		}
	}
}

// reachable is every party from reaches by one edge or more.
func reachable(edges []api.WaitEdge, from string) map[string]bool {
	out := map[string]bool{}
	next := []string{from}
	for len(next) > 0 {
		p := next[0]
		next = next[1:]
		for _, e := range edges {
			if e.From == p && !out[e.To] {
				out[e.To] = true
				next = append(next, e.To)
			}
		}
	}
	return out
}

func TestListOf_HolderKeepsItsLocksAndTheirCycles(t *testing.T) {
	locks := []api.Lock{
		{Key: "a", Owner: "tA:A", Holder: "A", Queue: waiting("B")},
		{Key: "b", Owner: "tB:B", Holder: "B", Queue: waiting("A")},
		{Key: "c", Owner: "tC:C", Holder: "C", Queue: waiting("D")},
	}
	got := api.ListOf(locks, true, "A")
	if len(got.Locks) != 2 || got.Locks[0].Key != "a" || got.Locks[1].Key != "b" || !got.Truncated {
		t.Fatalf("locks %+v truncated %v, want a and b, truncated", got.Locks, got.Truncated)
	}
	if len(got.Edges) != 2 || !got.Edges[0].InCycle || !reflect.DeepEqual(got.Cycles, [][]string{{"A", "B"}}) {
		t.Fatalf("edges %+v cycles %v, want A→B and B→A on the cycle [A B]", got.Edges, got.Cycles)
	}
	if all := api.ListOf(locks, false, ""); len(all.Locks) != 3 || len(all.Edges) != 3 {
		t.Fatalf("no filter: %d locks, %d edges, want 3 and 3", len(all.Locks), len(all.Edges))
	}
}

// A semaphore's waiter needs any one of its holders to leave, not all
// of them: a wait through a semaphore one of whose holders waits for
// nobody is no deadlock, however the others wait. When every holder
// waits on the cycle, it is one.
func TestWaitsFor_SemaphoreWithAFreeHolderIsNoCycle(t *testing.T) {
	sem := func(queue []api.Waiting, holders ...string) api.Lock {
		l := api.Lock{Key: "s", Kind: api.KindSemaphore, Limit: uint32(len(holders)), Queue: queue}
		for _, h := range holders {
			l.Holders = append(l.Holders, api.Holder{Owner: "t:" + h, Holder: h})
		}
		return l
	}
	// X holds a slot of s and waits for nothing: when it leaves, C gets
	// s, then leaves m, and A gets m.
	free := []api.Lock{
		{Key: "m", Owner: "tC:C", Holder: "C", Queue: waiting("A")},
		sem(waiting("C"), "A", "X"),
	}
	edges, cycles, _ := api.WaitsFor(free)
	for _, e := range edges {
		if e.InCycle {
			t.Errorf("edge %+v flagged on a cycle, but X's release of s lets C in", e)
		}
	}
	if cycles != nil {
		t.Errorf("cycles = %v, want none: X waits for nobody and holds a slot of s", cycles)
	}
	// Both holders of s wait for m, which C holds while it waits for s.
	stuck := []api.Lock{
		{Key: "m", Owner: "tC:C", Holder: "C", Queue: waiting("A", "X")},
		sem(waiting("C"), "A", "X"),
	}
	if _, cycles, _ := api.WaitsFor(stuck); !reflect.DeepEqual(cycles, [][]string{{"A", "C", "X"}}) {
		t.Errorf("cycles = %v, want [[A C X]]: every holder of s waits for C", cycles)
	}
	// C is second in s's queue and B, first, waits for m too: X's one
	// release lets B in, not C.
	second := []api.Lock{
		{Key: "m", Owner: "tC:C", Holder: "C", Queue: waiting("A", "B")},
		sem(waiting("B", "C"), "A", "X"),
	}
	if _, cycles, _ := api.WaitsFor(second); len(cycles) != 1 || !slices.Contains(cycles[0], "C") {
		t.Errorf("cycles = %v, want one through C: the slot X frees goes to B, who waits for C", cycles)
	}
}
