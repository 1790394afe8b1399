package apifuzz

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
)

// The targets: each checks one input against s, on a table that holds no
// key (Acquire to Leave), the key HoldForGetLock takes (GetLock), or the
// keys HoldForListLocks takes (ListLocks).

// verdict is what the oracle expects of body: bodyVerdict's, or a 400
// when the decoded request in req fails valid, the oracle for its fields.
func verdict(body []byte, req any, valid func() bool) int {
	want := bodyVerdict(body, req)
	if want == 0 && !valid() {
		want = http.StatusBadRequest
	}
	return want
}

// post sends body to path and checks the answer: the status want (0 for
// a 200), its shape with a 200's body in resp and a 400 naming one of
// fields. It reports whether the answer was a 200.
func (s *Server) post(t *testing.T, path string, body []byte, want int, resp any, fields ...string) bool {
	t.Helper()
	rec := s.Post(path, body)
	expectStatus(t, rec, want, body)
	checkAnswer(t, rec, resp, fields...)
	return rec.Code == http.StatusOK
}

// Acquire checks POST /v1/acquire with body.
func Acquire(t *testing.T, s *Server, body []byte) {
	var req api.AcquireRequest
	var resp api.AcquireResponse
	want := verdict(body, &req, func() bool {
		return validKey(req.Key) && validOwner(req.Owner) && validTTL(req.TTLMillis) && validWait(req.WaitMillis, req.KeepMillis)
	})
	if s.post(t, "/v1/acquire", body, want, &resp, "body", "key", "owner", "ttl_ms", "wait_ms", "keep_ms") {
		if resp.Key != req.Key || resp.Owner != req.Owner || resp.Fence == 0 || resp.TTLMillis != req.TTLMillis {
			t.Fatalf("grant %+v does not match request %+v", resp, req)
		}
		// Free the key again, so every input finds an empty table. A
		// short TTL may run out first: then the expiry frees it.
		rel := s.Post("/v1/release", mustJSON(t, api.ReleaseRequest{Key: req.Key, Owner: req.Owner}))
		released := strings.Contains(rel.Body.String(), `"released":true`)
		if rel.Code != http.StatusOK || (!released && req.TTLMillis >= 5000) {
			t.Fatalf("release of the grant = %d %s", rel.Code, rel.Body)
		}
		if !released {
			s.waitKeys(t, 0, 5*time.Second, "the expiry of "+req.Key)
		}
	}
	s.settled(t, 0, body)
}

// Release checks POST /v1/release with body.
func Release(t *testing.T, s *Server, body []byte) {
	var req api.ReleaseRequest
	var resp api.ReleaseResponse
	want := verdict(body, &req, func() bool { return validKey(req.Key) && validOwner(req.Owner) })
	if s.post(t, "/v1/release", body, want, &resp, "body", "key", "owner") && resp.Released {
		t.Fatalf("released %+v, which nobody held", req)
	}
	s.settled(t, 0, body)
}

// Extend checks POST /v1/extend with body.
func Extend(t *testing.T, s *Server, body []byte) {
	var req api.ExtendRequest
	var resp api.ExtendResponse
	want := verdict(body, &req, func() bool { return validKey(req.Key) && validOwner(req.Owner) && validTTL(req.TTLMillis) })
	if s.post(t, "/v1/extend", body, want, &resp, "body", "key", "owner", "ttl_ms") && resp.Extended {
		t.Fatalf("extended %+v, which nobody held", req)
	}
	s.settled(t, 0, body)
}

// ForceRelease checks POST /v1/force-release with body.
func ForceRelease(t *testing.T, s *Server, body []byte) {
	var req api.ForceReleaseRequest
	var resp api.ReleaseResponse
	want := verdict(body, &req, func() bool { return validKey(req.Key) })
	if s.post(t, "/v1/force-release", body, want, &resp, "body", "key") && resp.Released {
		t.Fatalf("force-released %+v, which nobody held", req)
	}
	s.settled(t, 0, body)
}

