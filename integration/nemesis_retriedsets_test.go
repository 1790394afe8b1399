package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
)

// The retried waits of a set: owner b waits for two or three keys
// together (request R1, one waiting entry that takes the free keys at
// once and queues b for the busy one) through a follower, through the Go
// client. R1's connection goes away as in a single key's round (client
// timeout, cut link, killed or stopped forwarder) while b sends the same
// set again (R2, its keys in another order) through another node and the
// busy key's holder releases. R1's clean-up at the leader must then
// release only what no request of b returned: the keys R1 took at once
// are the ones R2 returns as refreshes, and a third owner waits for
// exactly those, so a key freed under b's feet goes to it while b still
// believes it holds the key, which the checker sees as two holders.

// retryEarly: R2 follows R1 by a few milliseconds, as the holder's
// release does, so that R1's entry, the release and R2's entry may be
// committed in one batch: R2 then returns the keys R1 took at once before
// R1 has read that it took them, and R1 is abandoned the moment R2
// answers (its client has what it asked for), so its clean-up follows.
// A set lane's variant only.
const retryEarly retryVariant = "early-retry"

// retrySetKeys are the set lanes' keys; the lanes' sets overlap.
var retrySetKeys = []string{"retry/set/a", "retry/set/b", "retry/set/c", "retry/set/d", "retry/set/e"}

// retrySetLanes is how many set lanes run beside the single keys' lanes.
const retrySetLanes = 2

// nodeClients are Go clients of one node each, so that the workload
// chooses the node a request goes through and the client does not fail
// over on its own.
type nodeClients []*client.Client

func newNodeClients(c *faultCluster) (nodeClients, error) {
	out := make(nodeClients, len(c.nodes))
	for i, n := range c.nodes {
		cl, err := client.New(client.Config{Addrs: []string{n.httpAddr}, Token: clientToken, Timeout: opTimeout})
		if err != nil {
			out.Close()
			return nil, err
		}
		out[i] = cl
	}
	return out, nil
}

func (ns nodeClients) Close() {
	for _, cl := range ns {
		if cl != nil {
			_ = cl.Close()
		}
	}
}

// acquireSet waits up to wait for keys together through node i's client
// and records one operation per key, with the call's start, end and
// outcome and that key's fence. The owner is reused (R2 follows R1), so
// the client leaves an abandoned wait's keys to the round's release.
func (rw *retriedWaits) acquireSet(ctx context.Context, ns nodeClients, cl, i int, keys []string, owner string, wait time.Duration) []op {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req := drivers.Request{Keys: keys, Owner: owner, TTL: retryTTL, Wait: true,
		WaitOptions: drivers.WaitOptions{OwnerReused: true}}
	start := rw.h.now()
	g, err := ns[i].Acquire(ctx, req)
	end := rw.h.now()
	out := make([]op, len(keys))
	for j, k := range keys {
		o := op{client: cl, via: rw.c.nodes[i].id, key: k, owner: owner, kind: opWait,
			ttl: retryTTL, wait: wait, start: start, end: end, result: resOK}
		switch {
		case err == nil && g.Acquired:
			o.fence = g.Fences[j]
		case errors.Is(err, drivers.ErrNotAcquired):
			o.result, o.err = resFail, shortErr(err)
		default:
			// A cancelled or cut wait: the client cannot say.
			o.result, o.err = resUnknown, shortErr(cmpErr(err))
		}
		out[j] = rw.h.add(o)
	}
	return out
}

// cmpErr is err, or one saying a wait answered without every key.
func cmpErr(err error) error {
	if err == nil {
		return errors.New("answered without the keys")
	}
	return err
}

// releaseSet releases every key of owner through node i.
func (rw *retriedWaits) releaseSet(cl, i int, keys []string, owner string) {
	for _, k := range keys {
		rw.release(cl, i, k, owner)
	}
}

