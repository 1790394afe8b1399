package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"no address", Config{}, false},
		{"host port", Config{Addrs: []string{"127.0.0.1:7001"}}, true},
		{"url", Config{Addrs: []string{"http://127.0.0.1:7001/"}}, true},
		{"https", Config{Addrs: []string{"https://127.0.0.1:7001"}}, true},
		{"bad scheme", Config{Addrs: []string{"ftp://127.0.0.1:7001"}}, false},
		{"empty entry", Config{Addrs: []string{" "}}, false},
		{"credentials", Config{Addrs: []string{"http://u:secret@127.0.0.1:1"}}, false},
		{"negative timeout", Config{Addrs: []string{"127.0.0.1:1"}, Timeout: -1}, false},
		{"wait chunk too long", Config{Addrs: []string{"127.0.0.1:1"}, WaitChunk: time.Hour}, false},
		{"attempt timeout", Config{Addrs: []string{"127.0.0.1:1"}, AttemptTimeout: 2 * time.Second}, true},
		{"negative attempt timeout", Config{Addrs: []string{"127.0.0.1:1"}, AttemptTimeout: -time.Second}, false},
		{"attempt timeout too short", Config{Addrs: []string{"127.0.0.1:1"}, AttemptTimeout: time.Millisecond}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			// A configuration mistake is bad input, not an outage: lock.Open
			// and the CLI (exit status 64) rely on telling them apart.
			if err != nil && !errors.Is(err, drivers.ErrInvalid) {
				t.Fatalf("Validate() = %v, want an error matching drivers.ErrInvalid", err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Fatalf("error leaks credentials: %v", err)
			}
		})
	}
}

func TestNew_DoesNotChangeCallerConfig(t *testing.T) {
	cfg := Config{Addrs: []string{"127.0.0.1:1"}}
	c := newTestClient(t, cfg)
	if cfg.Timeout != 0 || cfg.AttemptTimeout != 0 || cfg.Logger != nil {
		t.Fatalf("New wrote defaults into the caller's config: %+v", cfg)
	}
	if got := c.Addrs(); len(got) != 1 || got[0] != "http://127.0.0.1:1" {
		t.Fatalf("Addrs() = %v", got)
	}
}

func TestClient_AcquireReleaseRoundTrip(t *testing.T) {
	_, c := fakeClient(t, Config{})
	ctx := t.Context()

	fence, ok, err := driverstest.Take(ctx, c, "a/b c", "o1", time.Minute)
	if err != nil || !ok || fence == 0 {
		t.Fatalf("Acquire = %d, %v, %v", fence, ok, err)
	}
	again, ok, err := driverstest.Take(ctx, c, "a/b c", "o1", time.Minute)
	if err != nil || !ok || again != fence {
		t.Fatalf("refresh = %d, %v, %v; want fence %d", again, ok, err, fence)
	}
	if _, ok, err := driverstest.Take(ctx, c, "a/b c", "o2", time.Minute); err != nil || ok {
		t.Fatalf("contended Acquire ok=%v err=%v, want false, nil", ok, err)
	}
	if held, err := c.Exists(ctx, "a/b c"); err != nil || !held {
		t.Fatalf("Exists = %v, %v", held, err)
	}
	info, found, err := c.Get(ctx, "a/b c")
	if err != nil || !found || info.Owner != "o1" || info.Fence != fence || info.Remaining <= 0 {
		t.Fatalf("Get = %+v, %v, %v", info, found, err)
	}
	if ext, err := c.Extend(ctx, "a/b c", "o2", time.Minute); err != nil || ext {
		t.Fatalf("Extend by another owner = %v, %v", ext, err)
	}
	if ext, err := c.Extend(ctx, "a/b c", "o1", time.Minute); err != nil || !ext {
		t.Fatalf("Extend = %v, %v", ext, err)
	}
	if rel, err := c.Release(ctx, "a/b c", "o2"); err != nil || rel {
		t.Fatalf("Release by another owner = %v, %v", rel, err)
	}
	if rel, err := c.Release(ctx, "a/b c", "o1"); err != nil || !rel {
		t.Fatalf("Release = %v, %v", rel, err)
	}
	if held, err := c.Exists(ctx, "a/b c"); err != nil || held {
		t.Fatalf("Exists after release = %v, %v", held, err)
	}
	if _, found, err := c.Get(ctx, "a/b c"); err != nil || found {
		t.Fatalf("Get of a free key: found=%v err=%v", found, err)
	}
	if _, ok, _ := driverstest.Take(ctx, c, "k", "o3", time.Minute); !ok {
		t.Fatal("Acquire k failed")
	}
	if err := c.ForceRelease(ctx, "k"); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	if err := c.ForceRelease(ctx, "k"); err != nil {
		t.Fatalf("ForceRelease of a free key: %v", err)
	}
}

