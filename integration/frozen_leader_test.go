package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// What the frozen-leader test asks of clients with the default settings.
const (
	// frozenFirstOK bounds the time from the freeze to the first success
	// of a call sent after it: about two election timeouts (500ms each
	// by default) for the cluster to elect a new leader, and the client's
	// AttemptTimeout to leave the silent one.
	frozenFirstOK = 1500 * time.Millisecond
	// frozenFollow bounds the time from the new leader's election to the
	// first success. It matters only when the election itself takes so
	// long (on a loaded machine) that frozenFirstOK cannot be met by any
	// client: the bound is then the election plus frozenFollow, and the
	// test says so.
	frozenFollow = 250 * time.Millisecond
	// frozenMinRatio is the least share of the throughput before the
	// freeze that the clients keep while the leader is frozen.
	frozenMinRatio = 0.5
)

// TestCluster_FrozenLeaderStallsNoClient stops the leader (SIGSTOP) for 8s
// while 8 applications, each with its own client of the default
// configuration and a 2s deadline per call, take and release a key of
// their own. The cluster elects a new leader within about a second; the
// clients must follow it rather than wait for the frozen one: the first
// call sent after the freeze succeeds within frozenFirstOK of it (or
// frozenFollow after a slower election), and while the leader stays
// frozen the clients make at least frozenMinRatio of the calls per second
// they made before.
func TestCluster_FrozenLeaderStallsNoClient(t *testing.T) {
	const (
		workers  = 8
		deadline = 2 * time.Second // per call, as an application would set
		baseline = 3 * time.Second
		frozen   = 8 * time.Second
	)
	c := newCluster(t)
	rec := &callLog{}
	ctx, stopLoad := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() {
		stopLoad()
		wg.Wait()
	}()
	for w := range workers {
		cl, err := client.New(client.Config{Addrs: c.addrs(), Token: clientToken})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		wg.Go(func() {
			// One key and one owner per worker: a grant whose answer was
			// lost is refreshed by the next acquire, never in the way.
			key, owner := fmt.Sprintf("frozen/%d", w), fmt.Sprintf("frozen-w%d", w)
			for ctx.Err() == nil {
				rec.call(ctx, w, deadline, func(cctx context.Context) error {
					_, ok, err := driverstest.Take(cctx, cl, key, owner, 5*time.Second)
					if err == nil && !ok {
						err = &drivers.NotAcquiredError{Key: key}
					}
					return err
				})
				rec.call(ctx, w, deadline, func(cctx context.Context) error {
					_, err := cl.Release(cctx, key, owner)
					return err
				})
			}
		})
	}
	// Every worker has had a success: connections are up, the leader known.
	poll.Until(t, 15*time.Second, "every worker to succeed", func() bool { return rec.workersOK() == workers })

	baseFrom := time.Now()
	sleepCtx(ctx, baseline) // the measuring window: the load runs meanwhile
	leader := c.waitLeader(10 * time.Second)
	t.Cleanup(func() { leader.sendSignal(syscall.SIGCONT) }) // whatever happens below
	freeze := time.Now()
	leader.sendSignal(syscall.SIGSTOP)
	t.Logf("leader %s stopped (SIGSTOP)", leader.id)
	pollCtx, stopPoll := context.WithTimeout(ctx, frozen)
	defer stopPoll()
	elected := make(chan time.Time, 1)
	go func() { elected <- c.awaitNewLeader(pollCtx, leader) }()
	sleepCtx(ctx, frozen)
	electedAt := <-elected
	thaw := time.Now()
	leader.sendSignal(syscall.SIGCONT)
	sleepCtx(ctx, time.Second) // the old leader rejoins under load
	stopLoad()
	wg.Wait()

	before := float64(rec.okBetween(baseFrom, freeze)) / freeze.Sub(baseFrom).Seconds()
	during := float64(rec.okBetween(freeze, thaw)) / thaw.Sub(freeze).Seconds()
	first, ok := rec.firstOKSentAfter(freeze)
	fails := rec.failsBetween(freeze, thaw)
	t.Logf("before the freeze: %.0f calls/s (%.1fs window); while frozen: %.0f calls/s (%.1fs), ratio %.2f (target >= %.2f)",
		before, freeze.Sub(baseFrom).Seconds(), during, thaw.Sub(freeze).Seconds(), during/before, frozenMinRatio)
	t.Logf("failed calls while frozen: %d (%d deadline, %d unavailable, %d of which outcome unknown)",
		fails.all, fails.deadline, fails.unavailable, fails.unknown)
	if !ok {
		t.Fatalf("no call sent after the freeze succeeded (target: within %v)", frozenFirstOK)
	}
	t.Logf("first success of a call sent after the freeze: %v after it (target <= %v)",
		first.Sub(freeze).Round(time.Millisecond), frozenFirstOK)
	election := "no new leader seen while the old one was frozen"
	if !electedAt.IsZero() {
		election = fmt.Sprintf("a new leader was seen %v after the freeze, %v before the first success",
			electedAt.Sub(freeze).Round(time.Millisecond), first.Sub(electedAt).Round(time.Millisecond))
	}
	t.Logf("%s (status polled every 10ms)", election)

	if before == 0 {
		t.Fatal("no successful call before the freeze: the load did not run")
	}
	limit := frozenFirstOK
	if !electedAt.IsZero() && electedAt.Sub(freeze)+frozenFollow > limit {
		limit = electedAt.Sub(freeze) + frozenFollow
		t.Logf("the election alone took %v: the bound is %v, the election plus %v, instead of the target %v",
			electedAt.Sub(freeze).Round(time.Millisecond), limit.Round(time.Millisecond), frozenFollow, frozenFirstOK)
	}
	if d := first.Sub(freeze); d > limit {
		t.Errorf("first success %v after the freeze, want within %v (%s)", d.Round(time.Millisecond), limit.Round(time.Millisecond), election)
	}
	if during < frozenMinRatio*before {
		t.Errorf("%.0f calls/s while the leader was frozen, want at least %.0f%% of the %.0f calls/s before",
			during, 100*frozenMinRatio, before)
	}
}

