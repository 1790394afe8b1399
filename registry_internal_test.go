package lock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// checkHeap verifies the heap order and every run's index.
func checkHeap(t *testing.T, s *registryShard) {
	t.Helper()
	for i, r := range s.due {
		if r.heapIdx != i {
			t.Fatalf("run at %d says it is at %d", i, r.heapIdx)
		}
		if i > 0 && s.due[(i-1)/2].deadline > r.deadline {
			t.Fatalf("heap order broken at %d", i)
		}
	}
}

func TestRegistry_HeapStaysOrderedUnderRandomAddRemove(t *testing.T) {
	t.Parallel()
	var g registry
	var closed atomic.Bool
	rng := rand.New(rand.NewPCG(1, 2))
	var live []*run
	for step := range 2000 {
		if len(live) == 0 || rng.IntN(3) > 0 {
			r := &run{heapIdx: -1, deadline: monotime(1e15 + rng.Int64N(1e12))} // far future: the timer never fires
			if !g.add(r, &closed, true, func() {}) {
				t.Fatal("add refused")
			}
			live = append(live, r)
		} else {
			i := rng.IntN(len(live))
			g.remove(live[i])
			if live[i].heapIdx != -1 {
				t.Fatalf("step %d: removed run still has index %d", step, live[i].heapIdx)
			}
			live = append(live[:i], live[i+1:]...)
		}
		checkHeap(t, &g.shards[live[len(live)-1].shard])
	}
	for s := range g.shards {
		checkHeap(t, &g.shards[s])
	}
	total := 0
	for s := range g.shards {
		total += len(g.shards[s].due)
	}
	if total != len(live) {
		t.Fatalf("heaps hold %d runs, want %d", total, len(live))
	}
	if got := len(g.drain()); got != len(live) {
		t.Fatalf("drain returned %d runs, want %d", got, len(live))
	}
	closed.Store(true)
	if g.add(&run{heapIdx: -1}, &closed, true, func() {}) {
		t.Fatal("add accepted after drain")
	}
}

// heldRun builds a run for a handle that holds its lock until expiresAt.
func heldRun(m *Manager, expiresAt time.Time) (*run, context.Context) {
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Lock{m: m, key: "k", owner: "o", held: true, expiresAt: expiresAt}
	r := &run{}
	r.init(l, "o", 1, cancel, &options{})
	r.deadline = monotimeOf(expiresAt)
	return r, ctx
}

func TestRegistry_EarlierDeadlineRearmsShardTimer(t *testing.T) {
	t.Parallel()
	m := New(&nopDriver{})
	defer m.Close()
	late, lateCtx := heldRun(m, time.Now().Add(time.Hour))
	if !m.runs.add(late, &m.closed, true, func() {}) {
		t.Fatal("add refused")
	}
	// Find a run that lands on the same shard, due soon.
	var soon *run
	var soonCtx context.Context
	for range 100000 {
		soon, soonCtx = heldRun(m, time.Now().Add(20*time.Millisecond))
		if int(uintptr(unsafe.Pointer(soon))>>9%registryShards) == late.shard {
			break
		}
	}
	if !m.runs.add(soon, &m.closed, true, func() {}) {
		t.Fatal("add refused")
	}
	if soon.shard != late.shard {
		t.Fatalf("runs on shards %d and %d", soon.shard, late.shard)
	}
	select {
	case <-soonCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the earlier deadline was not watched: the shard timer still waits for the later one")
	}
	if !errors.Is(context.Cause(soonCtx), ErrExpired) {
		t.Fatalf("cause %v, want ErrExpired", context.Cause(soonCtx))
	}
	if lateCtx.Err() != nil {
		t.Fatal("the later run was cancelled too")
	}
	m.runs.remove(late)
}

// nopDriver answers everything and holds nothing.
type nopDriver struct{}

func (*nopDriver) Acquire(context.Context, string, string, time.Duration) (uint64, bool, error) {
	return 1, true, nil
}
func (*nopDriver) Release(context.Context, string, string) (bool, error) { return true, nil }
func (*nopDriver) ForceRelease(context.Context, string) error            { return nil }
func (*nopDriver) Exists(context.Context, string) (bool, error)          { return false, nil }
func (*nopDriver) Close() error                                          { return nil }
