package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// workload drives several clients against the cluster and records every
// operation. Two kinds of keys:
//
//   - hot keys, short TTLs (1-2 s): acquire (plain or with a short
//     server-side wait), hold while refreshing, release — or vanish
//     without releasing, so expiry happens, also under faults. Checked by
//     properties 1 and 2.
//   - several hot keys at once (acquire-all, at once or waiting FIFO
//     for the whole set), each recorded as an acquire of its key with
//     its own fence, so properties 1 and 2 hold per key: a grant of the
//     set never overlaps a holder of any of its keys.
//   - durable keys, a TTL far longer than the run: plain acquires, short
//     holds, releases, reads. Nothing expires there, so porcupine checks
//     them against the sequential lock model; the holders still holding
//     when the workload stops are checked after a full restart
//     (property 3). Each client also has a key of its own, with the same
//     TTL, that it keeps across many sessions and often still holds when
//     the run ends.
//
// Besides, retriers clients queue for hot keys, give up and retry with
// the same owner through another node (nemesis_retrywork_test.go).
type workload struct {
	clients     int
	retriers    int
	api         *rawAPI // the retriers' raw HTTP, set by run
	hotKeys     []string
	hotTTLs     []time.Duration
	durableKeys []string
	durableTTL  time.Duration
	// sharedKeys are hot keys held as a semaphore or a read/write lock
	// (a write side is drawn per session).
	sharedKeys map[string]drivers.Claim
	// maxOps bounds each client's operations; the context bounds the time.
	maxOps int
	addrs  []string
	h      *history
	seq    atomic.Int64
	// vanishRate is the share of hot-key holders that never release.
	vanishRate float64
	// seed makes the clients' choices repeatable (the cluster's timing
	// is not).
	seed uint64
}

func newWorkload(addrs []string, h *history) *workload {
	return &workload{
		clients:     6,
		retriers:    retryClients,
		hotKeys:     []string{"hot/a", "hot/b", "hot/c"},
		hotTTLs:     []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second},
		durableKeys: []string{"durable/a", "durable/b", "durable/c", "durable/d"},
		durableTTL:  10 * time.Minute,
		sharedKeys: map[string]drivers.Claim{
			"shared/sem": {Kind: drivers.Semaphore, Limit: 2},
			"shared/rw":  {Kind: drivers.RWLock},
		},
		maxOps:     100000,
		addrs:      addrs,
		h:          h,
		vanishRate: 0.15,
	}
}

// gaveUp starts the error of a waiting acquire that ran out of time.
const gaveUp = "gave up waiting"

// opTimeout bounds one client call (failover and retries included).
const opTimeout = 3 * time.Second

