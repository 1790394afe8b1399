package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
)

// Every kind of Store error has its one status and code; a 503 carries
// Retry-After, and a conflict the holder's remaining lease when known.
func TestErrors_OneMapFromErrorsToStatuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"invalid", &drivers.InvalidError{Field: "key", Reason: "bad"}, http.StatusBadRequest, api.CodeInvalid},
		{"not acquired", &drivers.NotAcquiredError{Key: "k", HolderTTL: 1500 * time.Millisecond}, http.StatusConflict, api.CodeNotAcquired},
		{"full", fmt.Errorf("table: %w", drivers.ErrFull), http.StatusTooManyRequests, api.CodeFull},
		{"unavailable", drivers.Unavailable("apply", errors.New("leadership lost")), http.StatusServiceUnavailable, api.CodeUnavailable},
		{"closed", drivers.ErrClosed, http.StatusServiceUnavailable, api.CodeUnavailable},
		{"deadline", context.DeadlineExceeded, http.StatusServiceUnavailable, api.CodeUnavailable},
		{"unsupported", fmt.Errorf("member n3: %w", drivers.ErrUnsupported), http.StatusNotImplemented, api.CodeUnsupported},
		{"unknown member", fmt.Errorf("%w %q", httpapi.ErrUnknownMember, "n9"), http.StatusNotFound, api.CodeNotFound},
		{"anything else", errors.New("disk on fire"), http.StatusInternalServerError, api.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeStore()
			s.fail = tc.err
			a := do(newHandler(s, httpapi.Options{}), "POST", api.PathRelease, `{"key":"k","owner":"o"}`)
			if a.status != tc.status || a.err.Code != tc.code || a.err.Message != tc.err.Error() {
				t.Fatalf("%v: %d %s, want %d with code %q and the error's message", tc.err, a.status, a.raw, tc.status, tc.code)
			}
			if !errors.Is(tc.err, httpapi.ErrUnknownMember) && drivers.StatusCode(tc.err) != a.status {
				t.Fatalf("%v: answered %d, but drivers.StatusCode says %d: two maps", tc.err, a.status, drivers.StatusCode(tc.err))
			}
			if got := a.header.Get("Retry-After"); (tc.status == http.StatusServiceUnavailable) != (got == "1") {
				t.Fatalf("status %d with Retry-After %q", a.status, got)
			}
			var na *drivers.NotAcquiredError
			if errors.As(tc.err, &na) && (a.err.HolderTTLMillis == nil || *a.err.HolderTTLMillis != 1500) {
				t.Fatalf("holder_ttl_ms %v, want 1500", a.err.HolderTTLMillis)
			}
		})
	}
}

// The token guards every /v1 request and /metrics, not /healthz or
// /readyz; a request for another cluster is a 403; a wrong method or an
// unknown path is a JSON 405 or 404.
func TestHandler_AuthAndRoutes(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m 1\n")) })
	h := newHandler(newFakeStore(), httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: operator("s3cret"), Metrics: metrics})
	auth := api.Bearer("s3cret")
	for _, tc := range []struct {
		name, method, path string
		header             []string
		status             int
	}{
		{"healthz without a token", "GET", "/healthz", nil, http.StatusOK},
		{"readyz without a token", "GET", "/readyz", nil, http.StatusOK},
		{"status without a token", "GET", api.PathStatus, nil, http.StatusUnauthorized},
		{"status with a wrong token", "GET", api.PathStatus, []string{api.HeaderAuthorization, "Bearer nope"}, http.StatusUnauthorized},
		{"status with the token", "GET", api.PathStatus, []string{api.HeaderAuthorization, auth}, http.StatusOK},
		{"metrics without a token", "GET", "/metrics", nil, http.StatusUnauthorized},
		{"metrics with the token", "GET", "/metrics", []string{api.HeaderAuthorization, auth}, http.StatusOK},
		{"another cluster", "GET", api.PathStatus, []string{api.HeaderAuthorization, auth, api.HeaderClusterID, "c2"}, http.StatusForbidden},
		{"this cluster", "GET", api.PathStatus, []string{api.HeaderAuthorization, auth, api.HeaderClusterID, "c1"}, http.StatusOK},
		{"wrong method", "GET", api.PathAcquire, []string{api.HeaderAuthorization, auth}, http.StatusMethodNotAllowed},
		{"unknown path", "GET", "/v1/nope", []string{api.HeaderAuthorization, auth}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(h, tc.method, tc.path, "", tc.header...)
			mustStatus(t, a, tc.status, tc.name)
			switch tc.status {
			case http.StatusUnauthorized:
				if a.err.Code != api.CodeUnauthorized || a.header.Get("WWW-Authenticate") == "" {
					t.Fatalf("401 %s without code unauthorized or WWW-Authenticate", a.raw)
				}
			case http.StatusForbidden:
				if a.err.Code != api.CodeWrongCluster {
					t.Fatalf("403 %s, want code wrong_cluster", a.raw)
				}
			case http.StatusMethodNotAllowed:
				if a.header.Get("Allow") != "POST" || a.err.Code != api.CodeInvalid {
					t.Fatalf("405 %s with Allow %q", a.raw, a.header.Get("Allow"))
				}
			}
		})
	}
}

// Options.Debug serves every path under /debug/, behind the token; without
// it there is no such endpoint.
func TestHandler_DebugBehindTheToken(t *testing.T) {
	debug := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.URL.Path)) })
	auth := api.Bearer("s3cret")
	h := newHandler(newFakeStore(), httpapi.Options{Credentials: operator("s3cret"), Debug: debug})
	mustStatus(t, do(h, "GET", "/debug/pprof/heap", ""), http.StatusUnauthorized, "debug without a token")
	a := do(h, "GET", "/debug/pprof/heap", "", api.HeaderAuthorization, auth)
	mustStatus(t, a, http.StatusOK, "debug with the token")
	if string(a.raw) != "/debug/pprof/heap" {
		t.Fatalf("debug handler saw %q", a.raw)
	}
	off := newHandler(newFakeStore(), httpapi.Options{Credentials: operator("s3cret")})
	mustStatus(t, do(off, "GET", "/debug/pprof/heap", "", api.HeaderAuthorization, auth), http.StatusNotFound, "debug when off")
}
