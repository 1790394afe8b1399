package cluster

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zerotal/lock/api"
)

// leaderHandler serves a request on the leader, with its leadership.
type leaderHandler func(w http.ResponseWriter, r *http.Request, l *leadership)

func (n *Node) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", n.handleReady)
	mux.Handle("GET /metrics", n.auth(promhttp.HandlerFor(n.metrics.gatherer, promhttp.HandlerOpts{})))
	mux.Handle("GET "+api.PathStatus, n.auth(http.HandlerFunc(n.handleStatus)))
	mux.Handle("POST "+api.PathAcquire, n.auth(n.limitWaits(n.onLeader(n.handleAcquire))))
	mux.Handle("POST "+api.PathRelease, n.auth(n.onLeader(n.handleRelease)))
	mux.Handle("POST "+api.PathExtend, n.auth(n.onLeader(n.handleExtend)))
	mux.Handle("POST "+api.PathForceRelease, n.auth(n.onLeader(n.handleForceRelease)))
	mux.Handle("GET "+api.PathLock, n.auth(n.onLeader(n.handleGetLock)))
	mux.Handle("GET "+api.PathLocks, n.auth(n.onLeader(n.handleListLocks)))
	mux.Handle("POST "+api.PathJoin, n.auth(n.onLeader(n.handleJoin)))
	mux.Handle("POST "+api.PathLeave, n.auth(n.onLeader(n.handleLeave)))
	mux.Handle("/v1/", n.auth(http.HandlerFunc(noEndpoint)))
	return n.readBody(mux)
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

// auth checks the bearer token when one is configured, then the cluster
// ID a request may name (api.HeaderClusterID). The token is compared as
// SHA-256 digests, so the time taken depends neither on where the first
// wrong byte is nor on the token's length.
func (n *Node) auth(h http.Handler) http.Handler {
	h = n.checkClusterID(h)
	if n.cfg.Token == "" {
		return h
	}
	want := sha256.Sum256([]byte(api.Bearer(n.cfg.Token)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get(api.HeaderAuthorization)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lockcluster"`)
			writeError(w, errUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkClusterID answers 403 to a request that names another cluster.
func (n *Node) checkClusterID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(api.HeaderClusterID); id != "" && id != n.cfg.ClusterID {
			writeJSON(w, http.StatusForbidden, api.ErrorBody{Code: api.CodeWrongCluster, Message: fmt.Sprintf(
				"cluster: this node (%s) is in cluster %q; the request is for cluster %q", n.cfg.ID, n.cfg.ClusterID, id)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveHTTP serves the API on the node's listener, over TLS when
// configured (HTTP/2 offered, as ServeTLS does).
func (n *Node) serveHTTP() error {
	if n.tls == nil {
		return n.httpSrv.Serve(n.listener)
	}
	n.httpSrv.TLSConfig = n.tls.httpServer.Clone()
	return n.httpSrv.ServeTLS(n.listener, "", "")
}

// onLeader runs h when this node is the ready leader, and otherwise
// forwards the request to the leader (one hop at most).
func (n *Node) onLeader(h leaderHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l := n.lead.Load(); l != nil {
			h(w, r, l)
			return
		}
		if n.raft.State() == raft.Leader {
			writeError(w, unavailable("serve", errors.New("leader is still taking over; retry")))
			return
		}
		if by := r.Header.Get(api.HeaderForwardedBy); by != "" {
			writeError(w, unavailable("forward", errors.New("request forwarded by "+by+" reached a node that is not the leader")))
			return
		}
		addr, err := n.leaderHTTP()
		if err != nil {
			writeError(w, err)
			return
		}
		n.forward(w, r, addr)
	})
}