// run starts the clients and returns when ctx ends and every client has
// finished its last operation.
func (w *workload) run(ctx context.Context) error {
	clients := make([]*client.Client, w.clients)
	for id := range clients {
		cfg := client.Config{Addrs: w.addrs, Token: clientToken, Timeout: opTimeout}
		if id%2 == 1 {
			// Half the clients wait in short chunks, each but the last
			// keeping its place for the next (keep_ms): the kept places
			// then meet every fault too.
			cfg.WaitChunk = 100 * time.Millisecond
		}
		cl, err := client.New(cfg)
		if err != nil {
			for _, c := range clients[:id] {
				_ = c.Close()
			}
			return err
		}
		clients[id] = cl
	}
	var wg sync.WaitGroup
	w.api = newRawAPI()
	defer w.api.Close()
	for k := range w.retriers {
		wg.Go(func() { w.runRetrier(ctx, 200+k) })
	}
	for id, cl := range clients {
		wg.Go(func() {
			defer func() { _ = cl.Close() }()
			r := rand.New(rand.NewPCG(w.seed, uint64(id)))
			c := &workClient{w: w, id: id, cl: cl, r: r}
			for i := 0; i < w.maxOps && ctx.Err() == nil; i++ {
				switch x := r.Float64(); {
				case x < 0.05:
					c.keepSession()
				case x < 0.5:
					c.hotSession(ctx)
				case x < 0.6:
					c.multiSession(ctx)
				default:
					c.durableSession(ctx)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// workClient is one client of the workload.
type workClient struct {
	w  *workload
	id int
	cl *client.Client
	r  *rand.Rand
	// keeper is the owner holding this client's own key, "" when free.
	keeper string
}

// keepKey is client id's own long-TTL key.
func keepKey(id int) string { return fmt.Sprintf("durable/keep-c%d", id) }

// longKeys are the keys whose TTL outlasts the run: the shared durable
// keys and every client's own key.
func (w *workload) longKeys() []string {
	out := slices.Clone(w.durableKeys)
	for id := range w.clients {
		out = append(out, keepKey(id))
	}
	return out
}

func (c *workClient) newOwner() string {
	return fmt.Sprintf("c%d-%d", c.id, c.w.seq.Add(1))
}

// record runs fn as one operation and adds it to the history.
func (c *workClient) record(o op, fn func(ctx context.Context) (outcome, uint64, string, error)) op {
	o.client = c.id
	o.start = c.w.h.now()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+time.Second)
	res, fence, holder, err := fn(ctx)
	cancel()
	o.end = c.w.h.now()
	o.result, o.fence, o.holder = res, fence, holder
	if err != nil {
		o.result = resUnknown
		o.err = shortErr(err)
	}
	return c.w.h.add(o)
}

// shortErr keeps an error readable in a history line.
func shortErr(err error) string {
	s := err.Error()
	if errors.Is(err, drivers.ErrUnavailable) {
		s = "unavailable: " + s
	}
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}

func (c *workClient) acquire(key, owner string, ttl time.Duration) op {
	return c.acquireAs(key, owner, ttl, drivers.Claim{})
}

// acquireAs is acquire of a mutex (zero claim) or of a shared key.
func (c *workClient) acquireAs(key, owner string, ttl time.Duration, claim drivers.Claim) op {
	return c.record(op{key: key, owner: owner, kind: opAcquire, ttl: ttl, claim: claim}, func(ctx context.Context) (outcome, uint64, string, error) {
		var fence uint64
		var ok bool
		var err error
		if claim == (drivers.Claim{}) {
			fence, ok, err = driverstest.Take(ctx, c.cl, key, owner, ttl)
		} else {
			fence, ok, _, err = driverstest.TakeShared(ctx, c.cl, key, owner, ttl, claim)
		}
		if !ok {
			return resFail, 0, "", err
		}
		return resOK, fence, "", err
	})
}

// acquireWait queues for key for at most wait (the server holds the
// request); not getting the lock in time is a definite "fail" only when
// the server said so, otherwise unknown.
func (c *workClient) acquireWait(key, owner string, ttl, wait time.Duration, claim drivers.Claim) op {
	return c.record(op{key: key, owner: owner, kind: opWait, ttl: ttl, claim: claim}, func(ctx context.Context) (outcome, uint64, string, error) {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		var fence uint64
		var err error
		if claim == (drivers.Claim{}) {
			fence, err = driverstest.TakeWait(wctx, c.cl, key, owner, ttl, drivers.WaitOptions{})
		} else {
			fence, err = driverstest.TakeSharedWait(wctx, c.cl, key, owner, ttl, claim, drivers.WaitOptions{})
		}
		if err != nil && wctx.Err() != nil && ctx.Err() == nil {
			// The client gives up by cancelling its context, and then
			// releases what may have been granted meanwhile: unknown.
			return resUnknown, 0, "", fmt.Errorf("%s: %w", gaveUp, err)
		}
		if err != nil {
			return resUnknown, 0, "", err
		}
		return resOK, fence, "", nil
	})
}

func (c *workClient) extend(key, owner string, ttl time.Duration) op {
	return c.record(op{key: key, owner: owner, kind: opExtend, ttl: ttl}, func(ctx context.Context) (outcome, uint64, string, error) {
		ok, err := c.cl.Extend(ctx, key, owner, ttl)
		if !ok {
			return resFail, 0, "", err
		}
		return resOK, 0, "", err
	})
}

func (c *workClient) release(key, owner string) op {
	return c.record(op{key: key, owner: owner, kind: opRelease}, func(ctx context.Context) (outcome, uint64, string, error) {
		ok, err := c.cl.Release(ctx, key, owner)
		if !ok {
			return resFail, 0, "", err
		}
		return resOK, 0, "", err
	})
}

func (c *workClient) get(key string) op {
	return c.record(op{key: key, kind: opGet}, func(ctx context.Context) (outcome, uint64, string, error) {
		info, found, err := c.cl.Get(ctx, key)
		if !found {
			return resFail, 0, "", err
		}
		return resOK, info.Fence, info.Owner, err
	})
}

// releaseUntilKnown releases, again while the answer is unknown (each try
// recorded), at most a few times.
func (c *workClient) releaseUntilKnown(key, owner string) {
	for range 4 {
		if c.release(key, owner).result != resUnknown {
			return
		}
	}
}

// sleepCtx waits d or until ctx ends; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// hotSession takes a hot key, holds it while refreshing, and releases it
// or vanishes.
func (c *workClient) hotSession(ctx context.Context) {
	key, claim := c.hotKey()
	ttl := c.w.hotTTLs[c.r.IntN(len(c.w.hotTTLs))]
	owner := c.newOwner()
	var got op
	if c.r.IntN(2) == 0 {
		got = c.acquireAs(key, owner, ttl, claim)
	} else {
		got = c.acquireWait(key, owner, ttl, time.Duration(100+c.r.IntN(400))*time.Millisecond, claim)
	}
	if !c.took(ctx, got.result) {
		return
	}
	release := c.holdRefreshing(ctx, ttl, func() outcome {
		if c.r.IntN(4) == 0 {
			return c.acquireAs(key, owner, ttl, claim).result // a refresh: same owner
		}
		return c.extend(key, owner, ttl).result
	})
	if release {
		c.releaseUntilKnown(key, owner)
	}
}

// took reports whether a session's acquire, answered r, took its lock;
// after a refusal the session pauses a moment first.
func (c *workClient) took(ctx context.Context, r outcome) bool {
	if r == resFail {
		sleepCtx(ctx, time.Duration(c.r.IntN(50))*time.Millisecond)
	}
	return r == resOK
}

// holdRefreshing holds what a session took for up to twice ttl,
// refreshing it every ttl/3, and reports whether the session then
// releases it. refresh answers resFail when the hold is lost (nothing to
// release), resUnknown to give it up early. No release either when the
// run ends (vanish), or for a holder that crashed (vanishRate): the lock
// expires.
func (c *workClient) holdRefreshing(ctx context.Context, ttl time.Duration, refresh func() outcome) (release bool) {
	deadline := time.Now().Add(time.Duration(c.r.Int64N(int64(2 * ttl))))
	for time.Now().Before(deadline) {
		if !sleepCtx(ctx, min(ttl/3, time.Until(deadline))) {
			return false
		}
		switch refresh() {
		case resFail:
			return false
		case resUnknown:
			deadline = time.Now()
		}
	}
	return c.r.Float64() >= c.w.vanishRate
}

// hotKey draws a hot key: a mutex, or, a third of the time, a shared key
// with its claim (a read/write lock's write side one time in three).
func (c *workClient) hotKey() (string, drivers.Claim) {
	if len(c.w.sharedKeys) == 0 || c.r.IntN(3) > 0 {
		return c.w.hotKeys[c.r.IntN(len(c.w.hotKeys))], drivers.Claim{}
	}
	keys := make([]string, 0, len(c.w.sharedKeys))
	for k := range c.w.sharedKeys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	key := keys[c.r.IntN(len(keys))]
	claim := c.w.sharedKeys[key]
	claim.Write = claim.Kind == drivers.RWLock && c.r.IntN(3) == 0
	return key, claim
}

// durableSession reads a durable key or takes it for a short while; a
// holder still holding when the run ends keeps its lock (for the restart
// check).
func (c *workClient) durableSession(ctx context.Context) {
	key := c.w.durableKeys[c.r.IntN(len(c.w.durableKeys))]
	if c.r.IntN(4) == 0 {
		c.get(key)
		return
	}
	owner := c.newOwner()
	got := c.acquire(key, owner, c.w.durableTTL)
	switch got.result {
	case resFail:
		sleepCtx(ctx, time.Duration(c.r.IntN(50))*time.Millisecond)
		return
	case resUnknown:
		// It may have been granted: give it back, or the key stays taken
		// for the whole TTL.
		c.releaseUntilKnown(key, owner)
		return
	}
	if !sleepCtx(ctx, time.Duration(c.r.IntN(300))*time.Millisecond) {
		return // the run ends while held
	}
	if c.r.IntN(3) == 0 {
		c.extend(key, owner, c.w.durableTTL)
	}
	if c.r.IntN(3) == 0 {
		c.get(key)
	}
	c.releaseUntilKnown(key, owner)
}

// newReadClient is a client like the workload's, for the checks.
func newReadClient(addrs []string) (*client.Client, error) {
	return client.New(client.Config{Addrs: addrs, Token: clientToken, Timeout: opTimeout})
}

// keepSession takes the client's own key, or refreshes or releases it.
func (c *workClient) keepSession() {
	key := keepKey(c.id)
	if c.keeper == "" {
		owner := c.newOwner()
		switch c.acquire(key, owner, c.w.durableTTL).result {
		case resOK:
			c.keeper = owner
		case resUnknown:
			c.releaseUntilKnown(key, owner)
		}
		return
	}
	if c.r.IntN(3) == 0 {
		c.releaseUntilKnown(key, c.keeper)
		c.keeper = ""
		return
	}
	if c.extend(key, c.keeper, c.w.durableTTL).result == resFail {
		c.keeper = "" // lost: the checker will say how
	}
}

// acquireAll takes keys together (waiting up to wait, FIFO for the whole
// set, when wait > 0). It is recorded as one operation per key, with the
// call's start, end and outcome and that key's fence.
func (c *workClient) acquireAll(keys []string, owner string, ttl, wait time.Duration) []op {
	kind := opAcquire
	if wait > 0 {
		kind = opWait
	}
	start := c.w.h.now()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+time.Second)
	res, fences, err := resFail, []uint64(nil), error(nil)
	if wait > 0 {
		wctx, wcancel := context.WithTimeout(ctx, wait)
		fences, err = driverstest.TakeAllWait(wctx, c.cl, keys, owner, ttl, drivers.WaitOptions{})
		if err != nil && wctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%s: %w", gaveUp, err)
		}
		wcancel()
		if err == nil {
			res = resOK
		}
	} else {
		var ok bool
		fences, ok, _, err = driverstest.TakeAll(ctx, c.cl, keys, owner, ttl)
		if ok {
			res = resOK
		}
	}
	cancel()
	end := c.w.h.now()
	out := make([]op, len(keys))
	for i, k := range keys {
		o := op{client: c.id, key: k, owner: owner, kind: kind, ttl: ttl, start: start, end: end, result: res}
		if res == resOK {
			o.fence = fences[i]
		}
		if err != nil {
			o.result, o.err = resUnknown, shortErr(err)
		}
		out[i] = c.w.h.add(o)
	}
	return out
}

// multiSession takes two hot mutex keys together, holds them while
// refreshing each, and releases them or vanishes.
func (c *workClient) multiSession(ctx context.Context) {
	keys := slices.Clone(c.w.hotKeys)
	c.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:2]
	ttl := c.w.hotTTLs[c.r.IntN(len(c.w.hotTTLs))]
	owner := c.newOwner()
	var wait time.Duration
	if c.r.IntN(2) == 0 {
		wait = time.Duration(100+c.r.IntN(400)) * time.Millisecond
	}
	if got := c.acquireAll(keys, owner, ttl, wait); !c.took(ctx, got[0].result) {
		return
	}
	release := c.holdRefreshing(ctx, ttl, func() outcome {
		held := resOK
		for _, k := range keys {
			if c.extend(k, owner, ttl).result != resOK {
				held = resUnknown // lost or unknown: give the set up, releasing the rest
			}
		}
		return held
	})
	if !release {
		return
	}
	for _, k := range keys {
		c.releaseUntilKnown(k, owner)
	}
}
