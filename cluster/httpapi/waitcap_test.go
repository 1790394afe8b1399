package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
)

// holdAcquires makes every Acquire of s wait, once it has started, until
// the returned release is called; started receives one value per call.
func holdAcquires(s *fakeStore) (started <-chan struct{}, release func()) {
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	s.acquired = func() {
		in <- struct{}{}
		<-gate
	}
	return in, func() { close(gate) }
}

// The wait cap counts the waiting acquires a follower forwards, not only
// those it serves: past MaxWaits the next one is answered 429 at once,
// while acquires without a wait still pass, and the slot frees when the
// wait ends.
func TestWaitCap_CountsOnAFollowerThatForwards(t *testing.T) {
	p := newPair(t, httpapi.Options{MaxWaits: 1})
	started, release := holdAcquires(p.leader)
	first := make(chan answer, 1)
	go func() {
		first <- do(p.follower, "POST", api.PathAcquire, `{"key":"a","owner":"w1","ttl_ms":1000,"wait_ms":60000}`)
	}()
	<-started // the first wait holds the follower's only slot, at the leader
	a := do(p.follower, "POST", api.PathAcquire, `{"key":"b","owner":"w2","ttl_ms":1000,"wait_ms":60000}`)
	if a.status != http.StatusTooManyRequests || a.err.Code != api.CodeFull || !strings.Contains(a.err.Message, "node n2") ||
		!strings.Contains(a.err.Message, "MaxWaits") || a.header.Get("Retry-After") != "1" {
		t.Fatalf("second wait: %d %s (Retry-After %q), want 429 full naming n2 and MaxWaits", a.status, a.raw, a.header.Get("Retry-After"))
	}
	// A bad waiting acquire is refused for what it is: the cap comes
	// after the decode and the checks.
	a = do(p.follower, "POST", api.PathAcquire, `{"key":"b","owner":"w2","ttl_ms":-1,"wait_ms":60000}`)
	mustStatus(t, a, http.StatusBadRequest, "a bad waiting acquire while the cap is full")
	release()
	mustStatus(t, <-first, http.StatusOK, "the first wait")
	// Acquires without a wait pass whatever the cap; the freed slot takes
	// the next wait (the leader's Acquire no longer blocks).
	mustStatus(t, do(p.follower, "POST", api.PathAcquire, `{"key":"c","owner":"o","ttl_ms":1000}`), http.StatusOK, "an acquire without a wait")
	mustStatus(t, do(p.follower, "POST", api.PathAcquire, `{"key":"d","owner":"o","ttl_ms":1000,"wait_ms":10}`), http.StatusOK, "a wait after the slot freed")
}

// On the node that serves it, the cap holds the same way; Unlimited
// means none.
func TestWaitCap_Local(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxWaits int
		want     int
	}{{"capped", 1, http.StatusTooManyRequests}, {"unlimited", -1, http.StatusOK}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeStore()
			h := newHandler(s, httpapi.Options{NodeID: "n1", MaxWaits: tc.maxWaits})
			started, release := holdAcquires(s)
			first := make(chan answer, 1)
			go func() {
				first <- do(h, "POST", api.PathAcquire, `{"key":"a","owner":"w1","ttl_ms":1000,"wait_ms":60000}`)
			}()
			<-started
			second := make(chan answer, 1)
			go func() {
				second <- do(h, "POST", api.PathAcquire, `{"key":"b","owner":"w2","ttl_ms":1000,"wait_ms":60000}`)
			}()
			if tc.want == http.StatusOK {
				<-started // the second wait got in too
			} else {
				mustStatus(t, <-second, tc.want, "second wait")
			}
			release()
			mustStatus(t, <-first, http.StatusOK, "first wait")
			if tc.want == http.StatusOK {
				mustStatus(t, <-second, http.StatusOK, "second wait")
			}
		})
	}
}
