package api_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
)

// bigSemaphore is one semaphore key of n holders and n waiters, each its
// own party: n*n edges.
func bigSemaphore(key string, n int) api.Lock {
	l := api.Lock{Key: key, Kind: api.KindSemaphore, Limit: uint32(n)}
	for i := range n {
		h := fmt.Sprintf("%s-h%04d", key, i)
		l.Holders = append(l.Holders, api.Holder{Owner: "t:" + h, Holder: h})
		l.Queue = append(l.Queue, api.Waiting{Owner: "t:" + key + fmt.Sprintf("-w%04d", i), Holder: fmt.Sprintf("%s-w%04d", key, i)})
	}
	return l
}

func TestListOf_EdgesAreBounded(t *testing.T) {
	locks := []api.Lock{bigSemaphore("big", 1000)}
	start := time.Now()
	list := api.ListOf(locks, false, "")
	took := time.Since(start)
	if len(list.Edges) > api.MaxWaitEdges {
		t.Fatalf("a 1000x1000 semaphore gave %d edges, want at most %d (in %s)", len(list.Edges), api.MaxWaitEdges, took)
	}
	if !list.EdgesTruncated {
		t.Fatalf("%d edges kept of 1,000,000, but EdgesTruncated is false", len(list.Edges))
	}
	js, _ := json.Marshal(list.Edges)
	t.Logf("%d edges (%d bytes of JSON) in %s", len(list.Edges), len(js), took)
}

// A key after a huge one still shows its waits, and its cycle: the bound
// takes the waiters of every key by their place in the queue, not the
// first key's whole queue.
func TestListOf_BoundKeepsEveryKeysHead(t *testing.T) {
	locks := []api.Lock{
		{Key: "a", Owner: "tA:A", Holder: "A", Queue: waiting("B")},
		{Key: "b", Owner: "tB:B", Holder: "B", Queue: waiting("A")},
		bigSemaphore("c", 1000),
	}
	list := api.ListOf(locks, false, "")
	if len(list.Edges) > api.MaxWaitEdges || !list.EdgesTruncated {
		t.Fatalf("%d edges, truncated %v: want at most %d, truncated", len(list.Edges), list.EdgesTruncated, api.MaxWaitEdges)
	}
	if len(list.Cycles) != 1 || fmt.Sprint(list.Cycles[0]) != "[A B]" {
		t.Fatalf("cycles = %v, want [[A B]]", list.Cycles)
	}
	again := api.ListOf(locks, false, "")
	if fmt.Sprint(again.Edges) != fmt.Sprint(list.Edges) {
		t.Fatal("two listings of the same table kept different edges")
	}
}

// Without the bound reached nothing is said to be cut.
func TestListOf_SmallTableIsNotTruncated(t *testing.T) {
	list := api.ListOf([]api.Lock{bigSemaphore("s", 100)}, false, "")
	if len(list.Edges) != 100*100 || list.EdgesTruncated {
		t.Fatalf("%d edges, truncated %v: want 10000, not truncated", len(list.Edges), list.EdgesTruncated)
	}
}

func BenchmarkListOf_Semaphore1000x1000(b *testing.B) {
	locks := []api.Lock{bigSemaphore("big", 1000)}
	for b.Loop() {
		api.ListOf(locks, false, "")
	}
}

// With a cycle elsewhere, WaitsFor also asks which parties stay stuck
// (stuckParties), over every lock listed.
func BenchmarkListOf_Semaphore1000x1000WithCycle(b *testing.B) {
	locks := []api.Lock{
		{Key: "a", Owner: "tA:A", Holder: "A", Queue: waiting("B")},
		{Key: "b", Owner: "tB:B", Holder: "B", Queue: waiting("A")},
		bigSemaphore("c", 1000),
	}
	for b.Loop() {
		api.ListOf(locks, false, "")
	}
}
