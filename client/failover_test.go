package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// leaderAndFollower returns a node that leads and one that names it as
// leader (and serves requests itself, as a forwarding follower would), and
// a client that knows the leader.
func leaderAndFollower(t *testing.T, cfg Config) (leader, follower *fakeNode, c *Client) {
	t.Helper()
	leader, follower = newFakeNode(t, ""), newFakeNode(t, "")
	l := leader.addr()
	follower.leaderHTTP.Store(&l)
	cfg.Addrs = []string{leader.addr(), follower.addr()}
	c = newTestClient(t, cfg)
	if _, ok, err := driverstest.Take(t.Context(), c, "warm-up", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if leader.hitCount("/v1/acquire") != 1 {
		t.Fatal("the first call did not go to the leader")
	}
	return leader, follower, c
}

// TestClient_MovesOnFromSilentNode: a leader that stops answering (its
// connections accepted, nothing ever answered) costs a call about one
// AttemptTimeout, not half of Timeout; it is then left out, so the next
// call goes straight to another node.
func TestClient_MovesOnFromSilentNode(t *testing.T) {
	const attempt = 300 * time.Millisecond
	leader, follower, c := leaderAndFollower(t, Config{AttemptTimeout: attempt})
	leader.frozen.Store(true)

	start := time.Now()
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire with the leader silent = %v, %v", ok, err)
	}
	d := time.Since(start)
	t.Logf("first call took %v (AttemptTimeout %v)", d, attempt)
	if leader.hitCount("/v1/acquire") != 2 {
		t.Fatal("the call did not try the silent leader first")
	}
	if d < attempt/2 {
		t.Errorf("the call took %v: it cannot have waited for the silent node", d)
	}
	if d > 3*attempt {
		t.Errorf("the call took %v, want about the AttemptTimeout (%v), far below Timeout/2 (%v)", d, attempt, DefaultTimeout/2)
	}
	if !c.isSuspect(leader.srv.URL) {
		t.Error("the silent node is not marked")
	}

	start = time.Now()
	if _, err := c.Release(t.Context(), "k", "o"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if d := time.Since(start); d > attempt/2 {
		t.Errorf("the next call took %v: it waited for the silent node again", d)
	}
	if got := leader.hitCount("/v1/release"); got != 0 {
		t.Errorf("the silent node got %d releases after it was marked", got)
	}
	if got := follower.hitCount("/v1/release"); got != 1 {
		t.Errorf("the other node got %d releases, want 1", got)
	}
}

// TestClient_SlowNodeThatAnswersItsStatusIsWaitedFor: a request that takes
// longer than the AttemptTimeout on a node that answers its status at once
// (a slow commit, not a stopped process) is not abandoned.
func TestClient_SlowNodeThatAnswersItsStatusIsWaitedFor(t *testing.T) {
	const attempt = 100 * time.Millisecond
	leader, follower, c := leaderAndFollower(t, Config{AttemptTimeout: attempt})
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// A waiting acquire is held by the server for its whole wait: many
	// AttemptTimeouts here.
	ctx, cancel := context.WithTimeout(t.Context(), 8*attempt)
	defer cancel()
	if _, err := driverstest.TakeWait(ctx, c, "k", "waiter", time.Minute, drivers.WaitOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWait = %v, want the deadline", err)
	}
	// One long wait until just before the deadline (and perhaps short ones
	// in the margin left); a watch that gave up on the node would have
	// sent a long one again every AttemptTimeout or so.
	waits, _ := leader.waitsSent()
	long := 0
	for _, ms := range waits {
		if time.Duration(ms)*time.Millisecond >= 2*attempt {
			long++
		}
	}
	if long != 1 {
		t.Errorf("waits sent (ms): %v; want one of at least %v: the wait was abandoned and sent again", waits, 2*attempt)
	}
	if got := follower.hitCount("/v1/acquire"); got != 0 {
		t.Errorf("the wait went to the follower %d times", got)
	}
	if c.isSuspect(leader.srv.URL) {
		t.Error("a node that answers its status was marked silent")
	}
}

// TestClient_CallerDeadlineMarksSilentNode: callers whose deadlines are
// shorter than the AttemptTimeout never see the client give up on the
// node itself; the node is marked all the same (it does not answer its
// status either), so that a later call with the same short deadline goes
// elsewhere and succeeds.
func TestClient_CallerDeadlineMarksSilentNode(t *testing.T) {
	const (
		attempt  = 400 * time.Millisecond
		deadline = 150 * time.Millisecond
	)
	leader, follower, c := leaderAndFollower(t, Config{AttemptTimeout: attempt})
	leader.frozen.Store(true)

	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	_, _, err := driverstest.Take(ctx, c, "k", "o", time.Second)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on the silent leader = %v, want the deadline", err)
	}
	poll.Until(t, 5*time.Second, "the leader to be suspect", func() bool { return c.isSuspect(leader.srv.URL) })

	ctx, cancel = context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if _, ok, err := driverstest.Take(ctx, c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("the next call with the same deadline = %v, %v, want it served by the other node", ok, err)
	}
	if got := follower.hitCount("/v1/acquire"); got != 1 {
		t.Errorf("the other node got %d acquires, want 1", got)
	}
}

