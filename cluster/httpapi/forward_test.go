package httpapi_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
)

// seen is a request as the leader received it.
type seen struct {
	path, forwardedBy string
	body              []byte
}

// recorder wraps the leader's handler and records what reaches it.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []seen
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, seen{path: req.URL.Path, forwardedBy: req.Header.Get(api.HeaderForwardedBy), body: body})
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.next.ServeHTTP(w, req)
}

func (r *recorder) seen() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

// pair is a leader served over loopback and a follower, in process,
// that forwards to it.
type pair struct {
	leader        *fakeStore
	atLeader      *recorder
	follower      http.Handler
	followerStore *fakeStore
}

func newPair(t *testing.T, followerOpts httpapi.Options) *pair {
	t.Helper()
	p := &pair{leader: newFakeStore("n1", "n2")}
	p.atLeader = &recorder{next: newHandler(p.leader, httpapi.Options{NodeID: "n1"})}
	srv := httptest.NewServer(p.atLeader)
	t.Cleanup(srv.Close)
	p.followerStore = newFakeStore("n1", "n2")
	p.followerStore.setLeader(strings.TrimPrefix(srv.URL, "http://"), nil)
	followerOpts.NodeID = "n2"
	if followerOpts.Transport == nil {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		followerOpts.Transport = tr
	}
	p.follower = newHandler(p.followerStore, followerOpts)
	return p
}

// A follower forwards a checked request to the leader with the bytes it
// was sent and its own id in X-Lock-Forwarded-By; the leader's answer is
// the client's.
func TestForward_FollowerProxiesTheRawBodyOnce(t *testing.T) {
	p := newPair(t, httpapi.Options{})
	body := `{"key":"k", "owner":"o","ttl_ms":1000}` // odd spacing: the very bytes travel
	a := do(p.follower, "POST", api.PathAcquire, body)
	mustStatus(t, a, http.StatusOK, "acquire through the follower")
	got := p.atLeader.seen()
	if len(got) != 1 || got[0].path != api.PathAcquire || got[0].forwardedBy != "n2" || string(got[0].body) != body {
		t.Fatalf("the leader saw %+v; want one acquire forwarded by n2 with the body %q", got, body)
	}
	if p.leader.keys() != 1 || p.followerStore.keys() != 0 {
		t.Fatalf("keys: leader %d, follower %d; want the grant on the leader only", p.leader.keys(), p.followerStore.keys())
	}
	a = do(p.follower, "GET", api.PathLock+"?key=k", "")
	mustStatus(t, a, http.StatusOK, "get through the follower")
	if !strings.Contains(string(a.raw), `"owner":"o"`) {
		t.Fatalf("get through the follower: %s", a.raw)
	}
}

// A follower refuses a bad request itself: the leader never sees it.
func TestForward_BadRequestsAreRefusedWithoutAHop(t *testing.T) {
	p := newPair(t, httpapi.Options{})
	for _, tc := range []struct{ method, path, body string }{
		{"POST", api.PathAcquire, `{"key":"k","owner":"o","ttl_ms":0}`},
		{"POST", api.PathRelease, `{"key":"","owner":"o"}`},
		{"POST", api.PathLeave, `{"id":""}`},
		{"POST", api.PathAcquire, `{"key":"k","owner":"o","ttl_ms":1000,"pad":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`},
		{"GET", api.PathLocks + "?limit=0", ""},
	} {
		a := do(p.follower, tc.method, tc.path, tc.body)
		if a.status != http.StatusBadRequest && a.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s %s: status %d, want 400 or 413; body %s", tc.method, tc.path, a.status, a.raw)
		}
	}
	if got := p.atLeader.seen(); len(got) != 0 {
		t.Fatalf("the leader saw %d refused requests: %+v", len(got), got)
	}
}

// A request that was already forwarded once is not forwarded again by a
// node that does not lead either: 503, retry.
func TestForward_OneHopOnly(t *testing.T) {
	p := newPair(t, httpapi.Options{})
	a := do(p.follower, "POST", api.PathRelease, `{"key":"k","owner":"o"}`, api.HeaderForwardedBy, "n3")
	mustStatus(t, a, http.StatusServiceUnavailable, "a forwarded request at a follower")
	if a.err.Code != api.CodeUnavailable || !strings.Contains(a.err.Message, "forwarded by n3") || a.header.Get("Retry-After") == "" {
		t.Fatalf("answer %s (Retry-After %q): want unavailable naming n3, with Retry-After", a.raw, a.header.Get("Retry-After"))
	}
	if got := p.atLeader.seen(); len(got) != 0 {
		t.Fatalf("forwarded twice: the leader saw %+v", got)
	}
}

// A leader that cannot be reached, or no leader at all, is a 503.
func TestForward_NoLeaderIsUnavailable(t *testing.T) {
	p := newPair(t, httpapi.Options{})
	p.followerStore.setLeader("127.0.0.1:1", nil) // nothing listens on port 1
	a := do(p.follower, "POST", api.PathRelease, `{"key":"k","owner":"o"}`)
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.err.Message, "forward to leader 127.0.0.1:1") {
		t.Fatalf("unreachable leader: %d %s, want 503 naming it", a.status, a.raw)
	}
	p.followerStore.setLeader("", drivers.Unavailable("forward", errors.New("no leader known")))
	a = do(p.follower, "GET", api.PathLocks, "")
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.err.Message, "no leader known") {
		t.Fatalf("no leader: %d %s, want 503", a.status, a.raw)
	}
}
