package fence_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/fence"
)

// A *lock.Lock is what the client side takes its fence from.
var _ fence.Holder = (*lock.Lock)(nil)

func TestHandler_Answers(t *testing.T) {
	t.Parallel()
	served := 0
	h := fence.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }), nil)
	for _, step := range []struct {
		header string // the request's Zerotal-Fence; "" for none
		status int
		served int    // the handler's calls so far
		answer string // the answer's Zerotal-Fence
	}{
		{"", http.StatusPreconditionRequired, 0, ""},
		{"doc", http.StatusBadRequest, 0, ""},
		{"doc 0", http.StatusBadRequest, 0, ""},
		{"doc 5", http.StatusOK, 1, ""},
		{"doc 5", http.StatusOK, 2, ""}, // the same holder again
		{"doc 4", http.StatusPreconditionFailed, 2, "doc 5"},
		{"other 1", http.StatusOK, 3, ""}, // another resource has its own fences
		{"doc 6", http.StatusOK, 4, ""},
		{"doc 5", http.StatusPreconditionFailed, 4, "doc 6"},
	} {
		req := httptest.NewRequest(http.MethodPut, "/doc", nil)
		if step.header != "" {
			req.Header.Set(fence.Header, step.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != step.status || served != step.served || rec.Header().Get(fence.Header) != step.answer {
			t.Fatalf("%s %q: %d %q (handler called %d times), want %d %q (%d)",
				fence.Header, step.header, rec.Code, rec.Header().Get(fence.Header), served, step.status, step.answer, step.served)
		}
		if rec.Code != http.StatusOK && !strings.HasPrefix(rec.Body.String(), "fence: ") {
			t.Errorf("%s %q: body %q does not say why", fence.Header, step.header, rec.Body.String())
		}
	}
}

// failingStore's Guard fails as a database that is down does.
type failingStore struct{}

func (failingStore) Guard(context.Context, string, uint64, func(context.Context) error) error {
	return errors.New("dial tcp 10.0.0.7:5432: connection refused")
}

func TestHandler_StoreFailureIsUnavailableWithoutItsText(t *testing.T) {
	t.Parallel()
	h := fence.Handler(http.NotFoundHandler(), failingStore{})
	req := httptest.NewRequest(http.MethodPut, "/doc", nil)
	req.Header.Set(fence.Header, "doc 5")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "10.0.0.7") {
		t.Errorf("%d %q, want 503 without the store's error", rec.Code, rec.Body.String())
	}
}

func TestTransport_SendsTheFenceAndRefusesAnUnheldLock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string // the headers the server saw
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get(fence.Header))
	}))
	t.Cleanup(srv.Close)
	seen := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
	l := &heldLock{"report/2026 march", 9}
	client := &http.Client{Transport: &fence.Transport{Lock: l}}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if s := seen(); len(s) != 1 || s[0] != "report%2F2026%20march 9" {
		t.Errorf("the server saw %q", s)
	}
	if req.Header.Get(fence.Header) != "" {
		t.Error("the transport changed the caller's request")
	}

	l.fence = 0 // not held
	req, err = http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Do(req); !errors.Is(err, fence.ErrInvalid) {
		t.Errorf("a request of a lock not held: %v, want ErrInvalid", err)
	}
	if s := seen(); len(s) != 1 {
		t.Errorf("a request of a lock not held reached the server: %q", s)
	}
}

func TestCheckResponse_OnlyTheGuardsRefusal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		header string
		stale  bool
	}{
		{http.StatusOK, "", false},
		{http.StatusPreconditionFailed, "", false}, // an If-Match's, not ours
		{http.StatusPreconditionFailed, "doc 7", true},
	} {
		resp := &http.Response{StatusCode: c.status, Header: http.Header{}}
		if c.header != "" {
			resp.Header.Set(fence.Header, c.header)
		}
		if err := fence.CheckResponse(resp); errors.Is(err, fence.ErrStale) != c.stale {
			t.Errorf("%d %q: %v", c.status, c.header, err)
		}
	}
}

// With a DB store the handler writes in the guard's transaction: the
// older holder's request is refused before the handler runs, and the
// table keeps the newer holder's write.
func TestHandler_DBStoreWritesInTheGuardsTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, db := sqliteGuard(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE documents (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	h := fence.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, ok := fence.TxFromContext(r.Context())
		if !ok {
			http.Error(w, "no transaction", http.StatusInternalServerError)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if _, err := tx.ExecContext(r.Context(), `INSERT OR REPLACE INTO documents (id, body) VALUES (1, ?)`, string(body)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}), g)
	for _, put := range []struct {
		fence  uint64
		body   string
		status int
	}{
		{8, "newer", http.StatusOK},
		{7, "older", http.StatusPreconditionFailed},
	} {
		req := httptest.NewRequest(http.MethodPut, "/doc", strings.NewReader(put.body))
		req.Header.Set(fence.Header, fence.FormatHeader("doc", put.fence))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != put.status {
			t.Fatalf("fence %d: %d %q, want %d", put.fence, rec.Code, rec.Body.String(), put.status)
		}
	}
	var body string
	if err := db.QueryRowContext(ctx, `SELECT body FROM documents WHERE id = 1`).Scan(&body); err != nil || body != "newer" {
		t.Errorf("the document: %q %v, want the newer holder's", body, err)
	}
	if h, err := g.Highest(ctx, "doc"); err != nil || h != 8 {
		t.Errorf("highest %d %v, want 8", h, err)
	}
}
