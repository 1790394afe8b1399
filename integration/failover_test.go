package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// loadStats is what the load workers saw.
type loadStats struct {
	mu sync.Mutex
	// fences per worker, in the order granted (each worker has its own key).
	fences [][]uint64
	// firstAfter is the first successful grant that started after mark.
	mark       time.Time
	firstAfter time.Time
	errs       int
}

// runLoad makes workers acquire and release a key each until ctx ends.
func runLoad(ctx context.Context, c *client.Client, workers int, st *loadStats) *sync.WaitGroup {
	st.fences = make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := fmt.Sprintf("load/%d", w)
			owner := 0
			for i := 0; i < 100000 && ctx.Err() == nil; i++ {
				owner++
				start := time.Now()
				fence, ok, err := driverstest.Take(ctx, c, key, fmt.Sprintf("w%d-%d", w, owner), 10*time.Second)
				if err != nil || !ok {
					if ctx.Err() == nil {
						st.mu.Lock()
						st.errs++
						st.mu.Unlock()
					}
					continue
				}
				st.mu.Lock()
				st.fences[w] = append(st.fences[w], fence)
				if !st.mark.IsZero() && start.After(st.mark) && st.firstAfter.IsZero() {
					st.firstAfter = time.Now()
				}
				st.mu.Unlock()
				// A release can fail while the leader changes; retry it so
				// that the worker's next owner finds the key free.
				for j := 0; j < 50 && ctx.Err() == nil; j++ {
					if _, err := c.Release(ctx, key, fmt.Sprintf("w%d-%d", w, owner)); err == nil {
						break
					}
				}
			}
		})
	}
	return &wg
}

// TestCluster_KillLeaderUnderLoad kills -9 the leader while workers
// acquire and release: acquisitions resume within a few election
// timeouts, a lock held from before keeps its owner and fence with a
// remaining TTL neither cut short nor reset to the full TTL, and fences
// keep increasing.
func TestCluster_KillLeaderUnderLoad(t *testing.T) {
	c := newCluster(t)
	cl := c.client()
	ctx := t.Context()

	const heldTTL = 30 * time.Second
	sent := time.Now()
	heldFence, ok, err := driverstest.Take(ctx, cl, "held/before", "pre", heldTTL)
	if err != nil || !ok {
		t.Fatalf("Acquire held/before = %v, %v", ok, err)
	}
	acked := time.Now()

	var st loadStats
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	wg := runLoad(lctx, cl, 8, &st)

	// Let the load run and time pass on the held lock, so that a reset to
	// the full TTL would show.
	time.Sleep(5 * time.Second) // the workload runs meanwhile
	leader := c.waitLeader(10 * time.Second)
	st.mu.Lock()
	before := 0
	for _, f := range st.fences {
		before += len(f)
	}
	killed := time.Now()
	st.mark = killed
	st.mu.Unlock()
	if before == 0 {
		t.Fatal("no grant before the kill: the load did not run")
	}
	leader.kill()
	t.Logf("killed leader %s after %d grants", leader.id, before)

	// Acquisitions resume within a few election timeouts (500 ms each).
	var resumed time.Time
	poll.Until(t, 15*time.Second, "an acquisition after the kill", func() bool {
		st.mu.Lock()
		resumed = st.firstAfter
		st.mu.Unlock()
		return !resumed.IsZero()
	})
	t.Logf("first grant %v after the kill", resumed.Sub(killed).Round(time.Millisecond))
	if d := resumed.Sub(killed); d > 10*time.Second {
		t.Errorf("acquisitions resumed only after %v", d)
	}
	time.Sleep(time.Second) // more load on the new leader
	stopLoad()
	wg.Wait()

	// Fences strictly increase per key across the failover.
	after := 0
	for w, fs := range st.fences {
		for i := 1; i < len(fs); i++ {
			if fs[i] <= fs[i-1] {
				t.Errorf("worker %d: fence %d after %d", w, fs[i], fs[i-1])
			}
		}
		after += len(fs)
	}
	t.Logf("%d grants in all, %d transient errors", after, st.errs)
	if after <= before {
		t.Errorf("no grant after the kill (%d before, %d in all)", before, after)
	}

	// The lock held from before the kill: same owner, same fence, TTL
	// neither shortened nor reset.
	info, found, err := cl.Get(ctx, "held/before")
	now := time.Now()
	if err != nil || !found {
		t.Fatalf("held/before after the failover: found=%v err=%v", found, err)
	}
	if info.Owner != "pre" || info.Fence != heldFence {
		t.Fatalf("held/before changed hands: %+v (fence was %d)", info, heldFence)
	}
	minLeft := heldTTL - now.Sub(sent) - 100*time.Millisecond // rounding to ms on the wire
	// Lengthened at most by the time no leader counted (kill to recovery)
	// plus the takeover grace (election timeout + lease, 750ms), the time
	// since the old leader's last entry (ticks every second) and slack.
	maxLeft := heldTTL - now.Sub(acked) + st.firstAfter.Sub(killed) + 3*time.Second
	t.Logf("held/before remaining %v (allowed %v..%v)", info.Remaining, minLeft, maxLeft)
	if info.Remaining < minLeft {
		t.Errorf("remaining TTL %v was cut short: at least %v expected", info.Remaining, minLeft)
	}
	if info.Remaining > maxLeft {
		t.Errorf("remaining TTL %v looks reset: at most %v expected", info.Remaining, maxLeft)
	}
	// Still exclusive.
	if _, ok, err := driverstest.Take(ctx, cl, "held/before", "thief", time.Second); err != nil || ok {
		t.Errorf("another owner acquired held/before: ok=%v err=%v", ok, err)
	}
	// The fence of a new grant is above every earlier one.
	var highest uint64
	for _, fs := range st.fences {
		if len(fs) > 0 {
			highest = max(highest, fs[len(fs)-1])
		}
	}
	f, ok, err := driverstest.Take(ctx, cl, "fresh", "o", time.Second)
	if err != nil || !ok || f <= highest {
		t.Errorf("new grant fence %d (ok=%v err=%v), want > %d", f, ok, err, highest)
	}
}

