package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// floodClient is an HTTP client for many concurrent requests to one node.
func floodClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

// answer is a decoded API answer.
type answer struct {
	status     int
	code, msg  string
	retryAfter string
	err        error
}

func postAcquire(ctx context.Context, hc *http.Client, addr, key, owner string, ttl, wait time.Duration) answer {
	body := fmt.Sprintf(`{"key":%q,"owner":%q,"ttl_ms":%d,"wait_ms":%d}`, key, owner, ttl.Milliseconds(), wait.Milliseconds())
	return postRaw(ctx, hc, addr, "/v1/acquire", body)
}

func postRaw(ctx context.Context, hc *http.Client, addr, path, body string) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	_ = json.Unmarshal(raw, &eb)
	return answer{status: resp.StatusCode, code: eb.Code, msg: eb.Message, retryAfter: resp.Header.Get("Retry-After")}
}

// heapInUse is the live heap plus goroutine stacks after a full GC.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// The node holds at most MaxWaits waiting acquires; the next one is
// answered 429 "full" at once, while acquires without a wait, reads and
// releases go on being served, and a slot frees when a wait ends.
func TestLimits_WaitCapAnswers429(t *testing.T) {
	nodes := startCluster(t, 1, func(c *Config) { c.MaxWaits = 4 })
	addr := nodes[0].HTTPAddr()
	hc := floodClient(t)
	ctx := t.Context()
	if a := postAcquire(ctx, hc, addr, "hot", "holder", time.Minute, 0); a.status != http.StatusOK {
		t.Fatalf("holder: %+v", a)
	}
	waitCtx, cancelWaits := context.WithCancel(ctx)
	var wg sync.WaitGroup
	results := make(chan answer, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- postAcquire(waitCtx, hc, addr, "hot", fmt.Sprintf("w%d", i), time.Minute, 30*time.Second)
		}()
	}
	c := newClient(t)
	waitFor(t, 10*time.Second, "four queued waiters", func() bool { return c.get(addr, "hot").num("waiters") == 4 })

	a := postAcquire(ctx, hc, addr, "other", "w5", time.Minute, 30*time.Second)
	if a.status != http.StatusTooManyRequests || a.code != api.CodeFull || !strings.Contains(a.msg, "MaxWaits") || a.retryAfter == "" {
		t.Fatalf("fifth wait: %+v, want 429 full naming MaxWaits with Retry-After", a)
	}
	if a := postAcquire(ctx, hc, addr, "other", "quick", time.Minute, 0); a.status != http.StatusOK {
		t.Fatalf("acquire without a wait while waits are full: %+v", a)
	}
	// An oversized body that asks to wait still gets the plain 413.
	huge := fmt.Sprintf(`{"wait_ms":1000,"key":%q}`, strings.Repeat("x", httpapi.MaxBodyBytes))
	if a := postRaw(ctx, hc, addr, "/v1/acquire", huge); a.status != http.StatusRequestEntityTooLarge || a.code != api.CodeTooLarge {
		t.Fatalf("oversized waiting acquire: %+v, want 413", a)
	}
	// The first waiter gets the key; its slot frees.
	if a := postRaw(ctx, hc, addr, "/v1/release", `{"key":"hot","owner":"holder"}`); a.status != http.StatusOK {
		t.Fatalf("release: %+v", a)
	}
	if got := <-results; got.status != http.StatusOK {
		t.Fatalf("first waiter: %+v", got)
	}
	if a := postAcquire(ctx, hc, addr, "free", "w6", time.Minute, time.Second); a.status != http.StatusOK {
		t.Fatalf("a wait after a slot freed: %+v", a)
	}
	cancelWaits()
	wg.Wait()
}

// A follower counts the waiting acquires it forwards against its own
// MaxWaits: past it, the follower itself answers 429 (naming itself),
// without a hop to the leader.
func TestLimits_WaitCapCountsOnAFollower(t *testing.T) {
	nodes := startCluster(t, 3, func(c *Config) { c.MaxWaits = 1 })
	leader := waitLeader(t, nodes)
	follower := followers(nodes, leader)[0]
	hc := floodClient(t)
	ctx := t.Context()
	if a := postAcquire(ctx, hc, leader.HTTPAddr(), "hot", "holder", time.Minute, 0); a.status != http.StatusOK {
		t.Fatalf("holder: %+v", a)
	}
	waitCtx, cancelWait := context.WithCancel(ctx)
	waited := make(chan answer, 1)
	go func() {
		waited <- postAcquire(waitCtx, hc, follower.HTTPAddr(), "hot", "w1", time.Minute, 30*time.Second)
	}()
	c := newClient(t)
	waitFor(t, 10*time.Second, "the forwarded waiter to queue", func() bool { return c.get(leader.HTTPAddr(), "hot").num("waiters") == 1 })
	a := postAcquire(ctx, hc, follower.HTTPAddr(), "other", "w2", time.Minute, 30*time.Second)
	if a.status != http.StatusTooManyRequests || a.code != api.CodeFull || !strings.Contains(a.msg, "node "+follower.ID()+" ") {
		t.Fatalf("second wait at the follower: %+v, want 429 full from %s itself", a, follower.ID())
	}
	cancelWait()
	<-waited
}

