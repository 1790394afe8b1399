package cluster

import (
	"net/http"
	"testing"
	"time"
)

// A set that waits with a cap on total hold time counts the cap from the
// moment it holds its last key, as its TTL (driverstest's Model, and
// every other backend): the key it takes at once is held, with its first
// fence, past that key's grant plus the cap while the set waits for the
// other (kept alive every second, its TTL being three), and once
// the other is handed over both keys are capped from then.
func TestCluster_SetWaitCapStartsWhenTheSetCompletes(t *testing.T) {
	_, leader, c := startLedCluster(t, 3)
	addr := leader.HTTPAddr()
	const capd = 4 * time.Second
	mustStatus(t, c.acquire(addr, "y", "h", time.Minute, 0), http.StatusOK, "acquire y")

	done := make(chan reply, 1)
	go func() {
		done <- c.do(addr, "POST", "/v1/acquire", map[string]any{"keys": []string{"x", "y"}, "owner": "set",
			"ttl_ms": (3 * time.Second).Milliseconds(), "max_hold_ms": capd.Milliseconds(), "wait_ms": (30 * time.Second).Milliseconds()})
	}()
	waitFor(t, 10*time.Second, "the set to queue for y", func() bool { return isWaiter(leader, "y", "set") })
	first := c.get(addr, "x")
	mustStatus(t, first, http.StatusOK, "x once the set queued for y")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(capd + time.Second); time.Now().Before(end); <-tick.C {
		if got := c.get(addr, "x"); got.str("owner") != "set" || got.Body["fence"] != first.Body["fence"] {
			t.Fatalf("x while the set waits for y, past x's grant plus the cap: %d %s; was %s", got.Status, got.Raw, first.Raw)
		}
	}

	mustStatus(t, c.release(addr, "y", "h"), http.StatusOK, "release y")
	r := <-done
	mustStatus(t, r, http.StatusOK, "the set, once y is handed to it")
	if locks, _ := r.Body["locks"].([]any); len(locks) != 2 || locks[0].(map[string]any)["fence"] != first.Body["fence"] {
		t.Fatalf("the set's answer %s; x was taken with fence %v", r.Raw, first.Body["fence"])
	}
	for _, k := range []string{"x", "y"} {
		ext := c.do(addr, "POST", "/v1/extend", map[string]any{"key": k, "owner": "set", "ttl_ms": time.Minute.Milliseconds()})
		mustStatus(t, ext, http.StatusOK, "extend "+k)
		if !ext.flag("extended") {
			t.Fatalf("extend %s after the set completed: %s", k, ext.Raw)
		}
		got := c.get(addr, k)
		if left := time.Duration(got.num("remaining_ms")) * time.Millisecond; got.str("owner") != "set" || left > capd || left < capd/2 {
			t.Fatalf("%s extended by a minute after the set completed: %s; want it held to its cap, %v from the completion", k, got.Raw, capd)
		}
	}
}
