package httpapi_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
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

// overTLSAs serves next as if every connection presented a verified
// client certificate for cn (what a node's TLS listener would see).
func overTLSAs(cn string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}
		next.ServeHTTP(w, r)
	})
}

// memberByCN stands in for the node's check (cluster's checkForwarder): a
// connection is the member id's when its certificate's CN is id.
func memberByCN(id string, conn *tls.ConnectionState) error {
	if conn == nil || len(conn.VerifiedChains) == 0 {
		return errors.New("no verified client certificate")
	}
	if cn := conn.VerifiedChains[0][0].Subject.CommonName; cn != id {
		return fmt.Errorf("the connection is %s's, not %s's", cn, id)
	}
	return nil
}

// A follower forwards a certificate credential by name on its own
// connection to the leader, which takes the name only from the member
// that forwarded it (Options.Forwarder). The headers replayed by anyone
// else, a client certificate that sends them itself, or a member that
// names another as the forwarder are refused 401, and every refusal is
// logged with why. Before, the name travelled with an HMAC keyed by the
// raft secret: a cluster with TLS and no raft secret could not forward it.
func TestForwarder_CredentialTakenFromTheForwardingMemberOnly(t *testing.T) {
	set := roleSet(t, "worker-7 client jobs/ cn:worker-7", "admin operator * cn:admin")
	creds := func() *access.Set { return set }
	var logged syncbuf.Buffer
	leaderStore := newFakeStore("n1", "n2")
	leader := newHandler(leaderStore, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: creds, Forwarder: memberByCN,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	tap := &headerTap{next: leader}
	srv := httptest.NewServer(overTLSAs("n2", tap))
	defer srv.Close()
	followerStore := newFakeStore("n1", "n2")
	followerStore.setLeader(strings.TrimPrefix(srv.URL, "http://"), nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	follower := newHandler(followerStore, httpapi.Options{NodeID: "n2", ClusterID: "c1", Credentials: creds, Forwarder: memberByCN, Transport: tr})

	const body = `{"key":"jobs/1","owner":"o","ttl_ms":60000}`
	if a := serve(follower, httpRequestWithCN(t, "POST", api.PathAcquire, body, "worker-7")); a.status != http.StatusOK {
		t.Fatalf("acquire by certificate through the follower: %d %s", a.status, a.raw)
	}
	tap.mu.Lock()
	captured := tap.last
	tap.mu.Unlock()
	if captured.Get(api.HeaderCredential) != "worker-7" || captured.Get(api.HeaderForwardedBy) != "n2" {
		t.Fatalf("the follower forwarded headers %v", captured)
	}
	// A read sent with a body it does not need: forwarded without it.
	if a := serve(follower, httpRequestWithCN(t, "GET", api.PathLock+"?key=jobs/1", "ignored", "worker-7")); a.status != http.StatusOK {
		t.Fatalf("a read with a body by certificate through the follower: %d %s", a.status, a.raw)
	}

	forged := func(conn string, by string) answer {
		req := httptest.NewRequest("POST", api.PathForceRelease, strings.NewReader(`{"key":"jobs/1"}`))
		if conn != "" {
			req = httpRequestWithCN(t, "POST", api.PathForceRelease, `{"key":"jobs/1"}`, conn)
		}
		req.Header.Set(api.HeaderCredential, "admin")
		req.Header.Set(api.HeaderForwardedBy, by)
		return serve(leader, req)
	}
	for _, tc := range []struct{ what, conn, by string }{
		{"without TLS", "", "n2"},
		{"from a client certificate", "worker-7", "n2"},
		{"from a member naming another as the forwarder", "n2", "n1"},
		{"naming no forwarder", "n2", ""},
	} {
		if a := forged(tc.conn, tc.by); a.status != http.StatusUnauthorized {
			t.Fatalf("an operator's name forwarded %s: %d %s, want 401", tc.what, a.status, a.raw)
		}
	}
	// A token-less node (no Forwarder) takes no forwarded name at all.
	plain := newHandler(leaderStore, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: creds})
	req := httpRequestWithCN(t, "GET", api.PathLock+"?key=jobs/1", "", "n2")
	req.Header.Set(api.HeaderCredential, "worker-7")
	req.Header.Set(api.HeaderForwardedBy, "n2")
	if a := serve(plain, req); a.status != http.StatusUnauthorized {
		t.Fatalf("a forwarded name at a node without a Forwarder: %d %s, want 401", a.status, a.raw)
	}
	if _, ok, _ := leaderStore.Get(t.Context(), "jobs/1"); !ok {
		t.Fatal("a refused force-release released the key")
	}
	for _, want := range []string{"no verified client certificate", "the connection is worker-7's, not n2's",
		"the connection is n2's, not n1's", "names no forwarding node"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the leader's log does not say %q:\n%s", want, logged.String())
		}
	}
}