func TestClient_ErrorMapping(t *testing.T) {
	tests := []struct {
		status   int
		code     string
		want     error // nil: Acquire must report ok=false with no error
		requests int   // requests the node must see (1 = not retried)
	}{
		{409, "not_acquired", nil, 1},
		{400, "invalid", drivers.ErrInvalid, 1},
		{413, "too_large", drivers.ErrInvalid, 1},
		{429, "full", drivers.ErrFull, 1},
		{401, "unauthorized", ErrUnauthorized, 1},
		{503, "unavailable", drivers.ErrUnavailable, -1},
		{400, "", drivers.ErrInvalid, 1}, // no code: derived from the status
	}
	for _, tc := range tests {
		t.Run(tc.code+"_"+strconv.Itoa(tc.status), func(t *testing.T) {
			n := newFakeNode(t, "")
			n.fixed.Store(&fixedAnswer{status: tc.status, code: tc.code})
			c := newTestClient(t, Config{Addrs: []string{n.addr()}, Timeout: 300 * time.Millisecond})
			_, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second)
			if tc.want == nil {
				if err != nil || ok {
					t.Fatalf("Acquire = ok %v, err %v; want false, nil", ok, err)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("Acquire error %v does not match %v", err, tc.want)
			}
			got := n.hitCount("/v1/acquire")
			if tc.requests > 0 && got != tc.requests {
				t.Fatalf("node saw %d acquire requests, want %d", got, tc.requests)
			}
			if tc.requests < 0 && got < 2 {
				t.Fatalf("node saw %d acquire requests, want retries", got)
			}
		})
	}
}

func TestClient_InternalErrorIsNotRetriedAndMatchesNoSentinel(t *testing.T) {
	n := newFakeNode(t, "")
	n.fixed.Store(&fixedAnswer{status: 500, code: "internal"})
	c := newTestClient(t, Config{Addrs: []string{n.addr()}})
	_, _, err := driverstest.Take(t.Context(), c, "k", "o", time.Second)
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 {
		t.Fatalf("error %v is not a 500 APIError", err)
	}
	for _, s := range []error{drivers.ErrUnavailable, drivers.ErrNotAcquired, drivers.ErrInvalid, drivers.ErrFull} {
		if errors.Is(err, s) {
			t.Fatalf("500 matches %v", s)
		}
	}
	if got := n.hitCount("/v1/acquire"); got != 1 {
		t.Fatalf("500 was sent %d times", got)
	}
}

func TestClient_TokenIsSentAndNeverInErrors(t *testing.T) {
	const token = "s3cr3t-token"
	n := newFakeNode(t, token)
	good := newTestClient(t, Config{Addrs: []string{n.addr()}, Token: token})
	if _, ok, err := driverstest.Take(t.Context(), good, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire with token = %v, %v", ok, err)
	}
	bad := newTestClient(t, Config{Addrs: []string{n.addr()}, Token: "wrong-" + token})
	_, _, err := driverstest.Take(t.Context(), bad, "k", "o", time.Second)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("wrong token: %v, want ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Fatalf("error leaks the token: %v", err)
	}
	// A dead cluster: the unavailable error must not carry it either.
	dead := newTestClient(t, Config{Addrs: []string{loopback.MustFreeAddr(t)}, Token: token, Timeout: 200 * time.Millisecond})
	_, _, err = driverstest.Take(t.Context(), dead, "k", "o", time.Second)
	if !errors.Is(err, drivers.ErrUnavailable) || strings.Contains(err.Error(), token) {
		t.Fatalf("dead cluster error = %v", err)
	}
}