// awaitNewLeader polls the nodes other than old until one of them says it
// leads, and returns when it saw that (zero if ctx ended first).
func (c *testCluster) awaitNewLeader(ctx context.Context, old *node) time.Time {
	cl, err := client.New(client.Config{Addrs: c.addrs(), Token: clientToken})
	if err != nil {
		return time.Time{}
	}
	defer func() { _ = cl.Close() }()
	for ctx.Err() == nil {
		for _, n := range c.nodes {
			if n == old {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			st, err := cl.NodeStatus(sctx, n.httpAddr)
			cancel()
			if err == nil && strings.EqualFold(st.State, "leader") {
				return time.Now()
			}
		}
		sleepCtx(ctx, 10*time.Millisecond)
	}
	return time.Time{}
}

// callLog records every call of the frozen-leader load: when it was sent,
// when it ended and how.
type callLog struct {
	mu    sync.Mutex
	calls []loggedCall
}

type loggedCall struct {
	worker     int
	start, end time.Time
	err        error
}

// call runs fn with a deadline of its own and records it, unless the
// load was stopped meanwhile.
func (l *callLog) call(ctx context.Context, worker int, d time.Duration, fn func(context.Context) error) {
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	err := fn(cctx)
	if ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	l.calls = append(l.calls, loggedCall{worker: worker, start: start, end: time.Now(), err: err})
	l.mu.Unlock()
}

// workersOK is how many workers have had a successful call.
func (l *callLog) workersOK() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var seen []int
	for _, c := range l.calls {
		if c.err == nil && !slices.Contains(seen, c.worker) {
			seen = append(seen, c.worker)
		}
	}
	return len(seen)
}

// okBetween counts the successful calls that ended in [from, to).
func (l *callLog) okBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.err == nil && !c.end.Before(from) && c.end.Before(to) {
			n++
		}
	}
	return n
}

// firstOKSentAfter is the earliest end of a successful call sent at or
// after t.
func (l *callLog) firstOKSentAfter(t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, c := range l.calls {
		if c.err == nil && !c.start.Before(t) && (first.IsZero() || c.end.Before(first)) {
			first = c.end
		}
	}
	return first, !first.IsZero()
}

type failCounts struct{ all, deadline, unavailable, unknown int }

// failsBetween counts the failed calls that ended in [from, to), by kind.
func (l *callLog) failsBetween(from, to time.Time) failCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	var f failCounts
	for _, c := range l.calls {
		if c.err == nil || c.end.Before(from) || !c.end.Before(to) {
			continue
		}
		f.all++
		switch {
		case errors.Is(c.err, context.DeadlineExceeded):
			f.deadline++
		case errors.Is(c.err, drivers.ErrUnavailable):
			f.unavailable++
			if errors.Is(c.err, drivers.ErrOutcomeUnknown) {
				f.unknown++
			}
		}
	}
	return f
}
