package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/drivers"
)

// Options configure the handler New builds. The zero value of a field is
// the behaviour named beside it.
type Options struct {
	// NodeID names this node in answers (a wrong cluster ID, a full wait
	// cap) and in the X-Lock-Forwarded-By header of forwarded requests.
	NodeID string
	// ClusterID is this node's cluster: a request that names another one
	// (api.HeaderClusterID) is answered 403.
	ClusterID string
	// Token, when set, is the bearer token every /v1 request and /metrics
	// must carry; "": no check.
	Token string
	// ReadTimeout bounds the read of a request body, from the end of its
	// headers (see readBody); 0: no bound.
	ReadTimeout time.Duration
	// MaxWaits caps the waiting acquires (wait_ms > 0) in progress on
	// this node, served here or forwarded; drivers.Unlimited (or 0): no
	// cap. The caller passes its resolved setting.
	MaxWaits int
	// Metrics serves GET /metrics (behind the token); nil: no endpoint.
	Metrics http.Handler
	// Debug serves every path under /debug/ (behind the token), such as
	// net/http/pprof's handlers; nil: no endpoint.
	Debug http.Handler
	// Transport carries requests forwarded to the leader; nil:
	// http.DefaultTransport. The caller owns it (and closes its idle
	// connections).
	Transport http.RoundTripper
	// Scheme is the scheme of the leader's API, "http" or "https";
	// "": http.
	Scheme string
	// Streams, when set, counts the connections serving the API stream
	// (package api/stream). The server does not track a connection once
	// it is taken over, so the caller waits for this after cancelling the
	// requests' base context, which ends every stream.
	Streams *sync.WaitGroup
}

// handler serves the API over a Store.
type handler struct {
	store Store
	opts  Options
	waits *waitCap // nil: no cap
}

// New returns the HTTP API of one node over s: every route, the token
// and cluster-ID checks, the body deadline, and forwarding to the leader.
func New(s Store, opts Options) http.Handler {
	if opts.Scheme == "" {
		opts.Scheme = "http"
	}
	h := &handler{store: s, opts: opts}
	if opts.MaxWaits != drivers.Unlimited && opts.MaxWaits != 0 {
		h.waits = &waitCap{node: opts.NodeID, limit: int64(opts.MaxWaits)}
	}
	return h.routes()
}

func (h *handler) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", h.ready)
	if h.opts.Metrics != nil {
		mux.Handle("GET "+api.PathMetrics, h.auth(h.opts.Metrics))
	}
	if h.opts.Debug != nil {
		mux.Handle("/debug/", h.auth(h.opts.Debug))
	}
	mux.Handle("GET "+api.PathStatus, h.auth(http.HandlerFunc(h.status)))
	mux.Handle("POST "+api.PathAcquire, h.auth(http.HandlerFunc(h.acquire)))
	mux.Handle("POST "+api.PathRelease, h.auth(http.HandlerFunc(h.release)))
	mux.Handle("POST "+api.PathExtend, h.auth(http.HandlerFunc(h.extend)))
	mux.Handle("POST "+api.PathForceRelease, h.auth(http.HandlerFunc(h.forceRelease)))
	mux.Handle("GET "+api.PathLock, h.auth(http.HandlerFunc(h.getLock)))
	mux.Handle("GET "+api.PathLocks, h.auth(http.HandlerFunc(h.listLocks)))
	mux.Handle("POST "+api.PathJoin, h.auth(http.HandlerFunc(h.join)))
	mux.Handle("POST "+api.PathLeave, h.auth(http.HandlerFunc(h.leave)))
	mux.Handle("/v1/", h.auth(http.HandlerFunc(noEndpoint)))
	root := readBody(mux, h.opts.ReadTimeout)
	mux.Handle("GET "+stream.Path, h.auth(h.serveStream(root)))
	return root
}

// endpointMethods lists the method of every /v1 path, so a wrong method
// gets a JSON 405 and an unknown path a JSON 404.
var endpointMethods = map[string]string{
	api.PathStatus: "GET", api.PathLock: "GET", api.PathLocks: "GET",
	api.PathAcquire: "POST", api.PathRelease: "POST", api.PathExtend: "POST",
	api.PathForceRelease: "POST", api.PathJoin: "POST", api.PathLeave: "POST",
}

func noEndpoint(w http.ResponseWriter, r *http.Request) {
	if m, ok := endpointMethods[r.URL.Path]; ok {
		w.Header().Set("Allow", m)
		writeJSON(w, http.StatusMethodNotAllowed, api.ErrorBody{Code: api.CodeInvalid,
			Message: fmt.Sprintf("cluster: %s takes %s, not %s", r.URL.Path, m, r.Method)})
		return
	}
	writeJSON(w, http.StatusNotFound, api.ErrorBody{Code: api.CodeNotFound, Message: "cluster: no endpoint " + r.URL.Path})
}
