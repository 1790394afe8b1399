package integration

import (
	"context"
	"fmt"
	"github.com/zerotal/lock/drivers"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// A retried wait: owner b queues for a key (request R1, server-side wait)
// through a follower, which forwards it to the leader. R1's connection
// then goes away — the client times out, the follower is killed, stopped
// or cut off from the leader — so the leader abandons R1 and proposes to
// take b out of the queue. Meanwhile b sends the same waiting acquire
// again (R2), same owner, through another node, as the Go client does on
// failover; and the holder releases, so the hand-off to b races with the
// cancel. Whatever the order, exactly one of these holds afterwards: b
// got the key and holds it until it releases, or b did not get it and
// knows so. The workload here steers rounds into that race (jitter of a
// few milliseconds between the release and the fault, on the scale of one
// raft commit) and the checker judges the history: two holders at once,
// fences out of order; and a retry that sat out its whole wait on a queue
// entry that was gone (stranded-retry).

// retryVariant is how R1's connection goes away.
type retryVariant string

const (
	// retryClientTimeout: the client gives up on R1 and closes its
	// connection (a client timeout), then retries through another node.
	retryClientTimeout retryVariant = "client-timeout"
	// retryCutForwarder: the forwarding follower's HTTP link to the leader
	// is cut (the proxy closes R1's forwarded connection).
	retryCutForwarder retryVariant = "cut-forwarder"
	// retryKillForwarder: the forwarding follower is killed (SIGKILL).
	retryKillForwarder retryVariant = "kill-forwarder"
	// retryStopForwarder: the forwarding follower is stopped (SIGSTOP);
	// the client times out and retries elsewhere; at SIGCONT the follower
	// sees its client gone and drops R1's forwarded connection.
	retryStopForwarder retryVariant = "stop-forwarder"
)

// retriedWaits drives rounds of the scenario above, one lane per key.
type retriedWaits struct {
	c   *faultCluster
	h   *history
	api *rawAPI
	seq atomic.Int64
	// only, when set, is the one variant of every round (the mixed
	// nemesis run, whose own faults cut links and stop nodes).
	only retryVariant
	// nodeFault is held by the round that kills or stops a follower, so
	// that one node fault is under way at a time.
	nodeFault sync.Mutex

	mu       sync.Mutex
	rounds   map[retryVariant]int
	skipped  map[string]int          // rounds not set up, by reason
	variant  map[string]retryVariant // owner -> variant of its round
	stranded []violation
}

// Timing of a round.
const (
	retryTTL    = 2 * time.Second
	retryWaitR1 = 4 * time.Second
	retryWaitR2 = 4 * time.Second
	retryWaitC  = 6 * time.Second
	retryHold   = 150 * time.Millisecond
	// retryMaxJitter spreads the fault around the holder's release over a
	// few raft commits, so that both orders of hand-off and cancel occur.
	retryMaxJitter = 8 * time.Millisecond
)

// TestNemesis_RetriedWaits runs rounds of retried waits (see above) on
// three keys and on sets of keys (see nemesis_retriedsets_test.go) at
// once for ZEROTAL_RETRIED_WAITS (default 30s) and fails on
// every violation the checker finds: two holders at overlapping times,
// fences out of order, a retry stranded on a queue entry that was gone.
func TestNemesis_RetriedWaits(t *testing.T) {
	length := 30 * time.Second
	if s := os.Getenv("ZEROTAL_RETRIED_WAITS"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("ZEROTAL_RETRIED_WAITS=%q: want a duration such as 60s", s)
		}
		length = d
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %v", seed, length)
	c := newFaultCluster(t)
	rw := newRetriedWaits(c, newHistory())
	t.Cleanup(rw.api.Close)
	ns, err := newNodeClients(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)

	ctx, cancel := context.WithTimeout(t.Context(), length)
	defer cancel()
	// The third lane's key is a read/write lock taken on its write side:
	// the same scenario through the shared entry type and its hand-offs.
	keys := []string{"retry/a", "retry/b", retryRWKey}
	errs := make(chan error, len(keys)+retrySetLanes)
	var wg sync.WaitGroup
	rw.runSetLanes(ctx, &wg, ns, seed, errs)
	for lane, key := range keys {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(lane)))
			for ctx.Err() == nil {
				if err := rw.round(ctx, lane, key, r); err != nil {
					errs <- fmt.Errorf("lane %d: %w", lane, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	ops := rw.h.snapshot()
	vs := slices.Concat(checkHistory(ops), rw.stranded)
	t.Logf("retried waits: %s", rw.summary(ops, vs))
	if dir := os.Getenv("ZEROTAL_NEMESIS_REPORT_DIR"); dir != "" {
		_ = os.WriteFile(dir+"/"+t.Name()+".history.txt", []byte(formatOps(ops)), 0o644)
	}
	if rw.total() < 10 {
		t.Errorf("only %d rounds ran: the workload did not reach the race", rw.total())
	}
	if len(vs) > 0 {
		t.Errorf("%d violations (seed %d), the first of each rule:\n%s", len(vs), seed, formatViolations(firstPerRule(vs, 6)))
	}
}

func newRetriedWaits(c *faultCluster, h *history) *retriedWaits {
	return &retriedWaits{c: c, h: h, api: newRawAPI(),
		rounds: map[retryVariant]int{}, variant: map[string]retryVariant{}}
}

// runMixedLane runs client-timeout rounds on one key of their own until
// ctx ends, beside the mixed workload and under the nemesis's faults; a
// round that finds no leader (a fault under way) is tried again later.
// Stranded retries are not judged here: a fault may hold a queue up.
func (rw *retriedWaits) runMixedLane(ctx context.Context, seed uint64) {
	rw.only = retryClientTimeout
	r := rand.New(rand.NewPCG(seed, 77))
	for ctx.Err() == nil {
		if err := rw.round(ctx, 1, "retry/mixed", r); err != nil {
			sleepCtx(ctx, 500*time.Millisecond)
		}
	}
}

func (rw *retriedWaits) total() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	n := 0
	for _, v := range rw.rounds {
		n += v
	}
	return n
}

// summary counts rounds and violations per variant, for the log.
func (rw *retriedWaits) summary(ops []op, vs []violation) string {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	perRule := map[string]int{}
	perVariant := map[string]int{}
	for _, v := range vs {
		perRule[v.rule]++
		seen := map[retryVariant]bool{}
		for _, o := range v.ops {
			if vr, ok := rw.variant[o.owner]; ok && !seen[vr] {
				seen[vr] = true
				perVariant[string(vr)]++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations; rounds:", len(ops))
	for _, k := range sortedKeys(rw.rounds) {
		fmt.Fprintf(&b, " %s %d", k, rw.rounds[k])
	}
	fmt.Fprintf(&b, " (skipped: node down %d, key taken %d, not queued %d); violations %d:",
		rw.skipped["node down"], rw.skipped["key taken"], rw.skipped["not queued"], len(vs))
	for _, k := range sortedKeys(perRule) {
		fmt.Fprintf(&b, " %s %d", k, perRule[k])
	}
	b.WriteString("; by variant:")
	for _, k := range sortedKeys(perVariant) {
		fmt.Fprintf(&b, " %s %d", k, perVariant[k])
	}
	return b.String()
}

// owner returns a fresh owner token of a round.
func (rw *retriedWaits) owner(role string, v retryVariant) string {
	o := fmt.Sprintf("%s%d", role, rw.seq.Add(1))
	rw.mu.Lock()
	rw.variant[o] = v
	rw.mu.Unlock()
	return o
}

// rec sends one request through node i and records it as an operation
// of client cl.
func (rw *retriedWaits) rec(cl int, o op, i int, fn func() (rawAnswer, uint64)) op {
	o.client = cl
	o.via = rw.c.nodes[i].id
	o.start = rw.h.now()
	ans, fence := fn()
	o.end = rw.h.now()
	o.result, o.fence, o.err = ans.outcome(), fence, ans.errText()
	return rw.h.add(o)
}

func (rw *retriedWaits) acquire(ctx context.Context, cl, i int, key, owner string, wait time.Duration) op {
	// Bounded even when the caller's ctx is not: a stopped node holds the
	// request until SIGCONT, no longer.
	ctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	claim := retryClaim(key)
	return rw.rec(cl, op{key: key, owner: owner, kind: opWait, ttl: retryTTL, wait: wait, claim: claim}, i, func() (rawAnswer, uint64) {
		return rw.api.acquireAs(ctx, rw.c.nodes[i].httpAddr, key, owner, retryTTL, wait, claim)
	})
}

// retryRWKey is the retried waits' read/write lock.
const retryRWKey = "retry/rw"

// retryClaim is how the retried waits hold key: retryRWKey on its write
// side, the others as mutexes.
func retryClaim(key string) drivers.Claim {
	if key == retryRWKey {
		return drivers.Claim{Kind: drivers.RWLock, Write: true}
	}
	return drivers.Claim{}
}

func (rw *retriedWaits) release(cl, i int, key, owner string) op {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return rw.rec(cl, op{key: key, owner: owner, kind: opRelease}, i, func() (rawAnswer, uint64) {
		ans, ok := rw.api.release(ctx, rw.c.nodes[i].httpAddr, key, owner)
		if ans.status == 200 && !ok {
			ans.status = 409 // "released": false is a definite no
		}
		return ans, 0
	})
}

// usable reports whether node i runs and is not stopped.
func (rw *retriedWaits) usable(i int) bool {
	rw.c.mu.Lock()
	paused := rw.c.paused[i]
	rw.c.mu.Unlock()
	return !paused && rw.c.nodes[i].running()
}

// round runs the scenario once on key. Lane 0 also kills and stops
// followers, as the set lanes do; the other lanes only time out and cut
// links. A kill or stop waits for none: while another lane's is under
// way (nodeFault) the round times out instead, so that one node fault is
// under way at a time.
func (rw *retriedWaits) round(ctx context.Context, lane int, key string, r *rand.Rand) error {
	c := rw.c
	l, err := c.leader(15 * time.Second)
	if err != nil {
		return err
	}
	fs := others(l)
	if r.IntN(2) == 0 {
		fs[0], fs[1] = fs[1], fs[0]
	}
	f, o := fs[0], fs[1]
	if !rw.usable(f) || !rw.usable(o) {
		rw.skip(ctx, "node down")
		return nil
	}
	variants := []retryVariant{retryClientTimeout, retryCutForwarder}
	if lane == 0 {
		variants = append(variants, retryKillForwarder, retryStopForwarder, retryStopForwarder)
	}
	v := variants[r.IntN(len(variants))]
	if rw.only != "" {
		v = rw.only
	}
	if v == retryKillForwarder || v == retryStopForwarder {
		if !rw.nodeFault.TryLock() {
			v = retryClientTimeout
		} else {
			defer rw.nodeFault.Unlock()
		}
	}
	// R2 and the third owner go through the leader or the other follower.
	r2Via, cVia := []int{l, o}[r.IntN(2)], []int{l, o}[r.IntN(2)]
	clA, clB, clC := 100+3*lane, 101+3*lane, 102+3*lane
	a, b, third := rw.owner("a", v), rw.owner("b", v), rw.owner("c", v)

	if got := rw.acquire(ctx, clA, l, key, a, retryWaitC); got.result != resOK {
		rw.release(clA, l, key, a)
		rw.skip(ctx, "key taken")
		return nil
	}
	// R1: b queues through the follower f.
	r1ctx, abandonR1 := context.WithCancel(ctx)
	defer abandonR1()
	r1Done := make(chan op, 1)
	go func() { r1Done <- rw.acquire(r1ctx, clB, f, key, b, retryWaitR1) }()
	if !rw.queued(ctx, l, key, 1) {
		abandonR1()
		<-r1Done
		rw.release(clA, l, key, a)
		rw.release(clB, l, key, b)
		rw.skip(ctx, "not queued")
		return nil
	}
	// The third owner queues behind b: it is the one a wrongly freed key
	// goes to.
	var wg sync.WaitGroup
	wg.Go(func() {
		got := rw.acquire(context.Background(), clC, cVia, key, third, retryWaitC)
		if got.result == resOK {
			schedule(retryHold) // holding the lock
		}
		rw.release(clC, cVia, key, third)
	})
	rw.queued(ctx, l, key, 2)

	r2Done := make(chan op, 1)
	sendR2 := func() {
		go func() { r2Done <- rw.acquire(context.Background(), clB, r2Via, key, b, retryWaitR2) }()
	}
	releaseA := func() { wg.Go(func() { rw.release(clA, l, key, a) }) }
	jitter := time.Duration(r.Int64N(int64(retryMaxJitter)))
	retryFirst := r.IntN(2) == 0
	link := c.links[f][l][1] // f's HTTP forwarding to the leader
	switch v {
	case retryStopForwarder:
		c.pause(f, true)
		abandonR1()                     // the client times out on the stopped node...
		sendR2()                        // ...and retries elsewhere, while R1 lives on at the leader
		schedule(20 * time.Millisecond) // R2 reaches the leader first
		releaseA()
		schedule(jitter)
		c.pause(f, false) // f drops R1's forwarded connection now
	default:
		if retryFirst {
			sendR2()
			schedule(20 * time.Millisecond) // R2 reaches the leader first
		}
		releaseA()
		schedule(jitter)
		switch v {
		case retryClientTimeout:
			abandonR1()
		case retryCutForwarder:
			link.Cut()
		case retryKillForwarder:
			c.nodes[f].kill()
		}
		if !retryFirst {
			sendR2()
		}
	}
	r1 := <-r1Done
	if v == retryCutForwarder {
		link.Heal()
	}
	r2 := <-r2Done
	// b acts on what it learnt: a 200 (from either request) means it holds
	// the lock; it gives the lock back after a while, and releases in any
	// case, as the Go client does after a wait it abandoned.
	if r1.result == resOK || r2.result == resOK {
		schedule(retryHold)
	}
	rw.release(clB, r2Via, key, b)
	wg.Wait()
	if r2.result == resFail && r2.end-r2.start >= retryWaitR2 {
		rw.mu.Lock()
		rw.stranded = append(rw.stranded, violation{rule: "stranded-retry", key: key,
			msg: fmt.Sprintf("%s's retried wait sat out its whole %v and got 409, though it was first in the queue", b, retryWaitR2),
			ops: []op{r1, r2}})
		rw.mu.Unlock()
	}
	if v == retryKillForwarder {
		c.start(c.nodes[f])
		if err := rw.waitServing(f, 20*time.Second); err != nil {
			return err
		}
	}
	rw.mu.Lock()
	rw.rounds[v]++
	rw.mu.Unlock()
	return nil
}

// skip counts a round that could not be set up (a node down, the key
// still taken, b not queued in time) and pauses a little before the
// next try.
func (rw *retriedWaits) skip(ctx context.Context, reason string) {
	rw.mu.Lock()
	if rw.skipped == nil {
		rw.skipped = map[string]int{}
	}
	rw.skipped[reason]++
	rw.mu.Unlock()
	sleepCtx(ctx, 50*time.Millisecond)
}

// queued polls the leader until key has at least n waiters (2s at most).
func (rw *retriedWaits) queued(ctx context.Context, l int, key string, n int) bool {
	got := 0
	poll.Wait(2*time.Second, func() bool {
		if ctx.Err() != nil {
			return true // the round is over: stop asking
		}
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		got = rw.api.waiters(rctx, rw.c.nodes[l].httpAddr, key)
		cancel()
		return got >= n
	})
	return got >= n && ctx.Err() == nil
}

// waitServing polls node i's status until it answers.
func (rw *retriedWaits) waitServing(i int, timeout time.Duration) error {
	if poll.Wait(timeout, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		st, err := rw.c.admin.NodeStatus(ctx, rw.c.nodes[i].httpAddr)
		cancel()
		return err == nil && st.LeaderID != ""
	}) {
		return nil
	}
	return fmt.Errorf("%s did not serve again within %v after its restart", rw.c.nodes[i].id, timeout)
}

// schedule waits d as part of a round's schedule (how long a holder
// holds, where a fault falls): timing the workload chooses, never a wait
// for something to have happened; the checker judges whatever order the
// cluster took.
func schedule(d time.Duration) { time.Sleep(d) }

// firstPerRule keeps the first n violations of each rule, so that every
// rule shows an example.
func firstPerRule(vs []violation, n int) []violation {
	seen := map[string]int{}
	var out []violation
	for _, v := range vs {
		if seen[v.rule] < n {
			seen[v.rule]++
			out = append(out, v)
		}
	}
	return out
}
