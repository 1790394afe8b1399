package cluster

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// defaultListLimit and maxListLimit bound GET /v1/locks.
const (
	defaultListLimit = 1000
	maxListLimit     = 10000
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

// applyErr turns a proposal error into an API error: raft's "no leader
// here" family becomes unavailable; engine errors (full, invalid) stay.
func applyErr(op string, err error) error {
	if isRaftUnavailable(err) {
		return unavailable(op, err)
	}
	return err
}

func (n *Node) handleAcquire(w http.ResponseWriter, r *http.Request, l *leadership) {
	var req acquireRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	ttl, err := checkTTL(req.TTLms)
	if err == nil {
		err = errors.Join(checkKey(req.Key), checkOwner(req.Owner))
	}
	if err == nil && req.WaitMs < 0 {
		err = invalidf("wait_ms", "%d is negative", req.WaitMs)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	wait := min(time.Duration(req.WaitMs)*time.Millisecond, n.cfg.MaxWait)
	start := time.Now()
	var fence uint64
	if wait > 0 {
		fence, err = n.acquireWait(r, l, req.Key, req.Owner, ttl, wait)
	} else {
		fence, err = n.acquireNow(l, req.Key, req.Owner, ttl)
	}
	if err != nil {
		if isConflict(err) {
			n.metrics.contention.Inc()
		}
		writeError(w, err)
		return
	}
	n.metrics.acquireWait.Observe(time.Since(start).Seconds())
	writeJSON(w, http.StatusOK, acquireResponse{Key: req.Key, Owner: req.Owner, Fence: fence, TTLms: req.TTLms})
}

func isConflict(err error) bool {
	var c *conflictError
	return errors.As(err, &c)
}

func (n *Node) acquireNow(l *leadership, key, owner string, ttl time.Duration) (uint64, error) {
	now := l.clock.now()
	resp, err := n.apply(fsm.Entry{Type: fsm.TypeAcquire, Key: key, Owner: owner, TTL: ttl, Now: now})
	if err != nil {
		return 0, applyErr("acquire", err)
	}
	if !resp.Result.OK {
		return 0, &conflictError{key: key, holderTTLms: remainingMs(resp.Result.Grant.Deadline, now)}
	}
	return resp.Result.Grant.Fence, nil
}

// acquireWait queues the request in the replicated table and waits for
// the hand-off. On timeout or client cancellation it removes the waiter;
// if the hand-off won that race it releases the grant, which passes the
// key on.
func (n *Node) acquireWait(r *http.Request, l *leadership, key, owner string, ttl, wait time.Duration) (uint64, error) {
	ch := n.waits.register(key, owner)
	defer n.waits.unregister(key, owner, ch)
	now := l.clock.now()
	resp, err := n.apply(fsm.Entry{Type: fsm.TypeAcquire, Key: key, Owner: owner, TTL: ttl, Now: now, Wait: true})
	if err != nil {
		return 0, applyErr("acquire", err)
	}
	if resp.Result.OK {
		return resp.Result.Grant.Fence, nil
	}
	if !resp.Result.Queued {
		return 0, &conflictError{key: key, holderTTLms: remainingMs(resp.Result.Grant.Deadline, now)}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case g := <-ch:
		return g.Fence, nil
	case <-l.done:
		return 0, unavailable("acquire", errors.New("leadership changed while waiting; retry"))
	case <-timer.C:
	case <-r.Context().Done():
	}
	n.abandonWait(l, key, owner, ch)
	if err := r.Context().Err(); err != nil {
		// The client went away, or this node is shutting down.
		return 0, unavailable("acquire", err)
	}
	return 0, &conflictError{key: key, holderTTLms: -1}
}

func (n *Node) abandonWait(l *leadership, key, owner string, ch chan engine.Grant) {
	resp, err := n.apply(fsm.Entry{Type: fsm.TypeCancelWait, Key: key, Owner: owner, Now: l.clock.now()})
	if err != nil {
		n.log.Warn("cancel wait failed", "error", err)
		return
	}
	if resp.Result.OK {
		return
	}
	select {
	case g := <-ch:
		// The hand-off was applied before the cancel: give the key on.
		if _, err := n.apply(fsm.Entry{Type: fsm.TypeRelease, Key: key, Owner: owner, Now: l.clock.now()}); err != nil {
			n.log.Warn("release of a grant that raced with a wait timeout failed", "fence", g.Fence, "error", err)
		}
	default:
	}
}

func (n *Node) handleRelease(w http.ResponseWriter, r *http.Request, l *leadership) {
	var req releaseRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := errors.Join(checkKey(req.Key), checkOwner(req.Owner)); err != nil {
		writeError(w, err)
		return
	}
	resp, err := n.apply(fsm.Entry{Type: fsm.TypeRelease, Key: req.Key, Owner: req.Owner, Now: l.clock.now()})
	if err != nil {
		writeError(w, applyErr("release", err))
		return
	}
	writeJSON(w, http.StatusOK, releaseResponse{Released: resp.Result.OK})
}

func (n *Node) handleExtend(w http.ResponseWriter, r *http.Request, l *leadership) {
	var req extendRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	ttl, err := checkTTL(req.TTLms)
	if err == nil {
		err = errors.Join(checkKey(req.Key), checkOwner(req.Owner))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	resp, err := n.apply(fsm.Entry{Type: fsm.TypeExtend, Key: req.Key, Owner: req.Owner, TTL: ttl, Now: l.clock.now()})
	if err != nil {
		writeError(w, applyErr("extend", err))
		return
	}
	writeJSON(w, http.StatusOK, extendResponse{Extended: resp.Result.OK, TTLms: req.TTLms})
}

func (n *Node) handleForceRelease(w http.ResponseWriter, r *http.Request, l *leadership) {
	var req forceReleaseRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkKey(req.Key); err != nil {
		writeError(w, err)
		return
	}
	resp, err := n.apply(fsm.Entry{Type: fsm.TypeForceRelease, Key: req.Key, Now: l.clock.now()})
	if err != nil {
		writeError(w, applyErr("force-release", err))
		return
	}
	writeJSON(w, http.StatusOK, releaseResponse{Released: resp.Result.OK})
}

// readIndex makes the leader's next local read linearizable (the ReadIndex
// of the Raft thesis): note the commit index, confirm leadership with a
// heartbeat round, then wait until the FSM has applied that index. The
// takeover barrier already committed an entry of this term.
func (n *Node) readIndex(r *http.Request) error {
	ci := n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return unavailable("verify leader", err)
	}
	if err := n.fsm.WaitApplied(r.Context(), ci); err != nil {
		return unavailable("read", err)
	}
	return nil
}

func (n *Node) handleGetLock(w http.ResponseWriter, r *http.Request, l *leadership) {
	key := r.URL.Query().Get("key")
	if err := checkKey(key); err != nil {
		writeError(w, err)
		return
	}
	if err := n.readIndex(r); err != nil {
		writeError(w, err)
		return
	}
	info, ok, err := n.fsm.Engine().Get(r.Context(), key)
	if err != nil {
		writeError(w, unavailable("get", err))
		return
	}
	now := l.clock.now()
	// A grant past its deadline is free to acquire even before the expiry
	// entry commits, so it is reported as free.
	if !ok || info.Deadline <= now {
		writeError(w, errNotFound)
		return
	}
	writeJSON(w, http.StatusOK, lockInfo{Key: info.Key, Owner: info.Owner, Fence: info.Fence,
		RemainingMs: remainingMs(info.Deadline, now), Waiters: info.Waiters})
}

func (n *Node) handleListLocks(w http.ResponseWriter, r *http.Request, l *leadership) {
	q := r.URL.Query()
	limit := defaultListLimit
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > maxListLimit {
			writeError(w, invalidf("limit", "%q is not an integer in [1, %d]", s, maxListLimit))
			return
		}
		limit = v
	}
	if err := n.readIndex(r); err != nil {
		writeError(w, err)
		return
	}
	infos, err := n.fsm.Engine().List(r.Context(), q.Get("prefix"), limit+1)
	if err != nil {
		writeError(w, unavailable("list", err))
		return
	}
	resp := locksResponse{Locks: []lockInfo{}, Truncated: len(infos) > limit}
	if resp.Truncated {
		infos = infos[:limit]
	}
	now := l.clock.now()
	for _, in := range infos {
		if in.Deadline <= now {
			continue
		}
		resp.Locks = append(resp.Locks, lockInfo{Key: in.Key, Owner: in.Owner, Fence: in.Fence,
			RemainingMs: remainingMs(in.Deadline, now), Waiters: in.Waiters})
	}
	writeJSON(w, http.StatusOK, resp)
}

func (n *Node) handleStatus(w http.ResponseWriter, _ *http.Request) {
	leaderAddr, leaderID := n.raft.LeaderWithID()
	st := statusResponse{
		ID:           n.cfg.ID,
		State:        strings.ToLower(n.raft.State().String()),
		LeaderID:     string(leaderID),
		LeaderAddr:   string(leaderAddr),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.fsm.AppliedIndex(),
		LastIndex:    n.raft.LastIndex(),
		Peers:        []peerInfo{},
		Keys:         n.fsm.Engine().Len(),
	}
	if leaderID != "" {
		st.LeaderHTTP, _ = n.fsm.Member(string(leaderID))
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			st.Peers = append(st.Peers, peerInfo{ID: string(s.ID), Addr: string(s.Address), Suffrage: strings.ToLower(s.Suffrage.String())})
		}
	}
	writeJSON(w, http.StatusOK, st)
}