func TestClient_FailsOverOnConnectionError(t *testing.T) {
	n := newFakeNode(t, "")
	c := newTestClient(t, Config{Addrs: []string{loopback.MustFreeAddr(t), n.addr()}})
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if _, err := c.Release(t.Context(), "k", "o"); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func TestClient_FailsOverOn503(t *testing.T) {
	down := newFakeNode(t, "")
	down.unavailable.Store(true)
	up := newFakeNode(t, "")
	c := newTestClient(t, Config{Addrs: []string{down.addr(), up.addr()}})
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if up.hitCount("/v1/acquire") != 1 {
		t.Fatalf("healthy node saw %d acquires", up.hitCount("/v1/acquire"))
	}
}

func TestClient_RetriesUntilQuorumReturns(t *testing.T) {
	n := newFakeNode(t, "")
	n.unavailable.Store(true)
	c := newTestClient(t, Config{Addrs: []string{n.addr()}, Timeout: 5 * time.Second})
	// Bring the node back once it has been asked a few times.
	go func() {
		poll.Wait(5*time.Second, func() bool { return n.hitCount("/v1/acquire") >= 3 })
		n.unavailable.Store(false)
	}()
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
}

func TestClient_FindsLeaderFromStatus(t *testing.T) {
	leader := newFakeNode(t, "")
	follower := newFakeNode(t, "")
	l := leader.addr()
	follower.leaderHTTP.Store(&l)
	c := newTestClient(t, Config{Addrs: []string{follower.addr(), leader.addr()}})
	for i := range 5 {
		if _, ok, err := driverstest.Take(t.Context(), c, "k"+strconv.Itoa(i), "o", time.Second); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
	}
	if got := follower.hitCount("/v1/acquire"); got != 0 {
		t.Fatalf("follower got %d acquires, want all on the leader", got)
	}
	if got := leader.hitCount("/v1/acquire"); got != 5 {
		t.Fatalf("leader got %d acquires, want 5", got)
	}
}

func TestClient_AllNodesDownIsUnavailableWithinTimeout(t *testing.T) {
	c := newTestClient(t, Config{Addrs: []string{loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)}, Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, ok, err := driverstest.Take(t.Context(), c, "k", "o", time.Second)
	if ok || !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Acquire = %v, %v; want ErrUnavailable", ok, err)
	}
	if errors.Is(err, drivers.ErrNotAcquired) {
		t.Fatalf("unavailable must be distinct from not acquired: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v, want about the 300ms timeout", d)
	}
}

func TestClient_CancelledContext(t *testing.T) {
	_, c := fakeClient(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := driverstest.Take(ctx, c, "k", "o", time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled ctx = %v", err)
	}
}

func TestClient_ClosedReturnsErrClosed(t *testing.T) {
	n, c := fakeClient(t, Config{})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, _, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Acquire after Close = %v", err)
	}
	if n.hitCount("/v1/acquire") != 0 {
		t.Fatal("a closed client sent a request")
	}
}

func TestClient_AcquireWaitGetsKeyWhenReleased(t *testing.T) {
	n, c := fakeClient(t, Config{})
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, c, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatal("setup acquire failed")
	}
	got := make(chan error, 1)
	go func() {
		_, err := driverstest.TakeWait(ctx, c, "k", "waiter", time.Minute, drivers.WaitOptions{})
		got <- err
	}()
	// Release once the waiter is queued at the node.
	poll.Until(t, 5*time.Second, "a second acquire", func() bool { return n.hitCount("/v1/acquire") >= 2 })
	if _, err := c.Release(ctx, "k", "holder"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("AcquireWait = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AcquireWait did not return after the release")
	}
	if info, found, _ := c.Get(ctx, "k"); !found || info.Owner != "waiter" {
		t.Fatalf("holder after hand-off = %+v", info)
	}
}

