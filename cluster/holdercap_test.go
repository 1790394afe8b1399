package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
)

// The holders of one key count towards --max-keys: a node run with
// --max-keys 10 --max-waiters 10 grants 10 reads of one key, not 20,000
// (the review's node took 20,000, 37 MB, 10 s of its engine's time). A
// semaphore above the holder cap is refused as invalid, and a reader
// beyond a node's cap meets a busy key.
func TestLimits_HoldersOfOneKeyAreBounded(t *testing.T) {
	nodes := startCluster(t, 1, func(c *Config) { c.MaxKeys, c.MaxWaitersPerKey = 10, 10 })
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	read := func(key, owner string) reply {
		return c.do(addr, "POST", api.PathAcquire, map[string]any{"key": key, "owner": owner, "ttl_ms": 60000, "mode": api.ModeRead})
	}
	for i := range 10 {
		mustStatus(t, read("k", fmt.Sprint("r", i)), http.StatusOK, fmt.Sprint("reader ", i))
	}
	if r := read("k", "r10"); r.Status != http.StatusTooManyRequests || r.str("code") != api.CodeFull {
		t.Fatalf("reader 11 with --max-keys 10 = %d %s, want 429 full", r.Status, r.Raw)
	}
	if got := len(c.get(addr, "k").Body["holders"].([]any)); got != 10 {
		t.Fatalf("%d holders, want 10", got)
	}
	sem := map[string]any{"key": "s", "owner": "o", "ttl_ms": 60000, "semaphore": drivers.MaxHolders + 1}
	if r := c.do(addr, "POST", api.PathAcquire, sem); r.Status != http.StatusBadRequest || r.str("code") != api.CodeInvalid {
		t.Fatalf("a semaphore of %d = %d %s, want 400 invalid", drivers.MaxHolders+1, r.Status, r.Raw)
	}
}

// A node's --max-holders lowers the cap: the next reader is a 409 (or
// waits), a semaphore above it a 400.
func TestLimits_NodeHolderCap(t *testing.T) {
	nodes := startCluster(t, 1, func(c *Config) { c.MaxHoldersPerKey = 5 })
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	for i := range 5 {
		r := c.do(addr, "POST", api.PathAcquire, map[string]any{"key": "k", "owner": fmt.Sprint("r", i), "ttl_ms": 60000, "mode": api.ModeRead})
		mustStatus(t, r, http.StatusOK, fmt.Sprint("reader ", i))
	}
	r := c.do(addr, "POST", api.PathAcquire, map[string]any{"key": "k", "owner": "r5", "ttl_ms": 60000, "mode": api.ModeRead})
	if r.Status != http.StatusConflict {
		t.Fatalf("reader 6 with --max-holders 5 = %d %s, want 409 (the key is busy)", r.Status, r.Raw)
	}
	r = c.do(addr, "POST", api.PathAcquire, map[string]any{"key": "s", "owner": "o", "ttl_ms": 60000, "semaphore": 6})
	if r.Status != http.StatusBadRequest || r.str("code") != api.CodeInvalid || !strings.Contains(r.str("message"), "5 holders") {
		t.Fatalf("a semaphore of 6 with --max-holders 5 = %d %s, want 400 invalid naming the cap", r.Status, r.Raw)
	}
}

// A GET of a key at the holder cap, with a full queue behind it and the
// longest owners JSON can make of 1 KiB (every byte escaped to six),
// fits one answer of the API stream: the table's own record of such a
// key, as the node answers it, framed as the stream frames it.
func TestLimits_GetAtTheHolderCapFitsTheStream(t *testing.T) {
	e, err := engine.NewReplicated(engine.Config{MaxWaitersPerKey: DefaultMaxWaitersPerKey, MaxHoldersPerKey: DefaultMaxHoldersPerKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const now = int64(1_000_000_000)
	key := strings.Repeat("\x01", drivers.MaxKeyLen)
	owner := func(i int) string {
		id := fmt.Sprint(i)
		return id + strings.Repeat("\x01", drivers.MaxOwnerLen-len(id))
	}
	var cmds []engine.Command
	for i := range DefaultMaxHoldersPerKey + 1 + DefaultMaxWaitersPerKey {
		c := engine.Command{Op: engine.OpAcquireKeys, Keys: []string{key}, Owner: owner(i), TTL: time.Minute, Now: now, Wait: true, Claim: engine.Claim{Kind: engine.RWLock}}
		if i == DefaultMaxHoldersPerKey {
			c.Claim.Write = true // the queue's head, so the readers behind it wait
		}
		cmds = append(cmds, c)
	}
	// One more reader, not waiting, before the writer queues: the key is
	// full, so it is refused as contention.
	extra := engine.Command{Op: engine.OpAcquireKeys, Keys: []string{key}, Owner: "extra", TTL: time.Minute, Now: now, Claim: engine.Claim{Kind: engine.RWLock}}
	cmds = slices.Insert(cmds, DefaultMaxHoldersPerKey, extra)
	res, err := e.Apply(t.Context(), cmds)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[DefaultMaxHoldersPerKey]; r.OK || r.Queued || r.Err != nil {
		t.Fatalf("reader %d = %+v, want refused as contention: the key is at its holder cap", DefaultMaxHoldersPerKey+1, r)
	}
	res = slices.Delete(res, DefaultMaxHoldersPerKey, DefaultMaxHoldersPerKey+1)
	for i, r := range res {
		switch {
		case i < DefaultMaxHoldersPerKey && !r.OK, i == DefaultMaxHoldersPerKey && !r.Queued,
			i > DefaultMaxHoldersPerKey && i < DefaultMaxHoldersPerKey+DefaultMaxWaitersPerKey && !r.Queued:
			t.Fatalf("acquire %d: %+v", i, r)
		case i == DefaultMaxHoldersPerKey+DefaultMaxWaitersPerKey && r.Err == nil:
			t.Fatalf("acquire %d: %+v, want the waiter limit", i, r)
		}
	}
	in, ok, err := e.Get(t.Context(), key)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	lock, held := heldLock(in, now)
	if !held || len(lock.Holders) != DefaultMaxHoldersPerKey || len(lock.Queue) != DefaultMaxWaitersPerKey {
		t.Fatalf("%d holders and %d waiters, want %d and %d", len(lock.Holders), len(lock.Queue), DefaultMaxHoldersPerKey, DefaultMaxWaitersPerKey)
	}
	var body bytes.Buffer
	if err := json.NewEncoder(&body).Encode(lock); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.AppendAnswer(nil, stream.Answer{ID: 1 << 62, Status: http.StatusOK, Body: body.Bytes()}); err != nil {
		t.Fatalf("a GET at the cap (%d bytes) does not fit one stream answer (%d): %v", body.Len(), stream.MaxAnswer, err)
	}
	t.Logf("a GET at the cap: %d bytes, %.0f%% of the stream's answer limit", body.Len(), 100*float64(body.Len())/stream.MaxAnswer)
}
