package client

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// fakeNode is an in-memory stand-in for one cluster node, for unit tests
// of the client's wire handling, error mapping and failover. The real
// cluster is exercised by the conformance test.
type fakeNode struct {
	t   testing.TB
	srv *httptest.Server

	token string
	// unavailable makes every /v1 request answer 503.
	unavailable atomic.Bool
	// leaderHTTP is what /v1/status reports as leader_http; unset, the node
	// reports itself as the leader.
	leaderHTTP atomic.Pointer[string]
	// fixed, when set, answers every /v1 request with this status and code.
	fixed atomic.Pointer[fixedAnswer]
	// frozen makes every request, status included, wait without an answer
	// until the test ends, like a stopped process whose kernel still
	// accepts connections.
	frozen atomic.Bool
	thaw   chan struct{} // closed when the test ends
	// holdWrites makes POST requests wait like frozen, while reads and
	// status answer: a follower forwarding writes to a stopped leader.
	holdWrites atomic.Bool
	// dropReplies is how many of the next POST requests are served and
	// then answered by closing the connection: a lost reply.
	dropReplies atomic.Int32
	// noKeep makes acquires refuse keep_ms as an unknown field, as a node
	// of a release before it does.
	noKeep atomic.Bool
	// v010 makes acquires decode v0.1.0's body (key, owner, ttl_ms,
	// wait_ms), refusing any other field as unknown, as a node of v0.1.0.
	v010 atomic.Bool
	// releaseGate, when set, holds every release until it is closed: a
	// release that reaches the node late.
	releaseGate atomic.Pointer[chan struct{}]
	// holdAcquires makes acquires wait like frozen: a wait that ctx cuts
	// off while the node has it.
	holdAcquires atomic.Bool
	// maxHold is the max_hold_ms of the last acquire decoded.
	maxHold atomic.Int64

	mu       sync.Mutex
	locks    map[string]*fakeLock
	fence    uint64
	changed  chan struct{} // closed and replaced whenever a lock is freed
	hits     map[string]int
	lastAuth string
	maxWait  int64
	waits    []int64 // wait_ms of every waiting acquire
	keeps    []int64 // keep_ms of every waiting acquire
}

type fixedAnswer struct {
	status int
	code   string
}

type fakeLock struct {
	owner    string
	fence    uint64
	deadline time.Time
}

// fakeClient starts a fake node without a token and a client of it
// alone, configured by cfg but for its addresses.
func fakeClient(t *testing.T, cfg Config) (*fakeNode, *Client) {
	t.Helper()
	n := newFakeNode(t, "")
	cfg.Addrs = []string{n.addr()}
	return n, newTestClient(t, cfg)
}

func newFakeNode(t testing.TB, token string) *fakeNode {
	t.Helper()
	f := &fakeNode{t: t, token: token, locks: map[string]*fakeLock{}, changed: make(chan struct{}), hits: map[string]int{}, thaw: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/acquire", f.acquire)
	mux.HandleFunc("POST /v1/release", f.release)
	mux.HandleFunc("POST /v1/extend", f.extend)
	mux.HandleFunc("POST /v1/force-release", f.force)
	mux.HandleFunc("GET /v1/lock", f.get)
	mux.HandleFunc("GET /v1/locks", f.list)
	mux.HandleFunc("GET /v1/status", f.status)
	mux.HandleFunc("POST /v1/join", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, struct{}{}) })
	mux.HandleFunc("POST /v1/leave", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, struct{}{}) })
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits[r.URL.Path]++
		f.lastAuth = r.Header.Get("Authorization")
		f.mu.Unlock()
		if f.frozen.Load() || (f.holdWrites.Load() && r.Method == http.MethodPost) {
			<-f.thaw
			return
		}
		if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
			writeError(w, 401, "unauthorized", "missing or wrong token")
			return
		}
		if fa := f.fixed.Load(); fa != nil {
			writeError(w, fa.status, fa.code, "fixed answer")
			return
		}
		if f.unavailable.Load() {
			writeError(w, 503, "unavailable", "no leader")
			return
		}
		if r.Method == http.MethodPost && f.takeDrop() {
			mux.ServeHTTP(httptest.NewRecorder(), r)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.thaw) }) // before Close, which waits for the frozen handlers
	return f
}

// takeDrop reports whether this request's reply is to be lost.
func (f *fakeNode) takeDrop() bool {
	for {
		n := f.dropReplies.Load()
		if n <= 0 {
			return false
		}
		if f.dropReplies.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (f *fakeNode) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeNode) hitCount(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, api.ErrorBody{Code: code, Message: msg})
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		writeError(w, 400, "invalid", "malformed body: "+err.Error())
		return false
	}
	return true
}

// waitsSent returns the wait_ms and keep_ms of every waiting acquire so
// far, in order.
func (f *fakeNode) waitsSent() (waits, keeps []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.waits), slices.Clone(f.keeps)
}

// held returns the live lock of key; call with mu held.
func (f *fakeNode) held(key string) *fakeLock {
	l := f.locks[key]
	if l != nil && time.Now().After(l.deadline) {
		delete(f.locks, key)
		return nil
	}
	return l
}