// A flood of distinct keys fills the table to MaxKeys and no further: the
// rest are refused with a clear ErrFull, the node keeps serving, and the
// heap stops growing at the limit.
func TestLimits_DistinctKeyFloodIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of raft commits")
	}
	const maxKeys, workers = 2000, 16
	nodes := startCluster(t, 1, func(c *Config) { c.MaxKeys = maxKeys })
	addr := nodes[0].HTTPAddr()
	hc := floodClient(t)
	ctx := t.Context()
	owner := strings.Repeat("o", 32)

	flood := func(from, count int) (ok, full int64) {
		var next atomic.Int64
		next.Store(int64(from))
		var wg sync.WaitGroup
		var failed atomic.Value
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(from+count) {
						return
					}
					a := postAcquire(ctx, hc, addr, fmt.Sprintf("flood/key-%08d", i), owner, time.Hour, 0)
					switch {
					case a.status == http.StatusOK:
						atomic.AddInt64(&ok, 1)
					case a.status == http.StatusTooManyRequests && a.code == api.CodeFull:
						atomic.AddInt64(&full, 1)
					default:
						failed.Store(fmt.Sprintf("key %d: %+v", i, a))
						return
					}
				}
			}()
		}
		wg.Wait()
		if f := failed.Load(); f != nil {
			t.Fatalf("unexpected answer in the flood: %v", f)
		}
		return ok, full
	}

	before := heapInUse()
	ok, full := flood(0, maxKeys+200)
	if ok != maxKeys || full != 200 {
		t.Fatalf("first flood: %d granted, %d refused; want %d and 200", ok, full, maxKeys)
	}
	atLimit := heapInUse()
	ok, full = flood(maxKeys+200, 3*maxKeys)
	if ok != 0 || full != 3*maxKeys {
		t.Fatalf("flood past the limit: %d granted, %d refused; want 0 and %d", ok, full, 3*maxKeys)
	}
	after := heapInUse()
	perKey := (int64(atLimit) - int64(before)) / maxKeys
	t.Logf("heap: %d KB before, %d KB at %d keys (~%d B per key, log cache included), %d KB after %d refused acquires",
		before>>10, atLimit>>10, maxKeys, perKey, after>>10, 3*maxKeys)
	if grown := int64(after) - int64(atLimit); grown > 8<<20 {
		t.Fatalf("heap grew by %d KB while every acquire was refused", grown>>10)
	}
	if perKey > 8<<10 {
		t.Fatalf("%d B of heap per key", perKey)
	}

	// Still serving: status, the real client's error, refresh, release and
	// a new key in the freed place.
	c := newClient(t)
	if r := c.do(addr, "GET", "/v1/status", nil); r.Status != http.StatusOK || r.num("keys") != maxKeys {
		t.Fatalf("status at the limit: %s", r.Raw)
	}
	cl, err := client.New(client.Config{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, _, err = driverstest.Take(ctx, cl, "one-more", "o", time.Minute)
	if !errors.Is(err, drivers.ErrFull) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("client acquire at the limit: %v, want ErrFull", err)
	}
	if _, ok, err := driverstest.Take(ctx, cl, "flood/key-00000000", owner, time.Hour); err != nil || !ok {
		t.Fatalf("refresh of a held key at the limit: ok %v err %v", ok, err)
	}
	if released, err := cl.Release(ctx, "flood/key-00000001", owner); err != nil || !released {
		t.Fatalf("release at the limit: %v %v", released, err)
	}
	if _, ok, err := driverstest.Take(ctx, cl, "one-more", "o", time.Minute); err != nil || !ok {
		t.Fatalf("acquire after a release made room: ok %v err %v", ok, err)
	}
}

