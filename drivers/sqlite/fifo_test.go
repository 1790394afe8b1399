package sqlite_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// fifoKey is the key the FIFO tests' waiters queue for.
const fifoKey = "fifo"

// queueUp has each child wait for fifoKey, one after the other: the next
// one starts only once the last is seen in the key's queue in the file,
// so that their order of arrival is known. A waiter that never shows
// there fails the test; the others are still sent to wait, one after the
// other, so that the test goes on to say in which order they were served.
func queueUp(t *testing.T, d *sqlite.Driver, waiters []*child) bool {
	t.Helper()
	visible := true
	for i, w := range waiters {
		w.send(t, "wait "+fifoKey)
		if l := w.line(t, 30*time.Second); l != "waiting" {
			t.Fatalf("waiter %d said %q", i, l)
		}
		if !visible {
			continue
		}
		var last int
		visible = poll.Wait(30*time.Second, func() bool {
			h, _, err := d.Inspect(t.Context(), fifoKey)
			last = h.WaiterCount
			return err == nil && h.WaiterCount == i+1
		})
		if !visible {
			t.Errorf("waiter %d (pid %d) not in the key's queue in the file after 30s: %d waiters there, want %d", i, w.pid(), last, i+1)
		}
	}
	return visible
}

// grantOf reads a waiter's "got <fence> <ns>" line.
func grantOf(t *testing.T, w *child, within time.Duration) (fence uint64, at time.Time) {
	t.Helper()
	var ns int64
	if _, err := fmt.Sscanf(w.line(t, within), "got %d %d", &fence, &ns); err != nil {
		t.Fatalf("waiter %d: %v", w.pid(), err)
	}
	return fence, time.Unix(0, ns)
}

// Waiters of one mutex in five processes, lined up while this process
// holds it, are granted it in their order of arrival, as those of a
// semaphore are: the queue is in the file.
func TestProcesses_MutexWaitersAreServedInArrivalOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path})
	if _, ok, err := driverstest.Take(t.Context(), d, fifoKey, "parent", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	const n = 5
	var waiters []*child
	for range n {
		waiters = append(waiters, startChild(t, helperCmd(t, "waiter", envPath+"="+path)))
	}
	queueUp(t, d, waiters)
	if ok, err := d.Release(t.Context(), fifoKey, "parent"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	// Each waiter releases at once, so the fences give the grants' order.
	type grant struct {
		waiter int
		fence  uint64
	}
	var grants []grant
	for i, w := range waiters {
		fence, _ := grantOf(t, w, time.Minute)
		grants = append(grants, grant{i, fence})
	}
	slices.SortFunc(grants, func(a, b grant) int { return cmp.Compare(a.fence, b.fence) })
	var order []int
	for _, g := range grants {
		order = append(order, g.waiter)
	}
	if !slices.IsSorted(order) {
		t.Fatalf("the mutex went to the waiters in the order %v (by fence), want their order of arrival [0 1 2 3 4]", order)
	}
}

// A waiter killed while it waits holds up the waiters behind it no longer
// than its place's lease and, if a release handed it the key before its
// place lapsed, its TTL.
func TestProcesses_KilledWaiterDoesNotStallTheQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path})
	if _, ok, err := driverstest.Take(t.Context(), d, fifoKey, "parent", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	const waiterTTL = 2 * time.Second
	dead := startChild(t, helperCmd(t, "waiter", envPath+"="+path, envTTL+"="+waiterTTL.String()))
	next := startChild(t, helperCmd(t, "waiter", envPath+"="+path, envTTL+"="+waiterTTL.String()))
	if !queueUp(t, d, []*child{dead, next}) {
		return
	}
	dead.kill()
	if err := dead.wait(10 * time.Second); err == nil {
		t.Fatal("the first waiter exited cleanly; it was meant to be killed")
	}
	released := time.Now()
	if ok, err := d.Release(t.Context(), fifoKey, "parent"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	_, at := grantOf(t, next, time.Minute)
	// The lease is 3s; the slack is for a loaded machine.
	if late := at.Sub(released); late > waiterTTL+3*time.Second+5*time.Second {
		t.Fatalf("the waiter behind the killed one was granted %v after the release", late)
	}
}