func (f *fakeNode) freed() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeNode) acquire(w http.ResponseWriter, r *http.Request) {
	var in api.AcquireRequest
	if f.v010.Load() {
		var old struct {
			Key        string `json:"key"`
			Owner      string `json:"owner"`
			TTLMillis  int64  `json:"ttl_ms"`
			WaitMillis int64  `json:"wait_ms,omitempty"`
		}
		if !decode(w, r, &old) {
			return
		}
		in = api.AcquireRequest{Key: old.Key, Owner: old.Owner, TTLMillis: old.TTLMillis, WaitMillis: old.WaitMillis}
	} else if !decode(w, r, &in) {
		return
	}
	f.maxHold.Store(in.MaxHoldMillis)
	if f.holdAcquires.Load() {
		<-f.thaw
		return
	}
	if in.Key == "" || in.Owner == "" || in.TTLMillis <= 0 {
		writeError(w, 400, "invalid", "key, owner and ttl_ms are required")
		return
	}
	deadline := time.Now().Add(time.Duration(in.WaitMillis) * time.Millisecond)
	f.mu.Lock()
	f.maxWait = max(f.maxWait, in.WaitMillis)
	if in.WaitMillis > 0 {
		f.waits = append(f.waits, in.WaitMillis)
		f.keeps = append(f.keeps, in.KeepMillis)
	}
	if in.KeepMillis != 0 && f.noKeep.Load() {
		f.mu.Unlock()
		writeError(w, 400, "invalid", `body: unknown field "keep_ms"; the fields are key, owner, ttl_ms, wait_ms`)
		return
	}
	for {
		l := f.held(in.Key)
		if l == nil || l.owner == in.Owner {
			if l == nil {
				f.fence++
				l = &fakeLock{owner: in.Owner, fence: f.fence}
				f.locks[in.Key] = l
			}
			l.deadline = time.Now().Add(time.Duration(in.TTLMillis) * time.Millisecond)
			f.mu.Unlock()
			writeJSON(w, 200, api.AcquireResponse{Key: in.Key, Owner: in.Owner, Fence: l.fence, TTLMillis: in.TTLMillis})
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			ms := time.Until(l.deadline).Milliseconds()
			holder := drivers.HolderOf(l.owner)
			f.mu.Unlock()
			// As a node answers: who holds the key and its time left.
			writeJSON(w, 409, api.ErrorBody{Code: "not_acquired", Message: "held by another owner", Key: in.Key, Holder: holder, HolderTTLMillis: &ms})
			return
		}
		ch := f.changed
		f.mu.Unlock()
		t := time.NewTimer(min(left, 5*time.Millisecond))
		select {
		case <-ch:
		case <-t.C: // also notices expiry
		case <-r.Context().Done():
		}
		t.Stop()
		f.mu.Lock()
	}
}

func (f *fakeNode) release(w http.ResponseWriter, r *http.Request) {
	var in api.ReleaseRequest
	if !decode(w, r, &in) {
		return
	}
	if gate := f.releaseGate.Load(); gate != nil {
		<-*gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.held(in.Key)
	ok := l != nil && l.owner == in.Owner
	if ok {
		delete(f.locks, in.Key)
		f.freed()
	}
	writeJSON(w, 200, api.ReleaseResponse{Released: ok})
}

func (f *fakeNode) extend(w http.ResponseWriter, r *http.Request) {
	var in api.ExtendRequest
	if !decode(w, r, &in) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.held(in.Key)
	ok := l != nil && l.owner == in.Owner
	if ok {
		l.deadline = time.Now().Add(time.Duration(in.TTLMillis) * time.Millisecond)
	}
	writeJSON(w, 200, api.ExtendResponse{Extended: ok, TTLMillis: in.TTLMillis})
}

func (f *fakeNode) force(w http.ResponseWriter, r *http.Request) {
	var in api.ForceReleaseRequest
	if !decode(w, r, &in) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := f.held(in.Key) != nil
	delete(f.locks, in.Key)
	if ok {
		f.freed()
	}
	writeJSON(w, 200, api.ReleaseResponse{Released: ok})
}

func (f *fakeNode) get(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.held(key)
	if l == nil {
		writeError(w, 404, "not_found", "key is free")
		return
	}
	writeJSON(w, 200, map[string]any{"key": key, "owner": l.owner, "fence": l.fence,
		"remaining_ms": time.Until(l.deadline).Milliseconds(), "waiters": 0})
}

func (f *fakeNode) list(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for k := range f.locks {
		if l := f.held(k); l != nil && strings.HasPrefix(k, prefix) {
			out = append(out, map[string]any{"key": k, "owner": l.owner, "fence": l.fence,
				"remaining_ms": time.Until(l.deadline).Milliseconds(), "waiters": 2})
		}
	}
	writeJSON(w, 200, map[string]any{"locks": out, "truncated": false})
}

func (f *fakeNode) status(w http.ResponseWriter, _ *http.Request) {
	st := Status{ID: "n1", State: "Leader", Term: 3, LeaderID: "n1", LeaderHTTP: f.addr()}
	if l := f.leaderHTTP.Load(); l != nil && *l != f.addr() {
		st.State, st.LeaderID, st.LeaderHTTP = "Follower", "leader", *l
	}
	writeJSON(w, 200, st)
}