// TestClient_ForwardToSilentLeaderIsAbandoned: a follower answers its
// status but holds the request, forwarding it to a leader that does not
// answer. The client gives the request up about one AttemptTimeout
// later and tries another node, without marking the follower silent.
func TestClient_ForwardToSilentLeaderIsAbandoned(t *testing.T) {
	const attempt = 300 * time.Millisecond
	gone := newFakeNode(t, "")
	gone.frozen.Store(true)
	g := gone.addr()
	stuck, other := newFakeNode(t, ""), newFakeNode(t, "")
	stuck.leaderHTTP.Store(&g)
	other.leaderHTTP.Store(&g)
	stuck.holdWrites.Store(true)
	c := newTestClient(t, Config{Addrs: []string{stuck.addr(), other.addr()}, AttemptTimeout: attempt})

	start := time.Now()
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	d := time.Since(start)
	t.Logf("the call took %v (AttemptTimeout %v)", d, attempt)
	if stuck.hitCount("/v1/acquire") != 1 || other.hitCount("/v1/acquire") != 1 {
		t.Fatalf("acquires: %d on the stuck follower, %d on the other node; want 1 and 1",
			stuck.hitCount("/v1/acquire"), other.hitCount("/v1/acquire"))
	}
	if d > 3*attempt {
		t.Errorf("the call took %v, want about the AttemptTimeout (%v)", d, attempt)
	}
	if c.isSuspect(stuck.srv.URL) {
		t.Error("the follower answers its status: it must not be marked silent")
	}
	if !c.isSuspect(gone.srv.URL) {
		t.Error("the silent leader is not marked")
	}
}

// TestClient_DiscoveryIsNotDelayedBySilentNode: the leader look-up asks
// every node at once, so a silent node listed first does not hold up the
// first call; the answer from the leader itself settles it.
func TestClient_DiscoveryIsNotDelayedBySilentNode(t *testing.T) {
	// A look-up that asked one node after another would wait half of
	// this on the silent node: 5s, far from the 2s bound below, which a
	// loaded machine running -race stays well within.
	const attempt = 10 * time.Second
	silent, follower, leader := newFakeNode(t, ""), newFakeNode(t, ""), newFakeNode(t, "")
	silent.frozen.Store(true)
	l := leader.addr()
	follower.leaderHTTP.Store(&l)
	c := newTestClient(t, Config{Addrs: []string{silent.addr(), follower.addr(), leader.addr()}, AttemptTimeout: attempt})

	start := time.Now()
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if d := time.Since(start); d > attempt/5 {
		t.Errorf("the first call took %v: the look-up waited for the silent node", d)
	}
	if got := leader.hitCount("/v1/acquire"); got != 1 {
		t.Errorf("the leader got %d acquires, want 1", got)
	}
	if got := silent.hitCount("/v1/acquire") + follower.hitCount("/v1/acquire"); got != 0 {
		t.Errorf("%d acquires went to nodes other than the leader", got)
	}
	poll.Until(t, 5*time.Second, "the silent node to be asked for status", func() bool { return silent.hitCount("/v1/status") == 1 }) // the look-up asked it too
}