// A flood of waiters on one key: the queue stops at MaxWaitersPerKey and
// the open waits at MaxWaits; every other request is refused at once with
// 429, the node keeps serving other keys, and memory stays bounded.
func TestLimits_WaiterFloodOnOneKeyIsBounded(t *testing.T) {
	const queue, open, flood = 50, 100, 400
	nodes := startCluster(t, 1, func(c *Config) { c.MaxWaitersPerKey = queue; c.MaxWaits = open })
	addr := nodes[0].HTTPAddr()
	hc := floodClient(t)
	ctx := t.Context()
	if a := postAcquire(ctx, hc, addr, "hot", "holder", time.Minute, 0); a.status != http.StatusOK {
		t.Fatalf("holder: %+v", a)
	}
	before := heapInUse()
	waitCtx, cancelWaits := context.WithCancel(ctx)
	defer cancelWaits()
	var wg sync.WaitGroup
	var refused, other atomic.Int64
	var lastOther atomic.Value
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := postAcquire(waitCtx, hc, addr, "hot", fmt.Sprintf("waiter-%d", i), time.Minute, time.Minute)
			switch {
			case a.status == http.StatusTooManyRequests && a.code == api.CodeFull:
				refused.Add(1)
			case waitCtx.Err() != nil:
				// cancelled at the end of the test
			default:
				other.Add(1)
				lastOther.Store(fmt.Sprintf("%+v", a))
			}
		}()
	}
	c := newClient(t)
	waitFor(t, 30*time.Second, "every waiter beyond the queue to be refused", func() bool {
		return refused.Load()+other.Load() == flood-queue
	})
	if n := other.Load(); n != 0 {
		t.Fatalf("%d waiters got another answer than 429 full, e.g. %v", n, lastOther.Load())
	}
	if w := c.get(addr, "hot").num("waiters"); w != queue {
		t.Fatalf("%d waiters queued, want %d", w, queue)
	}
	during := heapInUse()
	t.Logf("heap and stacks: %d KB before, %d KB with %d waits open and %d refused", before>>10, during>>10, queue, flood-queue)
	if grown := int64(during) - int64(before); grown > 32<<20 {
		t.Fatalf("heap grew by %d KB for %d open waits", grown>>10, queue)
	}
	if r := c.acquire(addr, "elsewhere", "o", time.Minute, 0); r.Status != http.StatusOK {
		t.Fatalf("another key during the flood: %s", r.Raw)
	}
	if r := c.do(addr, "GET", "/v1/status", nil); r.Status != http.StatusOK {
		t.Fatalf("status during the flood: %s", r.Raw)
	}
	cancelWaits()
	wg.Wait()
	waitFor(t, 20*time.Second, "the abandoned waits to leave the queue", func() bool {
		return c.get(addr, "hot").num("waiters") == 0
	})
}

// Each input limit holds at its boundary over HTTP: the largest allowed
// value is served, one more is refused with a message naming the field
// and the limit.
func TestLimits_InputBoundariesOverHTTP(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	addr := nodes[0].HTTPAddr()
	hc := floodClient(t)
	ctx := t.Context()
	week := drivers.MaxTTL
	cases := []struct {
		name        string
		key, owner  string
		ttl         time.Duration
		status      int
		field, more string
	}{
		{"longest key", strings.Repeat("k", drivers.MaxKeyLen), "o", time.Second, http.StatusOK, "", ""},
		{"key one byte over", strings.Repeat("k", drivers.MaxKeyLen+1), "o", time.Second, http.StatusBadRequest, "key", "1024"},
		{"longest owner", "owner-limit", strings.Repeat("o", drivers.MaxOwnerLen), time.Second, http.StatusOK, "", ""},
		{"owner one byte over", "owner-limit-2", strings.Repeat("o", drivers.MaxOwnerLen+1), time.Second, http.StatusBadRequest, "owner", "1024"},
		{"shortest ttl", "ttl-1", "o", time.Millisecond, http.StatusOK, "", ""},
		{"longest ttl", "ttl-2", "o", week, http.StatusOK, "", ""},
		{"ttl one ms over", "ttl-3", "o", week + time.Millisecond, http.StatusBadRequest, "ttl_ms", "out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := postAcquire(ctx, hc, addr, tc.key, tc.owner, tc.ttl, 0)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %+v", a.status, tc.status, a)
			}
			if tc.status != http.StatusOK && (a.code != api.CodeInvalid || !strings.Contains(a.msg, tc.field) || !strings.Contains(a.msg, tc.more)) {
				t.Fatalf("answer %+v: want code invalid naming %q and %q", a, tc.field, tc.more)
			}
		})
	}
	// A body just under the limit is read (and refused for its content);
	// one byte over is 413.
	pad := func(n int) string {
		head := `{"key":"k","owner":"o","ttl_ms":1000,"pad":"`
		return head + strings.Repeat("x", n-len(head)-2) + `"}`
	}
	if a := postRaw(ctx, hc, addr, "/v1/acquire", pad(httpapi.MaxBodyBytes)); a.status != http.StatusBadRequest || !strings.Contains(a.msg, "pad") {
		t.Fatalf("body at the limit: %+v, want 400 for the unknown field", a)
	}
	if a := postRaw(ctx, hc, addr, "/v1/acquire", pad(httpapi.MaxBodyBytes+1)); a.status != http.StatusRequestEntityTooLarge || a.code != api.CodeTooLarge {
		t.Fatalf("body one byte over: %+v, want 413", a)
	}
}
