package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/drivers"
)

// The bounds of GET /v1/locks.
const (
	// DefaultListLimit is the limit of a list that names none.
	DefaultListLimit = 1000
	// MaxListLimit is the largest limit a list may name: the one bound of
	// every backend's list (drivers.MaxListLimit).
	MaxListLimit = drivers.MaxListLimit
)

func (h *handler) getLock(w http.ResponseWriter, r *http.Request) {
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
	if !h.scope(w, r, access.RightLock, key) {
		return
	}
	h.onLeader(w, r, nil, func() {
		l, ok, err := h.store.Get(r.Context(), key)
		answerLock(w, r, l, ok, err)
	})
}

// answerLock answers a read of one key (GET /v1/lock, a watch): its lock
// as the caller may see it, or 404 when nobody holds it.
func answerLock(w http.ResponseWriter, r *http.Request, l api.Lock, held bool, err error) {
	switch {
	case err != nil:
		writeError(w, err)
	case !held:
		writeError(w, errNotFound)
	default:
		showLock(caller(r), &l)
		writeJSON(w, http.StatusOK, l)
	}
}

func (h *handler) listLocks(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "prefix", "limit", "holder")
	if err != nil {
		writeError(w, err)
		return
	}
	limit := DefaultListLimit
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > MaxListLimit {
			writeError(w, invalidf("limit", "%q is not an integer in [1, %d]", s, MaxListLimit))
			return
		}
		limit = v
	}
	if !h.scopePrefix(w, r, q.Get("prefix")) {
		return
	}
	h.onLeader(w, r, nil, func() {
		list, err := h.lockList(r, []string{q.Get("prefix")}, q.Get("holder"), limit)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, list)
	})
}

// lockList reads up to limit held keys under each of prefixes on the
// leader (the keys of several in key order, each once), shows each as r's
// credential may see it, and links them by who waits for whom
// (api.ListOf), keeping those holder names when it is set: the answer of
// GET /v1/locks and the table of the lock page.
func (h *handler) lockList(r *http.Request, prefixes []string, holder string, limit int) (api.LockList, error) {
	var locks []api.Lock
	truncated := false
	for _, p := range prefixes {
		some, more, err := h.store.List(r.Context(), p, limit)
		if err != nil {
			return api.LockList{}, err
		}
		locks, truncated = append(locks, some...), truncated || more
	}
	if len(prefixes) > 1 {
		slices.SortStableFunc(locks, func(a, b api.Lock) int { return strings.Compare(a.Key, b.Key) })
		locks = slices.CompactFunc(locks, func(a, b api.Lock) bool { return a.Key == b.Key })
		if len(locks) > limit {
			locks, truncated = locks[:limit], true
		}
	}
	c := caller(r)
	for i := range locks {
		showLock(c, &locks[i])
	}
	return api.ListOf(locks, truncated, holder), nil
}

// status answers GET /v1/status from this node, leader or not.
func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.store.Status(r.Context()))
}

// ready answers GET /readyz: 200 when the node can serve requests, 503
// with the reason when not. Like /healthz it needs no token: a load
// balancer or an orchestrator's probe asks it.
func (h *handler) ready(w http.ResponseWriter, r *http.Request) {
	ready := h.store.Ready(r.Context())
	status := http.StatusOK
	if !ready.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, ready)
}
