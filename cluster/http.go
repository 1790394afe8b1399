package cluster

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// leaderHandler serves a request on the leader, with its leadership.
type leaderHandler func(w http.ResponseWriter, r *http.Request, l *leadership)

func (n *Node) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("GET /metrics", n.auth(promhttp.HandlerFor(n.metrics.gatherer, promhttp.HandlerOpts{})))
	mux.Handle("GET /v1/status", n.auth(http.HandlerFunc(n.handleStatus)))
	mux.Handle("POST /v1/acquire", n.auth(n.onLeader(n.handleAcquire)))
	mux.Handle("POST /v1/release", n.auth(n.onLeader(n.handleRelease)))
	mux.Handle("POST /v1/extend", n.auth(n.onLeader(n.handleExtend)))
	mux.Handle("POST /v1/force-release", n.auth(n.onLeader(n.handleForceRelease)))
	mux.Handle("GET /v1/lock", n.auth(n.onLeader(n.handleGetLock)))
	mux.Handle("GET /v1/locks", n.auth(n.onLeader(n.handleListLocks)))
	mux.Handle("POST /v1/join", n.auth(n.onLeader(n.handleJoin)))
	mux.Handle("POST /v1/leave", n.auth(n.onLeader(n.handleLeave)))
	mux.Handle("/v1/", n.auth(http.HandlerFunc(noEndpoint)))
	return mux
}

// endpointMethods lists the method of every /v1 path, so a wrong method
// gets a JSON 405 and an unknown path a JSON 404.
var endpointMethods = map[string]string{
	"/v1/status": "GET", "/v1/lock": "GET", "/v1/locks": "GET",
	"/v1/acquire": "POST", "/v1/release": "POST", "/v1/extend": "POST",
	"/v1/force-release": "POST", "/v1/join": "POST", "/v1/leave": "POST",
}

func noEndpoint(w http.ResponseWriter, r *http.Request) {
	if m, ok := endpointMethods[r.URL.Path]; ok {
		w.Header().Set("Allow", m)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Code: codeInvalid,
			Message: fmt.Sprintf("cluster: %s takes %s, not %s", r.URL.Path, m, r.Method)})
		return
	}
	writeJSON(w, http.StatusNotFound, errorBody{Code: codeNotFound, Message: "cluster: no endpoint " + r.URL.Path})
}

// auth checks the bearer token in constant time when one is configured.
func (n *Node) auth(h http.Handler) http.Handler {
	if n.cfg.Token == "" {
		return h
	}
	want := []byte("Bearer " + n.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lockcluster"`)
			writeError(w, errUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
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
		if by := r.Header.Get(forwardedHeader); by != "" {
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