// Join checks POST /v1/join with body. It sends only what cannot change
// the membership of the one-member cluster: invalid bodies, and valid
// ones that name s.Self (an idempotent no-op). A valid join of another id
// or address would add an unreachable voter and stop a real cluster,
// which is what join is for.
func Join(t *testing.T, s *Server, body []byte) {
	var req api.JoinRequest
	want := verdict(body, &req, func() bool {
		return validMemberID(req.ID) && validHostPort(req.Addr) && (req.HTTP == "" || validHostPort(req.HTTP))
	})
	if want == 0 && (req.ID != s.Self.ID || req.Addr != s.Self.Addr) {
		return
	}
	if want == 0 && req.HTTP != "" && req.HTTP != s.Self.HTTP {
		return // would point forwarding elsewhere; harmless, but not a no-op
	}
	s.post(t, "/v1/join", body, want, &struct{}{}, "body", "id", "addr", "http")
	s.settled(t, 0, body)
}

// Leave checks POST /v1/leave with body. Like Join it never removes
// s.Self; any other valid id is no member, and answered 404.
func Leave(t *testing.T, s *Server, body []byte) {
	var req api.LeaveRequest
	want := verdict(body, &req, func() bool { return validMemberID(req.ID) })
	if want == 0 && req.ID == s.Self.ID {
		return
	}
	if want == 0 {
		want = http.StatusNotFound
	}
	s.post(t, "/v1/leave", body, want, &struct{}{}, "body", "id")
	s.settled(t, 0, body)
}

// HoldForGetLock takes the key GetLock expects to find held.
func HoldForGetLock(tb testing.TB, s *Server) {
	tb.Helper()
	held := s.Post("/v1/acquire", []byte(`{"key":"held","owner":"o","ttl_ms":3600000}`))
	if held.Code != http.StatusOK {
		tb.Fatalf("acquire: %d %s", held.Code, held.Body)
	}
}

// GetLock checks the query rawQuery of GET /v1/lock while the key of
// HoldForGetLock is held.
func GetLock(t *testing.T, s *Server, rawQuery string) {
	req := readGet("/v1/lock", rawQuery)
	if req == nil {
		return
	}
	q, qerr := strictQuery(req.URL.RawQuery, "key")
	key := q.Get("key")
	var want int
	switch {
	case qerr != nil, !validKey(key):
		want = http.StatusBadRequest
	case key != "held":
		want = http.StatusNotFound
	}
	rec := s.Serve(req)
	expectStatus(t, rec, want, []byte(rawQuery))
	var resp api.Lock
	checkAnswer(t, rec, &resp, "key", "query")
	if rec.Code == http.StatusOK && (resp.Key != "held" || resp.Owner != "o" || resp.Fence == 0) {
		t.Fatalf("lock info %+v, want the held key", resp)
	}
	s.settled(t, 1, []byte(rawQuery))
}

// listed are the keys HoldForListLocks takes, in key order.
var listed = []string{"a/1", "a/2", "b/1"}

// HoldForListLocks takes the keys ListLocks expects to find held.
func HoldForListLocks(tb testing.TB, s *Server) {
	tb.Helper()
	for _, k := range listed {
		rec := s.Post("/v1/acquire", mustJSON(tb, api.AcquireRequest{Key: k, Owner: "o", TTLMillis: 3600000}))
		if rec.Code != http.StatusOK {
			tb.Fatalf("acquire %s: %d %s", k, rec.Code, rec.Body)
		}
	}
}

// ListLocks checks the query rawQuery of GET /v1/locks while the keys of
// HoldForListLocks are held.
func ListLocks(t *testing.T, s *Server, rawQuery string) {
	req := readGet("/v1/locks", rawQuery)
	if req == nil {
		return
	}
	q, qerr := strictQuery(req.URL.RawQuery, "prefix", "limit")
	want, limit := 0, defaultListLimit
	if qerr != nil {
		want = http.StatusBadRequest
	} else if s := q.Get("limit"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 1 || v > maxListLimit {
			want = http.StatusBadRequest
		}
		limit = int(v)
	}
	rec := s.Serve(req)
	expectStatus(t, rec, want, []byte(rawQuery))
	var resp api.LockList
	checkAnswer(t, rec, &resp, "limit", "query")
	if rec.Code != http.StatusOK {
		return
	}
	var wantKeys []string
	for _, k := range listed {
		if strings.HasPrefix(k, q.Get("prefix")) && len(wantKeys) < limit {
			wantKeys = append(wantKeys, k)
		}
	}
	var got []string
	for _, l := range resp.Locks {
		got = append(got, l.Key)
	}
	if strings.Join(got, ",") != strings.Join(wantKeys, ",") {
		t.Fatalf("query %q listed %v, want %v", rawQuery, got, wantKeys)
	}
	s.settled(t, 3, []byte(rawQuery))
}
