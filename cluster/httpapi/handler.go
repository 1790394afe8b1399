package httpapi

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/cluster/access"
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
	// Credentials returns the credentials the node accepts now, read for
	// every request (a reload takes effect at once); nil, or a nil Set:
	// no check, every request has every right.
	Credentials func() *access.Set
	// Logger receives a line for every refused credential; nil: none.
	Logger *slog.Logger
	// Forwarder says why conn, the connection a forwarded request came
	// on, is not the member id's, which api.HeaderForwardedBy names; nil
	// when it is. The leader takes a forwarded credential's name
	// (api.HeaderCredential) only from the member that forwarded it (see
	// forwarder.go). nil: no forwarded credential is taken, and a
	// certificate credential is served by the leader alone.
	Forwarder func(id string, conn *tls.ConnectionState) error
	// ReadTimeout bounds the read of a request body, from the end of its
	// headers (see readBody); 0: no bound.
	ReadTimeout time.Duration
	// WriteTimeout bounds the write of an answer, from its first byte
	// (a plain request's) or of one write of answers (a stream's); a
	// client that does not read is cut. A waiting acquire's wait comes
	// before its answer and is not bound by it. 0: DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxWaits caps the waiting acquires (wait_ms > 0), watches and the
	// lock page's event streams in progress on this node, served here or
	// forwarded; drivers.Unlimited (or 0): no
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
	// queued is the bytes of stream answers not yet written, on every
	// stream of the node (MaxQueuedBytes).
	queued atomic.Int64
}

// DefaultWriteTimeout is Options.WriteTimeout's default: a client on any
// network a lock service runs on reads a small answer well within it.
const DefaultWriteTimeout = 10 * time.Second

// New returns the HTTP API of one node over s: every route, the token
// and cluster-ID checks, the body deadline, and forwarding to the leader.
func New(s Store, opts Options) http.Handler {
	if opts.Scheme == "" {
		opts.Scheme = "http"
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	h := &handler{store: s, opts: opts}
	if opts.MaxWaits != drivers.Unlimited && opts.MaxWaits != 0 {
		h.waits = &waitCap{node: opts.NodeID, limit: int64(opts.MaxWaits)}
	}
	return h.routes()
}

// NewHealth is the handler of a node's health listener: GET /healthz, GET
// /readyz and GET /metrics as the API serves them, with no credential
// asked (cluster.Config.HealthAddr).
func NewHealth(s Store, opts Options) http.Handler {
	h := &handler{store: s, opts: opts}
	mux := http.NewServeMux()
	h.health(mux)
	if opts.Metrics != nil {
		mux.Handle("GET "+api.PathMetrics, opts.Metrics)
	}
	return writeDeadline(mux, cmp.Or(opts.WriteTimeout, DefaultWriteTimeout))
}

// health adds the probes, which need no credential on any listener.
func (h *handler) health(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", h.ready)
}

func (h *handler) routes() http.Handler {
	mux := http.NewServeMux()
	h.health(mux)
	mux.Handle("GET "+api.PathNode, h.checkClusterID(http.HandlerFunc(h.node)))
	if h.opts.Metrics != nil {
		mux.Handle("GET "+api.PathMetrics, h.authorize(access.RightMetrics, h.opts.Metrics))
	}
	if h.opts.Debug != nil {
		mux.Handle("/debug/", h.authorize(access.RightDebug, h.opts.Debug))
	}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, h.authorize(rt.right, http.HandlerFunc(rt.serve(h))))
	}
	mux.Handle("/v1/", h.authorize(anyRight, http.HandlerFunc(noEndpoint)))
	h.ui(mux)
	root := readBody(mux, h.opts.ReadTimeout)
	mux.Handle("GET "+stream.Path, h.authorize(access.RightLock, h.serveStream(root)))
	return writeDeadline(root, h.opts.WriteTimeout)
}

// route is one /v1 endpoint behind a credential: its method, path, the
// right it needs and its handler.
type route struct {
	method, path string
	right        access.Right
	serve        func(*handler) http.HandlerFunc
}

// routes is every authenticated /v1 endpoint; a wrong method on one of
// these paths gets a JSON 405, an unknown path a JSON 404 (noEndpoint).
// Keys are confined to a credential's prefixes by the handlers.
var routes = []route{
	{"GET", api.PathStatus, access.RightStatus, func(h *handler) http.HandlerFunc { return h.status }},
	{"POST", api.PathAcquire, access.RightLock, func(h *handler) http.HandlerFunc { return h.acquire }},
	{"POST", api.PathRelease, access.RightLock, func(h *handler) http.HandlerFunc { return h.release }},
	{"POST", api.PathExtend, access.RightLock, func(h *handler) http.HandlerFunc { return h.extend }},
	{"GET", api.PathLock, access.RightLock, func(h *handler) http.HandlerFunc { return h.getLock }},
	{"GET", api.PathLocks, access.RightLock, func(h *handler) http.HandlerFunc { return h.listLocks }},
	{"GET", api.PathWatch, access.RightLock, func(h *handler) http.HandlerFunc { return h.watch }},
	{"POST", api.PathForceRelease, access.RightForceRelease, func(h *handler) http.HandlerFunc { return h.forceRelease }},
	{"POST", api.PathJoin, access.RightMembership, func(h *handler) http.HandlerFunc { return h.join }},
	{"POST", api.PathLeave, access.RightMembership, func(h *handler) http.HandlerFunc { return h.leave }},
}

// endpointMethod is the method of a /v1 path, or "" for none.
func endpointMethod(path string) string {
	if path == api.PathNode {
		return "GET"
	}
	for _, rt := range routes {
		if rt.path == path {
			return rt.method
		}
	}
	return ""
}

func noEndpoint(w http.ResponseWriter, r *http.Request) {
	if m := endpointMethod(r.URL.Path); m != "" {
		w.Header().Set("Allow", m)
		writeJSON(w, http.StatusMethodNotAllowed, api.ErrorBody{Code: api.CodeInvalid,
			Message: fmt.Sprintf("cluster: %s takes %s, not %s", r.URL.Path, m, r.Method)})
		return
	}
	writeJSON(w, http.StatusNotFound, api.ErrorBody{Code: api.CodeNotFound, Message: "cluster: no endpoint " + r.URL.Path})
}
