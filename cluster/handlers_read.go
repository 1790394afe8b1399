package cluster

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/internal/buildinfo"
)

// defaultListLimit and maxListLimit bound GET /v1/locks.
const (
	defaultListLimit = 1000
	maxListLimit     = 10000
)

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

// parseQuery reads a GET request's query as strictly as a body is read:
// a malformed escape, an unknown parameter or a repeated one is a 400,
// not silently dropped (r.URL.Query would drop it and, say, list every
// lock instead of the prefix the caller misspelled).
func parseQuery(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidf("query", "%v", err)
	}
	for name, vals := range q {
		if !slices.Contains(allowed, name) {
			return nil, invalidf("query", "unknown parameter %q (this endpoint takes %s)", name, strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return nil, invalidf("query", "parameter %q given %d times", name, len(vals))
		}
	}
	return q, nil
}

func (n *Node) handleGetLock(w http.ResponseWriter, r *http.Request, l *leadership) {
	q, err := parseQuery(r, "key")
	if err != nil {
		writeError(w, err)
		return
	}
	key := q.Get("key")
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
	writeJSON(w, http.StatusOK, api.LockInfo{Key: info.Key, Owner: info.Owner, Fence: info.Fence,
		RemainingMillis: remainingMs(info.Deadline, now), Waiters: info.Waiters})
}

func (n *Node) handleListLocks(w http.ResponseWriter, r *http.Request, l *leadership) {
	q, err := parseQuery(r, "prefix", "limit")
	if err != nil {
		writeError(w, err)
		return
	}
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
	resp := api.LockList{Locks: []api.LockInfo{}, Truncated: len(infos) > limit}
	if resp.Truncated {
		infos = infos[:limit]
	}
	now := l.clock.now()
	for _, in := range infos {
		if in.Deadline <= now {
			continue
		}
		resp.Locks = append(resp.Locks, api.LockInfo{Key: in.Key, Owner: in.Owner, Fence: in.Fence,
			RemainingMillis: remainingMs(in.Deadline, now), Waiters: in.Waiters})
	}
	writeJSON(w, http.StatusOK, resp)
}

func (n *Node) handleStatus(w http.ResponseWriter, _ *http.Request) {
	leaderAddr, leaderID := n.raft.LeaderWithID()
	st := api.Status{
		ID:           n.cfg.ID,
		State:        strings.ToLower(n.raft.State().String()),
		LeaderID:     string(leaderID),
		LeaderAddr:   string(leaderAddr),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.fsm.AppliedIndex(),
		LastIndex:    n.raft.LastIndex(),
		Peers:        []api.Peer{},
		Keys:         n.fsm.Engine().Len(),
		Version:      buildinfo.Version(),
	}
	if leaderID != "" {
		st.LeaderHTTP, _ = n.fsm.Member(string(leaderID))
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			st.Peers = append(st.Peers, api.Peer{ID: string(s.ID), Addr: string(s.Address), Suffrage: strings.ToLower(s.Suffrage.String())})
		}
	}
	writeJSON(w, http.StatusOK, st)
}
