package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// streamStore watches the table (tableStore) and keys: a key's watch
// waits out its wait (or its request's end) and tells when it began.
type streamStore struct {
	*tableStore
	began chan struct{}
}

func (s *streamStore) Watch(ctx context.Context, key, _ string, wait time.Duration) (api.Lock, bool, error) {
	s.began <- struct{}{}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return api.Lock{Key: key}, false, nil
}

// A watch and a page's event stream are waits: each takes a slot of the
// node's MaxWaits, so with the cap at 2 a third stream of either kind is
// refused at once (429 full for /v1/watch, 429 with Retry-After for
// /ui/events), and a slot frees when a stream ends. Before, neither was
// counted and a credential could hold any number open.
func TestStreams_TakeTheNodesWaitSlots(t *testing.T) {
	s := &streamStore{tableStore: &tableStore{fakeStore: newFakeStore("n1")}, began: make(chan struct{}, 8)}
	srv := httptest.NewServer(newHandler(s, httpapi.Options{NodeID: "n1", Credentials: operator(tokOperator), MaxWaits: 2}))
	t.Cleanup(srv.Close)
	get := func(ctx context.Context, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tokOperator)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	// Two streams, one of each kind, hold the two slots.
	events, endEvents := context.WithCancel(t.Context())
	defer endEvents()
	if resp := get(events, "/ui/events"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first /ui/events: %d, want 200", resp.StatusCode)
	}
	watching := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+api.PathWatch+"?key=k", nil)
		req.Header.Set("Authorization", "Bearer "+tokOperator)
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		watching <- resp
	}()
	select {
	case <-s.began:
	case resp := <-watching:
		t.Fatalf("the first watch ended at once: %v", resp)
	case <-time.After(10 * time.Second):
		t.Fatal("the first watch did not begin in 10s")
	}

	// The third of either kind is refused.
	resp := get(t.Context(), api.PathWatch+"?key=k&wait_ms=100")
	body, _ := io.ReadAll(resp.Body)
	var e api.ErrorBody
	_ = json.Unmarshal(body, &e)
	if resp.StatusCode != http.StatusTooManyRequests || e.Code != api.CodeFull {
		t.Fatalf("a third stream, a watch: %d %s, want 429 with code %q", resp.StatusCode, body, api.CodeFull)
	}
	if resp := get(t.Context(), "/ui/events"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream, a page's events: %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// The page's stream ends: its slot frees, and another page's stream
	// is let in.
	endEvents()
	poll.Until(t, 10*time.Second, "a slot freed by the page's stream", func() bool {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/events", nil)
		req.Header.Set("Authorization", "Bearer "+tokOperator)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// The page says when the waits it shows were cut at api.MaxWaitEdges,
// and its script opens a refused event stream again later.
func TestUI_SaysWhenEdgesAreCut(t *testing.T) {
	h, s := uiNode(t)
	big := &api.Lock{Key: "a/big", Kind: api.KindSemaphore, Limit: 200}
	for i := range 200 {
		big.Holders = append(big.Holders, api.Holder{Owner: "t:h" + strconv.Itoa(i), Holder: "h" + strconv.Itoa(i)})
		big.Queue = append(big.Queue, api.Waiting{Owner: "t:w" + strconv.Itoa(i), Holder: "w" + strconv.Itoa(i)})
	}
	big.Waiters = len(big.Queue)
	s.locks[big.Key] = big
	a := do(h, "GET", "/ui", "", "Authorization", basic(tokOperator))
	mustStatus(t, a, http.StatusOK, "GET /ui over 40,000 waits")
	body := string(a.raw)
	for _, want := range []string{"(more edges not shown)", `id="edges-cut"`, "Only the first 10000 waits", `id="cycles"`, "es.readyState === EventSource.CLOSED"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(body, "<td>w"); n > api.MaxWaitEdges {
		t.Errorf("the page shows %d waits, want at most %d", n, api.MaxWaitEdges)
	}
}
