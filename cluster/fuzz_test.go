package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// The fuzz targets below drive the real HTTP handler of a single-node
// cluster, started once per target, with hostile bodies and queries. For
// every input they check, against an oracle written here independently of
// the handlers: no panic; a documented status; a JSON body of the
// documented shape; 200 for a valid request and only for one; a 400 that
// names the problem; and every few inputs, that the node still grants and
// releases a lock. Seeds live in testdata/fuzz/<Target>/, and plain
// `go test` runs them.

// fuzzNode is the node a fuzz target talks to.
type fuzzNode struct {
	n     *Node
	h     http.Handler
	execs int
}

func startFuzzNode(f *testing.F) *fuzzNode {
	f.Helper()
	cfg := testConfig(f, "n1")
	// Small timing: a single node elects itself quickly. A short MaxWait
	// bounds an acquire with wait_ms.
	cfg.ElectionTimeout, cfg.HeartbeatTimeout, cfg.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	cfg.MaxWait = 20 * time.Millisecond
	cfg.Logger = testLogger(f, "n1").With("logger", "fuzz")
	n := startNode(f, cfg)
	waitLeader(f, []*Node{n})
	return &fuzzNode{n: n, h: n.Handler()}
}

// serve sends one request through the node's handler.
func (fn *fuzzNode) serve(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	fn.h.ServeHTTP(rec, req)
	return rec
}

func (fn *fuzzNode) post(path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return fn.serve(req)
}

// stillServes checks, every 16 inputs, that a valid acquire and release of
// a fixed key still succeed: no input may leave the node unable to serve.
func (fn *fuzzNode) stillServes(t *testing.T) {
	t.Helper()
	fn.execs++
	if fn.execs%16 != 1 {
		return
	}
	rec := fn.post("/v1/acquire", []byte(`{"key":"fuzz:alive","owner":"fuzz-probe","ttl_ms":60000}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("node stopped serving: probe acquire = %d %s", rec.Code, rec.Body)
	}
	rec = fn.post("/v1/release", []byte(`{"key":"fuzz:alive","owner":"fuzz-probe"}`))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"released":true`) {
		t.Fatalf("node stopped serving: probe release = %d %s", rec.Code, rec.Body)
	}
}

// keysHeld checks that the table holds want keys: a refused request
// changes nothing, and the targets free what they take.
func (fn *fuzzNode) keysHeld(t *testing.T, want int, in []byte) {
	t.Helper()
	if got := fn.n.fsm.Engine().Len(); got != want {
		t.Fatalf("table holds %d keys after input %q, want %d", got, in, want)
	}
}

// errorStatuses are the documented error answers and their codes.
var errorStatuses = map[int]string{
	http.StatusBadRequest:            api.CodeInvalid,
	http.StatusNotFound:              api.CodeNotFound,
	http.StatusConflict:              api.CodeNotAcquired,
	http.StatusRequestEntityTooLarge: api.CodeTooLarge,
	http.StatusTooManyRequests:       api.CodeFull,
}

// checkAnswer checks the shape of an answer: JSON, a documented status, an
// error body {code, message} for errors, and for a 200 a body that decodes
// strictly into ok (a pointer to the endpoint's response type). For a 400,
// every line of the message must name one of fields.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder, ok any, fields ...string) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; status %d body %q", ct, rec.Code, rec.Body)
	}
	raw := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		if err := strictJSON(raw, ok); err != nil {
			t.Fatalf("200 body %q is not a %T: %v", raw, ok, err)
		}
		return
	}
	code, documented := errorStatuses[rec.Code]
	if !documented {
		t.Fatalf("undocumented status %d, body %q", rec.Code, raw)
	}
	var body api.ErrorBody
	if err := strictJSON(raw, &body); err != nil {
		t.Fatalf("error body %q is not {code, message}: %v", raw, err)
	}
	if body.Code != code || body.Message == "" {
		t.Fatalf("status %d with code %q, message %q; want code %q and a message", rec.Code, body.Code, body.Message, code)
	}
	if rec.Code != http.StatusBadRequest {
		return
	}
	for _, line := range strings.Split(body.Message, "\n") {
		if !namesField(line, fields) {
			t.Fatalf("400 message line %q names none of %v", line, fields)
		}
	}
}

func namesField(line string, fields []string) bool {
	for _, f := range fields {
		if strings.HasPrefix(line, "lock: invalid "+f+": ") {
			return true
		}
	}
	return false
}

