package apifuzz

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Server is the API a target talks to, in process.
type Server struct {
	// H is the API's handler.
	H http.Handler
	// Keys counts the keys held in the table behind H.
	Keys func() int
	// Self is the one member of the cluster behind H, which Join may name
	// (an idempotent no-op) and Leave must not.
	Self Member

	execs int
}

// Member is a cluster member as a join names it.
type Member struct {
	ID, Addr, HTTP string
}

// Serve sends one request through the handler.
func (s *Server) Serve(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.H.ServeHTTP(rec, req)
	return rec
}

// Post sends a POST of body to path.
func (s *Server) Post(path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return s.Serve(req)
}

// stillServes checks, every 16 inputs, that a valid acquire and release
// of a fixed key still succeed: no input may leave the server unable to
// serve.
func (s *Server) stillServes(t *testing.T) {
	t.Helper()
	s.execs++
	if s.execs%16 != 1 {
		return
	}
	rec := s.Post("/v1/acquire", []byte(`{"key":"fuzz:alive","owner":"fuzz-probe","ttl_ms":60000}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("server stopped serving: probe acquire = %d %s", rec.Code, rec.Body)
	}
	rec = s.Post("/v1/release", []byte(`{"key":"fuzz:alive","owner":"fuzz-probe"}`))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"released":true`) {
		t.Fatalf("server stopped serving: probe release = %d %s", rec.Code, rec.Body)
	}
}

// settled checks what every input leaves: a table holding want keys (a
// refused request changes nothing, and the targets free what they take),
// and a server that still serves.
func (s *Server) settled(t *testing.T, want int, in []byte) {
	t.Helper()
	if got := s.Keys(); got != want {
		t.Fatalf("table holds %d keys after input %q, want %d", got, in, want)
	}
	s.stillServes(t)
}

// waitKeys polls, every millisecond up to timeout, until the table holds
// want keys (the expiry of a grant runs on its own clock).
func (s *Server) waitKeys(t *testing.T, want int, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for s.Keys() != want {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}