func TestClient_AcquireWaitHonoursDeadline(t *testing.T) {
	n, c := fakeClient(t, Config{})
	if _, ok, _ := driverstest.Take(t.Context(), c, "k", "holder", time.Minute); !ok {
		t.Fatal("setup acquire failed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := driverstest.TakeWait(ctx, c, "k", "waiter", time.Minute, drivers.WaitOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWait = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("AcquireWait took %v", d)
	}
	n.mu.Lock()
	wait := n.maxWait
	n.mu.Unlock()
	if wait <= 0 || wait > 300 {
		t.Fatalf("longest wait_ms sent = %d, want within (0, 300]", wait)
	}
}

func TestClient_ListAndStatus(t *testing.T) {
	n := newFakeNode(t, "")
	l := n.addr()
	n.leaderHTTP.Store(&l)
	c := newTestClient(t, Config{Addrs: []string{n.addr()}})
	ctx := t.Context()
	for _, k := range []string{"jobs/1", "jobs/2", "other"} {
		if _, ok, _ := driverstest.Take(ctx, c, k, "o", time.Minute); !ok {
			t.Fatal("acquire failed")
		}
	}
	locks, truncated, err := c.List(ctx, "jobs/", 10)
	if err != nil || truncated || len(locks) != 2 {
		t.Fatalf("List = %+v, %v, %v", locks, truncated, err)
	}
	if locks[0].Waiters != 2 {
		t.Fatalf("waiters not decoded: %+v", locks[0])
	}
	st, err := c.Status(ctx)
	if err != nil || st.ID != "n1" || st.Term != 3 || st.LeaderHTTP != l {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	if _, err := c.NodeStatus(ctx, loopback.MustFreeAddr(t)); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("NodeStatus of a dead node = %v", err)
	}
	if err := c.Join(ctx, "n4", "127.0.0.1:9", "127.0.0.1:10"); err != nil {
		t.Fatalf("Join: %v", err)
	}
	if err := c.Leave(ctx, "n4"); err != nil {
		t.Fatalf("Leave: %v", err)
	}
}

func TestClient_UnreachableLeaderFallsBackToForwardingNodes(t *testing.T) {
	follower := newFakeNode(t, "")
	dead := loopback.MustFreeAddr(t)
	follower.leaderHTTP.Store(&dead)
	c := newTestClient(t, Config{Addrs: []string{follower.addr()}})
	const calls = 30
	for i := range calls {
		if _, ok, err := driverstest.Take(t.Context(), c, "k"+strconv.Itoa(i), "o", time.Second); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
	}
	if got := follower.hitCount("/v1/acquire"); got != calls {
		t.Fatalf("follower served %d of %d acquires", got, calls)
	}
	// Leader look-ups are spaced out, not made once per call.
	if got := follower.hitCount("/v1/status"); got >= calls {
		t.Fatalf("%d status requests for %d calls", got, calls)
	}
}

func TestClient_DoesNotFollowRedirects(t *testing.T) {
	target := newFakeNode(t, "")
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	c := newTestClient(t, Config{Addrs: []string{strings.TrimPrefix(redirector.URL, "http://")}, Timeout: 300 * time.Millisecond})
	_, _, err := driverstest.Take(t.Context(), c, "k", "o", time.Second)
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("Acquire through a redirect = %v, want the 307 as an *APIError", err)
	}
	if n := target.hitCount("/v1/acquire"); n != 0 {
		t.Fatalf("the redirect was followed: %d acquires at its target", n)
	}
}

// TestClient_NotAcquiredCarriesHolderTTL: a 409 with holder_ttl_ms is an
// error that errors.As finds as a *drivers.NotAcquiredError naming the
// key and the holder's remaining lease; without it, HolderTTL is 0.
func TestClient_NotAcquiredCarriesHolderTTL(t *testing.T) {
	for _, tc := range []struct {
		body string
		want time.Duration
	}{
		{`{"code":"not_acquired","message":"held","holder_ttl_ms":4200}`, 4200 * time.Millisecond},
		{`{"code":"not_acquired","message":"held"}`, 0},
		{`not json`, 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, tc.body)
		}))
		c := newTestClient(t, Config{Addrs: []string{strings.TrimPrefix(srv.URL, "http://")}})
		err := c.call(t.Context(), request{op: "acquire", method: http.MethodPost, path: api.PathAcquire, key: "jobs/1",
			body: api.AcquireRequest{Key: "jobs/1", Owner: "o", TTLMillis: 1000}}, nil)
		srv.Close()
		var na *drivers.NotAcquiredError
		if !errors.As(err, &na) || !errors.Is(err, drivers.ErrNotAcquired) {
			t.Fatalf("body %s: %v, want a *drivers.NotAcquiredError", tc.body, err)
		}
		if na.Key != "jobs/1" || na.HolderTTL != tc.want {
			t.Fatalf("body %s: %+v, want key jobs/1 and HolderTTL %v", tc.body, na, tc.want)
		}
	}
	// Other errors unwrap to nothing.
	var na *drivers.NotAcquiredError
	if errors.As(&APIError{StatusCode: http.StatusServiceUnavailable, Code: api.CodeUnavailable}, &na) {
		t.Fatal("a 503 unwraps to a NotAcquiredError")
	}
}