// TestCluster_RestartAllKeepsGrants stops every node (one gracefully, two
// with kill -9) and starts them again: every acknowledged grant is still
// there, with its fence, and a released key stays free.
func TestCluster_RestartAllKeepsGrants(t *testing.T) {
	c := newCluster(t)
	cl := c.client()
	ctx := t.Context()

	type grant struct {
		owner string
		fence uint64
	}
	grants := map[string]grant{}
	var highest uint64
	for i := range 40 {
		key := fmt.Sprintf("durable/%02d", i)
		owner := fmt.Sprintf("owner-%d", i)
		fence, ok, err := driverstest.Take(ctx, cl, key, owner, 5*time.Minute)
		if err != nil || !ok {
			t.Fatalf("Acquire %s = %v, %v", key, ok, err)
		}
		grants[key] = grant{owner, fence}
		highest = max(highest, fence)
	}
	// A released key must stay released.
	if _, ok, err := driverstest.Take(ctx, cl, "durable/released", "x", 5*time.Minute); err != nil || !ok {
		t.Fatalf("Acquire durable/released = %v, %v", ok, err)
	}
	if rel, err := cl.Release(ctx, "durable/released", "x"); err != nil || !rel {
		t.Fatalf("Release = %v, %v", rel, err)
	}

	// One node stops gracefully (SIGTERM: the agent shuts down cleanly),
	// the other two crash.
	c.nodes[0].stop(t)
	for _, n := range c.nodes[1:] {
		n.kill()
	}
	for _, n := range c.nodes {
		c.start(n)
	}
	c.waitLeader(30 * time.Second)

	for key, g := range grants {
		info, found, err := getRetry(ctx, cl, key)
		if err != nil || !found {
			t.Errorf("%s after restart: found=%v err=%v", key, found, err)
			continue
		}
		if info.Owner != g.owner || info.Fence != g.fence {
			t.Errorf("%s after restart = %+v, want owner %s fence %d", key, info, g.owner, g.fence)
		}
	}
	if _, found, err := getRetry(ctx, cl, "durable/released"); err != nil || found {
		t.Errorf("released key after restart: found=%v err=%v", found, err)
	}
	if _, ok, err := driverstest.Take(ctx, cl, "durable/00", "intruder", time.Second); err != nil || ok {
		t.Errorf("intruder acquired a restored key: ok=%v err=%v", ok, err)
	}
	f, ok, err := driverstest.Take(ctx, cl, "durable/new", "o", time.Second)
	if err != nil || !ok || f <= highest {
		t.Errorf("first grant after restart: fence %d ok=%v err=%v, want > %d", f, ok, err, highest)
	}
}

// getRetry reads a key, retrying for up to 2s while the restarted
// cluster settles.
func getRetry(ctx context.Context, cl *client.Client, key string) (info api.Lock, found bool, err error) {
	poll.Wait(2*time.Second, func() bool {
		info, found, err = cl.Get(ctx, key)
		return err == nil || !errors.Is(err, drivers.ErrUnavailable)
	})
	return info, found, err
}
