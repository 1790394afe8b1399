package integration

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/driverstest"
)

// TestNemesis_SlowLeaderClockLengthensLocks shows the clock hook at work
// and what a slow clock means: with the leader's monotonic clock at half
// the host's rate, a 2s lock is still held 2.6s (host time) after it was
// granted, and locks expire again once the rate is back to 1. The nodes'
// wall clocks are hours apart all along (see newFaultCluster), which must
// not matter either.
func TestNemesis_SlowLeaderClockLengthensLocks(t *testing.T) {
	c := newFaultCluster(t)
	ctx := t.Context()
	l := leaderAtRate(t, c, 0.5)
	cl, err := newReadClient(c.addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()

	// Each command the leader stamps re-reads the clock file (at most every
	// 50ms); a few acquires make sure the new rate is in force.
	for i := range 3 {
		if _, ok, err := driverstest.Take(ctx, cl, "warm", "w", time.Second); err != nil || !ok {
			t.Fatalf("warm-up acquire %d: ok=%v err=%v", i, ok, err)
		}
		sleepCtx(ctx, 60*time.Millisecond) // let the re-read throttle pass
	}
	if got, err := c.leader(5 * time.Second); err != nil || got != l {
		t.Skipf("leadership moved during the set-up (now %d, err %v)", got, err)
	}

	granted := time.Now()
	if _, ok, err := driverstest.Take(ctx, cl, "slow", "a", 2*time.Second); err != nil || !ok {
		t.Fatalf("Acquire slow: ok=%v err=%v", ok, err)
	}
	sleepCtx(ctx, 2600*time.Millisecond-time.Since(granted)) // the lock's TTL runs meanwhile
	info, found, err := cl.Get(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.leader(5 * time.Second); err != nil || got != l {
		t.Skipf("leadership moved during the check (now %d, err %v)", got, err)
	}
	if !found || info.Remaining < 300*time.Millisecond {
		t.Fatalf("2.6s after a 2s grant on a half-speed leader: found=%v remaining=%v, want held with ~0.7s left",
			found, info.Remaining)
	}
	t.Logf("2.6s after a 2s grant: %v left on the half-speed leader", info.Remaining)

	if err := c.setRate(l, 1); err != nil {
		t.Fatal(err)
	}
	// Back at full speed: the lock ends within its remaining time (plus the
	// expiry loop's reaction).
	deadline := time.Now().Add(info.Remaining + 3*time.Second)
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, found, err := cl.Get(qctx, "slow")
		cancel()
		if err == nil && !found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock did not expire at full speed: found=%v err=%v", found, err)
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// TestNemesis_FastLeaderClockIsCaught is the negative control of the
// suite, on real processes: a leader whose clock runs three times too fast
// (outside what the design assumes, see cmd/lockcluster/faults_on.go) expires a
// lock while its holder still believes it holds it, another client takes
// it, and the checker must report two holders.
func TestNemesis_FastLeaderClockIsCaught(t *testing.T) {
	c := newFaultCluster(t)
	ctx := t.Context()
	l := leaderAtRate(t, c, 3)
	h := newHistory()
	w := newWorkload(c.addrs(), h)
	clients := make([]*workClient, 2)
	for i := range clients {
		cl, err := newReadClient(c.addrs())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cl.Close() }()
		clients[i] = &workClient{w: w, id: i, cl: cl}
	}
	for i := range 3 { // let the leader pick the new rate up
		if got := clients[0].acquire("warm", "w", time.Second); got.result != resOK {
			t.Fatalf("warm-up acquire %d: %v", i, got)
		}
		sleepCtx(ctx, 60*time.Millisecond)
	}

	if got := clients[0].acquire("fast", "a", 2*time.Second); got.result != resOK {
		t.Fatalf("first acquire: %v", got)
	}
	// Client 1 tries until it gets the key: on a correct clock not before
	// 2s; here after about 2s/3.
	for start := time.Now(); time.Since(start) < 5*time.Second; {
		if clients[1].acquire("fast", "b", 2*time.Second).result == resOK {
			break
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	if got, err := c.leader(5 * time.Second); err != nil || got != l {
		t.Skipf("leadership moved during the test (now %d, err %v)", got, err)
	}
	vs := checkHistory(h.snapshot())
	if len(vs) == 0 || vs[0].rule != "two-holders" {
		t.Fatalf("a three-times-fast leader clock went unnoticed; history:\n%s", formatOps(h.snapshot()))
	}
	t.Logf("caught, as expected:\n%s", vs[0])
}

// leaderAtRate sets the monotonic clock of c's leader to rate times the
// host's, and returns the leader.
func leaderAtRate(t *testing.T, c *faultCluster, rate float64) int {
	t.Helper()
	l, err := c.leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.setRate(l, rate); err != nil {
		t.Fatal(err)
	}
	return l
}