// setRound runs the scenario above once on a set of two or three of
// retrySetKeys. A round that would kill or stop a follower while another
// lane does falls back to a client timeout (one node fault at a time).
func (rw *retriedWaits) setRound(ctx context.Context, ns nodeClients, lane int, r *rand.Rand) error {
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
	variants := []retryVariant{retryClientTimeout, retryCutForwarder, retryKillForwarder, retryStopForwarder}
	v := variants[r.IntN(len(variants))]
	if r.IntN(3) == 0 {
		v = retryEarly
	}
	if v == retryKillForwarder || v == retryStopForwarder {
		if !rw.nodeFault.TryLock() {
			v = retryClientTimeout
		} else {
			defer rw.nodeFault.Unlock()
		}
	}
	keys := slices.Clone(retrySetKeys)
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:2+r.IntN(2)]
	busy := r.IntN(len(keys))
	// The keys R1 takes at once: the third owner waits for them.
	atOnce := slices.Delete(slices.Clone(keys), busy, busy+1)
	retried := slices.Clone(keys)
	r.Shuffle(len(retried), func(i, j int) { retried[i], retried[j] = retried[j], retried[i] })

	r2Via, cVia := []int{l, o}[r.IntN(2)], []int{l, o}[r.IntN(2)]
	clA, clB, clC := 200+3*lane, 201+3*lane, 202+3*lane
	sv := "set/" + v
	a, b, third := rw.owner("sa", sv), rw.owner("sb", sv), rw.owner("sc", sv)

	if got := rw.acquire(ctx, clA, l, keys[busy], a, retryWaitC); got.result != resOK {
		rw.release(clA, l, keys[busy], a)
		rw.skip(ctx, "key taken")
		return nil
	}
	r1ctx, abandonR1 := context.WithCancel(ctx)
	defer abandonR1()
	r1Done := make(chan []op, 1)
	go func() { r1Done <- rw.acquireSet(r1ctx, ns, clB, f, keys, b, retryWaitR1) }()
	if v == retryEarly {
		rw.earlyRetry(r, ns, lane, l, r2Via, cVia, keys, atOnce, retried, busy, a, b, third, abandonR1, r1Done)
		rw.mu.Lock()
		rw.rounds[retryVariant(sv)]++
		rw.mu.Unlock()
		return nil
	}
	if !rw.queued(ctx, l, keys[busy], 1) {
		abandonR1()
		<-r1Done
		rw.release(clA, l, keys[busy], a)
		rw.releaseSet(clB, l, keys, b)
		rw.skip(ctx, "not queued")
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		got := rw.acquireSet(context.Background(), ns, clC, cVia, atOnce, third, retryWaitC)
		if got[0].result == resOK {
			schedule(retryHold) // holding the keys
		}
		rw.releaseSet(clC, cVia, atOnce, third)
	})
	rw.queued(ctx, l, atOnce[0], 1)

	r2Done := make(chan []op, 1)
	sendR2 := func() {
		go func() { r2Done <- rw.acquireSet(context.Background(), ns, clB, r2Via, retried, b, retryWaitR2) }()
	}
	releaseA := func() { wg.Go(func() { rw.release(clA, l, keys[busy], a) }) }
	jitter := time.Duration(r.Int64N(int64(retryMaxJitter)))
	link := c.links[f][l][1] // f's HTTP forwarding to the leader
	switch v {
	case retryStopForwarder:
		c.pause(f, true)
		abandonR1()
		sendR2()
		schedule(20 * time.Millisecond) // R2 reaches the leader first
		releaseA()
		schedule(jitter)
		c.pause(f, false)
	default:
		retryFirst := r.IntN(2) == 0
		if retryFirst {
			sendR2()
			schedule(20 * time.Millisecond)
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
	if r1[0].result == resOK || r2[0].result == resOK {
		schedule(retryHold)
	}
	rw.releaseSet(clB, r2Via, keys, b)
	wg.Wait()
	if v == retryKillForwarder {
		c.start(c.nodes[f])
		if err := rw.waitServing(f, 20*time.Second); err != nil {
			return err
		}
	}
	rw.mu.Lock()
	rw.rounds[retryVariant(sv)]++
	rw.mu.Unlock()
	return nil
}

// runSetLanes runs retrySetLanes lanes of set rounds until ctx ends and
// sends each lane's error to errs.
func (rw *retriedWaits) runSetLanes(ctx context.Context, wg *sync.WaitGroup, ns nodeClients, seed uint64, errs chan<- error) {
	for lane := range retrySetLanes {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(100+lane)))
			for ctx.Err() == nil {
				if err := rw.setRound(ctx, ns, lane, r); err != nil {
					errs <- fmt.Errorf("set lane %d: %w", lane, err)
					return
				}
			}
		})
	}
}

// earlyRetry is the rest of a retryEarly round, once R1 is sent: the
// release of the busy key and R2 a few milliseconds later (on the scale
// of R1's forwarding), R1 abandoned as soon as R2 answers, and the third
// owner sent then for the keys R1 took at once, while b holds them.
func (rw *retriedWaits) earlyRetry(r *rand.Rand, ns nodeClients, lane, l, r2Via, cVia int, keys, atOnce, retried []string, busy int, a, b, third string, abandonR1 func(), r1Done <-chan []op) {
	clA, clB, clC := 200+3*lane, 201+3*lane, 202+3*lane
	schedule(time.Duration(r.Int64N(int64(retryMaxJitter))))
	var wg sync.WaitGroup
	wg.Go(func() { rw.release(clA, l, keys[busy], a) })
	schedule(time.Duration(r.Int64N(int64(2 * time.Millisecond))))
	r2 := rw.acquireSet(context.Background(), ns, clB, r2Via, retried, b, retryWaitR2)
	abandonR1()
	wg.Go(func() {
		got := rw.acquireSet(context.Background(), ns, clC, cVia, atOnce, third, retryWaitC)
		if got[0].result == resOK {
			schedule(retryHold)
		}
		rw.releaseSet(clC, cVia, atOnce, third)
	})
	r1 := <-r1Done
	if r1[0].result == resOK || r2[0].result == resOK {
		schedule(retryHold)
	}
	rw.releaseSet(clB, r2Via, keys, b)
	wg.Wait()
}
