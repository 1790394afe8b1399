package integration

import (
	"context"
	"github.com/zerotal/lock/drivers"
	"math/rand/v2"
	"strings"
	"time"
)

// Retried waits in the mixed workload. The Go client retries a waiting
// acquire with the same owner through another node when a node fails it
// (a 503 from a follower shutting down, a connection reset, an attempt
// timeout), and callers time out while queued. The clients here (on
// top of the workload's ordinary ones) do both on purpose, through the
// raw HTTP API so that they choose the nodes and the moment: a waiting
// acquire through one node, given up after a short random time (the
// connection closes mid-wait, often while the holder releases, since
// holders here release quickly), then the same owner's wait again at once
// through another node. Under the nemesis's faults the first request's
// node is also killed, stopped or cut off now and then. The checker sees
// every request under the one owner, so a grant released behind the
// back of a retry that answered 200 shows as two holders.

// retryClients is how many such clients the mixed workload runs.
const retryClients = 4

// runRetrier runs retried-wait sessions for client id until ctx ends.
func (w *workload) runRetrier(ctx context.Context, id int) {
	r := rand.New(rand.NewPCG(w.seed, uint64(1000+id)))
	c := &workClient{w: w, id: id, r: r}
	for i := 0; i < w.maxOps && ctx.Err() == nil; i++ {
		c.retriedWaitSession(ctx)
	}
}

// rawWait sends one waiting acquire through node i, given up by the
// client (its connection closed) after giveUp.
func (c *workClient) rawWait(i int, key, owner string, ttl, wait, giveUp time.Duration, claim drivers.Claim) op {
	o := op{client: c.id, key: key, owner: owner, kind: opWait, ttl: ttl, wait: wait, via: nodeID(i), claim: claim}
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	o.start = c.w.h.now()
	ans, fence := c.w.api.acquireAs(ctx, c.w.addrs[i], key, owner, ttl, wait, claim)
	o.end = c.w.h.now()
	o.result, o.fence, o.err = ans.outcome(), fence, ans.errText()
	if ctx.Err() != nil {
		o.err = gaveUp + ": " + o.err
	}
	return c.w.h.add(o)
}

// rawRelease releases through node i.
func (c *workClient) rawRelease(i int, key, owner string) op {
	o := op{client: c.id, key: key, owner: owner, kind: opRelease, via: nodeID(i)}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o.start = c.w.h.now()
	ans, ok := c.w.api.release(ctx, c.w.addrs[i], key, owner)
	o.end = c.w.h.now()
	o.result, o.err = ans.outcome(), ans.errText()
	if o.result == resOK && !ok {
		o.result = resFail
	}
	return c.w.h.add(o)
}

// nodeID names node index i as the cluster does.
func nodeID(i int) string { return []string{"n1", "n2", "n3"}[i] }

// retriedWaitSession queues for a hot key through one node, gives up
// after a short while, retries at once with the same owner through
// another node, and, holding the key or not, releases it soon: the
// hand-offs on the hot keys then often meet an abandoned wait.
func (c *workClient) retriedWaitSession(ctx context.Context) {
	key, claim := c.hotKey()
	ttl := c.w.hotTTLs[c.r.IntN(len(c.w.hotTTLs))]
	owner := c.newOwner()
	first := c.r.IntN(len(c.w.addrs))
	wait := time.Duration(300+c.r.IntN(700)) * time.Millisecond
	r1 := c.rawWait(first, key, owner, ttl, wait, time.Duration(20+c.r.IntN(280))*time.Millisecond, claim)
	held := r1.result == resOK
	if r1.result == resUnknown && !strings.HasPrefix(r1.err, gaveUp) {
		sleepCtx(ctx, 20*time.Millisecond) // refused or reset at once
	}
	if r1.result == resUnknown {
		second := (first + 1 + c.r.IntN(len(c.w.addrs)-1)) % len(c.w.addrs)
		r2 := c.rawWait(second, key, owner, ttl, wait, wait+opTimeout, claim)
		held = r2.result == resOK
	}
	if held && !sleepCtx(ctx, time.Duration(c.r.Int64N(int64(ttl/4)))) {
		return // the run ends while held: it expires
	}
	// Released in every case: a wait given up may have been granted.
	for range 4 {
		if c.rawRelease(c.r.IntN(len(c.w.addrs)), key, owner).result != resUnknown {
			return
		}
		// A node down answers at once: do not spin through the fault.
		sleepCtx(ctx, 50*time.Millisecond)
	}
}