// TestClient_UnavailableTellsNeverSentFromOutcomeUnknown: when nothing
// reached any node the error matches only ErrUnavailable; when a write
// reached one and got no answer, it matches ErrOutcomeUnknown too. A read
// has no outcome to be unsure of.
func TestClient_UnavailableTellsNeverSentFromOutcomeUnknown(t *testing.T) {
	cfg := Config{Timeout: 400 * time.Millisecond, AttemptTimeout: 100 * time.Millisecond}

	t.Run("refused everywhere", func(t *testing.T) {
		cfg := cfg
		cfg.Addrs = []string{loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)}
		c := newTestClient(t, cfg)
		_, err := c.Release(t.Context(), "k", "o")
		if !errors.Is(err, drivers.ErrUnavailable) || errors.Is(err, drivers.ErrOutcomeUnknown) {
			t.Fatalf("Release = %v, want ErrUnavailable and not ErrOutcomeUnknown", err)
		}
	})
	t.Run("sent, no answer", func(t *testing.T) {
		n := newFakeNode(t, "")
		n.frozen.Store(true)
		cfg := cfg
		cfg.Addrs = []string{n.addr(), loopback.MustFreeAddr(t)}
		c := newTestClient(t, cfg)
		_, _, err := driverstest.Take(t.Context(), c, "k", "o", time.Second)
		if !errors.Is(err, drivers.ErrUnavailable) || !errors.Is(err, drivers.ErrOutcomeUnknown) {
			t.Fatalf("Acquire = %v, want ErrUnavailable and ErrOutcomeUnknown", err)
		}
		if errors.Is(err, drivers.ErrNotAcquired) {
			t.Fatalf("Acquire = %v matches ErrNotAcquired", err)
		}
		_, _, err = c.Get(t.Context(), "k")
		if !errors.Is(err, drivers.ErrUnavailable) || errors.Is(err, drivers.ErrOutcomeUnknown) {
			t.Fatalf("Get = %v, want ErrUnavailable only", err)
		}
	})
	t.Run("503", func(t *testing.T) {
		// The server answers 503 also when it lost its leadership after
		// the write entered its log: the write may still commit.
		n := newFakeNode(t, "")
		n.unavailable.Store(true)
		cfg := cfg
		cfg.Addrs = []string{n.addr()}
		c := newTestClient(t, cfg)
		_, err := c.Extend(t.Context(), "k", "o", time.Second)
		if !errors.Is(err, drivers.ErrUnavailable) || !errors.Is(err, drivers.ErrOutcomeUnknown) {
			t.Fatalf("Extend = %v, want ErrUnavailable and ErrOutcomeUnknown", err)
		}
	})
}

// TestClient_ReleaseRetriedAfterLostReply: the first attempt of a release
// takes effect and its reply is lost; the retry finds the key not held by
// the owner. Release must not answer false ("it was not mine"), since
// this call released it: it says the outcome is unknown. Without a lost
// reply a release of a key not held is a plain false.
func TestClient_ReleaseRetriedAfterLostReply(t *testing.T) {
	n, c := fakeClient(t, Config{})
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, c, "k", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	n.dropReplies.Store(1)
	rel, err := c.Release(ctx, "k", "o")
	if !errors.Is(err, drivers.ErrOutcomeUnknown) || !errors.Is(err, drivers.ErrUnavailable) || !errors.Is(err, drivers.ErrNoLongerHeld) || rel {
		t.Fatalf("Release after a lost reply = %v, %v; want false and ErrOutcomeUnknown with ErrNoLongerHeld", rel, err)
	}
	if got := n.hitCount("/v1/release"); got != 2 {
		t.Fatalf("the node saw %d releases, want the lost one and the retry", got)
	}
	if _, found, err := c.Get(ctx, "k"); err != nil || found {
		t.Fatalf("the key after the release: found=%v err=%v", found, err)
	}

	if rel, err := c.Release(ctx, "k", "o"); err != nil || rel {
		t.Fatalf("Release of a key not held = %v, %v; want false, nil", rel, err)
	}

	// A lost reply whose retry finds the key still held by the owner
	// answers what the retry did.
	if _, ok, err := driverstest.Take(ctx, c, "k2", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	n.dropReplies.Store(1)
	if ext, err := c.Extend(ctx, "k2", "o", time.Minute); err != nil || !ext {
		t.Fatalf("Extend after a lost reply = %v, %v; want true", ext, err)
	}
}