// strictJSON decodes exactly one JSON value into v, refusing unknown
// fields and trailing data.
func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

// jsonEscape matches one escape sequence of a JSON string; scanning them
// left to right pairs each backslash with what it escapes.
var jsonEscape = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|.)`)

// hasLoneSurrogate is the oracle for the API's refusal of \uD800-\uDFFF
// escapes that are not a high half immediately followed by a low half.
func hasLoneSurrogate(raw []byte) bool {
	locs := jsonEscape.FindAllIndex(raw, -1)
	half := func(i int) (high, low bool) {
		esc := raw[locs[i][0]:locs[i][1]]
		if len(esc) != 6 {
			return false, false
		}
		v, _ := strconv.ParseUint(string(esc[2:]), 16, 32)
		return v >= 0xd800 && v <= 0xdbff, v >= 0xdc00 && v <= 0xdfff
	}
	for i := 0; i < len(locs); i++ {
		high, low := half(i)
		if low {
			return true // a low half with no high half before it
		}
		if !high {
			continue
		}
		if i+1 == len(locs) || locs[i+1][0] != locs[i][1] {
			return true
		}
		if _, nextLow := half(i + 1); !nextLow {
			return true
		}
		i++
	}
	return false
}

// bodyVerdict is what the oracle expects of a body before its fields are
// looked at: 413, 400, or a decoded request in v.
func bodyVerdict(raw []byte, v any) (status int) {
	switch {
	case len(raw) > maxBodyBytes:
		return http.StatusRequestEntityTooLarge
	case !utf8.Valid(raw), hasLoneSurrogate(raw), strictJSON(raw, v) != nil:
		return http.StatusBadRequest
	}
	return 0
}

func validKey(k string) bool {
	return k != "" && len(k) <= drivers.MaxKeyLen && utf8.ValidString(k)
}

func validOwner(o string) bool { return o != "" && len(o) <= 1024 && utf8.ValidString(o) }

func validTTL(ms int64) bool { return ms >= 1 && ms <= drivers.MaxTTL.Milliseconds() }

// expectStatus fails unless got is want, or, when want is 0 (a valid
// request), 200.
func expectStatus(t *testing.T, rec *httptest.ResponseRecorder, want int, in []byte) {
	t.Helper()
	if want == 0 {
		want = http.StatusOK
	}
	if rec.Code != want {
		t.Fatalf("status %d, want %d; input %q; answer %s", rec.Code, want, in, rec.Body)
	}
}

func FuzzAcquire(f *testing.F) {
	fn := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.AcquireRequest
		want := bodyVerdict(body, &req)
		if want == 0 && !(validKey(req.Key) && validOwner(req.Owner) && validTTL(req.TTLMillis) && req.WaitMillis >= 0) {
			want = http.StatusBadRequest
		}
		rec := fn.post("/v1/acquire", body)
		expectStatus(t, rec, want, body)
		var resp api.AcquireResponse
		checkAnswer(t, rec, &resp, "body", "key", "owner", "ttl_ms", "wait_ms")
		if rec.Code == http.StatusOK {
			if resp.Key != req.Key || resp.Owner != req.Owner || resp.Fence == 0 || resp.TTLMillis != req.TTLMillis {
				t.Fatalf("grant %+v does not match request %+v", resp, req)
			}
			// Free the key again, so every input finds an empty table. A
			// short TTL may run out first: then the expiry frees it.
			rel := fn.post("/v1/release", mustJSON(t, api.ReleaseRequest{Key: req.Key, Owner: req.Owner}))
			released := strings.Contains(rel.Body.String(), `"released":true`)
			if rel.Code != http.StatusOK || (!released && req.TTLMillis >= 5000) {
				t.Fatalf("release of the grant = %d %s", rel.Code, rel.Body)
			}
			if !released {
				waitFor(t, 5*time.Second, "the expiry of "+req.Key, func() bool { return fn.n.fsm.Engine().Len() == 0 })
			}
		}
		fn.keysHeld(t, 0, body)
		fn.stillServes(t)
	})
}

func FuzzRelease(f *testing.F) {
	fn := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.ReleaseRequest
		want := bodyVerdict(body, &req)
		if want == 0 && !(validKey(req.Key) && validOwner(req.Owner)) {
			want = http.StatusBadRequest
		}
		rec := fn.post("/v1/release", body)
		expectStatus(t, rec, want, body)
		var resp api.ReleaseResponse
		checkAnswer(t, rec, &resp, "body", "key", "owner")
		if rec.Code == http.StatusOK && resp.Released {
			t.Fatalf("released %+v, which nobody held", req)
		}
		fn.keysHeld(t, 0, body)
		fn.stillServes(t)
	})
}

func FuzzExtend(f *testing.F) {
	fn := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.ExtendRequest
		want := bodyVerdict(body, &req)
		if want == 0 && !(validKey(req.Key) && validOwner(req.Owner) && validTTL(req.TTLMillis)) {
			want = http.StatusBadRequest
		}
		rec := fn.post("/v1/extend", body)
		expectStatus(t, rec, want, body)
		var resp api.ExtendResponse
		checkAnswer(t, rec, &resp, "body", "key", "owner", "ttl_ms")
		if rec.Code == http.StatusOK && resp.Extended {
			t.Fatalf("extended %+v, which nobody held", req)
		}
		fn.keysHeld(t, 0, body)
		fn.stillServes(t)
	})
}

func FuzzForceRelease(f *testing.F) {
	fn := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.ForceReleaseRequest
		want := bodyVerdict(body, &req)
		if want == 0 && !validKey(req.Key) {
			want = http.StatusBadRequest
		}
		rec := fn.post("/v1/force-release", body)
		expectStatus(t, rec, want, body)
		var resp api.ReleaseResponse
		checkAnswer(t, rec, &resp, "body", "key")
		if rec.Code == http.StatusOK && resp.Released {
			t.Fatalf("force-released %+v, which nobody held", req)
		}
		fn.keysHeld(t, 0, body)
		fn.stillServes(t)
	})
}

// validMemberID is the oracle for ids in join and leave.
func validMemberID(id string) bool {
	return id != "" && len(id) <= 128 && utf8.ValidString(id) && !strings.ContainsFunc(id, unicode.IsSpace)
}

func validHostPort(s string) bool {
	_, port, err := net.SplitHostPort(s)
	return err == nil && port != "" && len(s) <= 256
}

// FuzzJoin sends only what cannot change the membership of the one-node
// cluster: invalid bodies, and valid ones that name the node itself (an
// idempotent no-op). A valid join of another id or address would add an
// unreachable voter and stop the cluster, which is what join is for.
func FuzzJoin(f *testing.F) {
	fn := startFuzzNode(f)
	self, selfAddr := fn.n.ID(), fn.n.RaftAddr()
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.JoinRequest
		want := bodyVerdict(body, &req)
		if want == 0 && !(validMemberID(req.ID) && validHostPort(req.Addr) && (req.HTTP == "" || validHostPort(req.HTTP))) {
			want = http.StatusBadRequest
		}
		if want == 0 && (req.ID != self || req.Addr != selfAddr) {
			return
		}
		if want == 0 && req.HTTP != "" && req.HTTP != fn.n.AdvertisedHTTPAddr() {
			return // would point forwarding elsewhere; harmless, but not a no-op
		}
		rec := fn.post("/v1/join", body)
		expectStatus(t, rec, want, body)
		checkAnswer(t, rec, &struct{}{}, "body", "id", "addr", "http")
		fn.keysHeld(t, 0, body)
		fn.stillServes(t)
	})
}

// FuzzLeave, like FuzzJoin, never removes the node itself; any other
// valid id is no member of the one-node cluster, and answered 404.
func FuzzLeave(f *testing.F) {
	fn := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.LeaveRequest
		want := bodyVerdict(body, &req)
		if want == 0 && !validMemberID(req.ID) {
			want = http.StatusBadRequest
		}
		if want == 0 && req.ID == fn.n.ID() {
			return
		}
		if want == 0 {
			want = http.StatusNotFound
		}
		rec := fn.post("/v1/leave", body)
		expectStatus(t, rec, want, body)
		checkAnswer(t, rec, &struct{}{}, "body", "id")
		fn.keysHeld(t, 0, body)
		fn.stillServes(t)
	})
}

// readGet turns a raw query into a GET request the way the HTTP server
// would, or returns nil when the server would refuse the request line
// before any handler runs.
func readGet(path, rawQuery string) *http.Request {
	line := "GET " + path + "?" + rawQuery + " HTTP/1.1\r\nHost: fuzz\r\n\r\n"
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(line)))
	if err != nil || req.URL.Path != path {
		return nil
	}
	return req
}

// FuzzGetLock fuzzes the query of GET /v1/lock while one key is held.
func FuzzGetLock(f *testing.F) {
	fn := startFuzzNode(f)
	held := fn.post("/v1/acquire", []byte(`{"key":"held","owner":"o","ttl_ms":3600000}`))
	if held.Code != http.StatusOK {
		f.Fatalf("acquire: %d %s", held.Code, held.Body)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
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
		rec := fn.serve(req)
		expectStatus(t, rec, want, []byte(rawQuery))
		var resp api.LockInfo
		checkAnswer(t, rec, &resp, "key", "query")
		if rec.Code == http.StatusOK && (resp.Key != "held" || resp.Owner != "o" || resp.Fence == 0) {
			t.Fatalf("lock info %+v, want the held key", resp)
		}
		fn.keysHeld(t, 1, []byte(rawQuery))
		fn.stillServes(t)
	})
}

// FuzzListLocks fuzzes the query of GET /v1/locks while three keys are held.
func FuzzListLocks(f *testing.F) {
	fn := startFuzzNode(f)
	for _, k := range []string{"a/1", "a/2", "b/1"} {
		rec := fn.post("/v1/acquire", mustJSON(f, api.AcquireRequest{Key: k, Owner: "o", TTLMillis: 3600000}))
		if rec.Code != http.StatusOK {
			f.Fatalf("acquire %s: %d %s", k, rec.Code, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
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
		rec := fn.serve(req)
		expectStatus(t, rec, want, []byte(rawQuery))
		var resp api.LockList
		checkAnswer(t, rec, &resp, "limit", "query")
		if rec.Code != http.StatusOK {
			return
		}
		var wantKeys []string
		for _, k := range []string{"a/1", "a/2", "b/1"} {
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
		fn.keysHeld(t, 3, []byte(rawQuery))
		fn.stillServes(t)
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The oracle's surrogate scan and the handler's agree on a few cases that
// matter (both are fuzzed against each other through FuzzAcquire).
func TestLoneSurrogate_Oracle(t *testing.T) {
	cases := map[string]bool{
		`{"key":"\ud800"}`:                    true,
		`{"key":"\udcff"}`:                    true,
		`{"key":"\ud83d\ude00"}`:              false, // a pair: U+1F600
		`{"key":"\ud83d\u0041"}`:              true,
		`{"key":"\ud83dx"}`:                   true,
		`{"key":"\\ud800"}`:                   false, // an escaped backslash, then text
		`{"key":"\\\ud800"}`:                  true,
		`{"key":"\ude00\ud83d"}`:              true,
		`{"key":"\ud83d\ude00\ud83d"}`:        true,
		`{"key":"\uD83D\uDE00","o":"\u00e9"}`: false,
	}
	for in, lone := range cases {
		if got := hasLoneSurrogate([]byte(in)); got != lone {
			t.Errorf("oracle(%s) = %v, want %v", in, got, lone)
		}
		if got := loneSurrogate([]byte(in)) >= 0; got != lone {
			t.Errorf("loneSurrogate(%s) = %v, want %v", in, got, lone)
		}
	}
}

// A lone surrogate in a key is refused with a 400 that says so: decoded,
// it would become U+FFFD, and two different keys would name one lock.
func TestAPI_LoneSurrogateKeyRefused(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	r := c.do(n.HTTPAddr(), "POST", "/v1/acquire", `{"key":"a\udcff","owner":"o","ttl_ms":1000}`)
	mustStatus(t, r, http.StatusBadRequest, "acquire with a lone surrogate")
	if !strings.Contains(r.str("message"), "surrogate") {
		t.Fatalf("message %q does not name the problem", r.str("message"))
	}
	r = c.do(n.HTTPAddr(), "POST", "/v1/acquire", `{"key":"a\ud83d\ude00","owner":"o","ttl_ms":1000}`)
	mustStatus(t, r, http.StatusOK, "acquire with a surrogate pair")
	if r.str("key") != "a\U0001F600" {
		t.Fatalf("key = %q", r.str("key"))
	}
}

// strictQuery is the oracle for parseQuery: the query must parse, and name
// only allowed parameters, each once.
func strictQuery(raw string, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, err
	}
	for name, vals := range q {
		if !slices.Contains(allowed, name) || len(vals) > 1 {
			return nil, fmt.Errorf("bad parameter %q", name)
		}
	}
	return q, nil
}
