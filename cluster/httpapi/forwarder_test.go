package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// headerTap records the headers of the requests that pass through it.
type headerTap struct {
	next http.Handler
	mu   sync.Mutex
	last http.Header
}

func (h *headerTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.last = r.Header.Clone()
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

// A follower's proof of a certificate credential holds for the request
// it was made for, once, and for a short time only: replayed to the
// leader with another body, on another path, a second time, or after
// ForwardProofWindow, it is refused 401 and the refusal logged. Before,
// the proof covered the credential and the request line only, so one
// captured acquire admitted any body on that path, for ever.
func TestForwardProof_BindsTheRequestOnceWithinTheWindow(t *testing.T) {
	key := []byte("forward-raft-secret-0123456789")
	set := roleSet(t, "worker-7 client jobs/ cn:worker-7")
	creds := func() *access.Set { return set }
	var logged syncbuf.Buffer
	leaderStore := newFakeStore("n1", "n2")
	leader := newHandler(leaderStore, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: creds, ForwardKey: key, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	tap := &headerTap{next: leader}
	srv := httptest.NewServer(tap)
	defer srv.Close()
	followerStore := newFakeStore("n1", "n2")
	followerStore.setLeader(strings.TrimPrefix(srv.URL, "http://"), nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	follower := newHandler(followerStore, httpapi.Options{NodeID: "n2", ClusterID: "c1", Credentials: creds, ForwardKey: key, Transport: tr})

	const body = `{"key":"jobs/1","owner":"o","ttl_ms":60000}`
	if a := serve(follower, httpRequestWithCN(t, "POST", api.PathAcquire, body, "worker-7")); a.status != http.StatusOK {
		t.Fatalf("acquire by certificate through the follower: %d %s", a.status, a.raw)
	}
	tap.mu.Lock()
	captured := tap.last
	tap.mu.Unlock()
	if captured.Get(api.HeaderCredentialProof) == "" {
		t.Fatal("the follower sent no proof")
	}
	replay := func(method, path, body string) answer {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		for _, h := range []string{api.HeaderCredential, api.HeaderCredentialProof, api.HeaderForwardedBy} {
			req.Header.Set(h, captured.Get(h))
		}
		return serve(leader, req)
	}
	for _, tc := range []struct{ what, method, path, body string }{
		{"another body", "POST", api.PathAcquire, `{"key":"jobs/2","owner":"o","ttl_ms":60000}`},
		{"another path", "POST", api.PathRelease, body},
		{"the same request again", "POST", api.PathAcquire, body},
	} {
		if a := replay(tc.method, tc.path, tc.body); a.status != http.StatusUnauthorized {
			t.Fatalf("the captured proof replayed with %s: %d %s, want 401", tc.what, a.status, a.raw)
		}
	}

	// A proof made now is good now, and not ForwardProofWindow later.
	now := time.Now()
	httpapi.SetForwardClock(func() time.Time { return now })
	defer httpapi.SetForwardClock(nil)
	if a := serve(follower, httpRequestWithCN(t, "POST", api.PathAcquire, body, "worker-7")); a.status != http.StatusOK {
		t.Fatalf("a second acquire through the follower: %d %s", a.status, a.raw)
	}
	tap.mu.Lock()
	captured = tap.last
	tap.mu.Unlock()
	now = now.Add(httpapi.ForwardProofWindow + time.Second)
	if a := replay("POST", api.PathAcquire, body); a.status != http.StatusUnauthorized {
		t.Fatalf("the proof replayed after the window: %d %s, want 401", a.status, a.raw)
	}
	// A read sent with a body it does not need: forwarded without it.
	if a := serve(follower, httpRequestWithCN(t, "GET", api.PathLock+"?key=jobs/1", "ignored", "worker-7")); a.status != http.StatusOK {
		t.Fatalf("a read with a body by certificate through the follower: %d %s", a.status, a.raw)
	}
	for _, want := range []string{"another request", "a replay", "outside the 10s window"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the leader's log does not say %q:\n%s", want, logged.String())
		}
	}
}
