package apifuzz

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
	"unicode"
	"unicode/utf8"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// The documented limits of the API.
const (
	maxBodyBytes     = 64 << 10
	defaultListLimit = 1000
	maxListLimit     = 10000
)

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

// HasLoneSurrogate is the oracle for the API's refusal of \uD800-\uDFFF
// escapes that are not a high half immediately followed by a low half.
func HasLoneSurrogate(raw []byte) bool {
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
	case !utf8.Valid(raw), HasLoneSurrogate(raw), strictJSON(raw, v) != nil:
		return http.StatusBadRequest
	}
	return 0
}

func validKey(k string) bool {
	return k != "" && len(k) <= drivers.MaxKeyLen && utf8.ValidString(k)
}

func validOwner(o string) bool { return o != "" && len(o) <= 1024 && utf8.ValidString(o) }

func validTTL(ms int64) bool { return ms >= 1 && ms <= drivers.MaxTTL.Milliseconds() }

// validWait is the oracle for wait_ms and keep_ms: neither negative, and
// a place kept only for a wait.
func validWait(waitMs, keepMs int64) bool {
	return waitMs >= 0 && keepMs >= 0 && (keepMs == 0 || waitMs > 0)
}

// validMemberID is the oracle for ids in join and leave.
func validMemberID(id string) bool {
	return id != "" && len(id) <= 128 && utf8.ValidString(id) && !strings.ContainsFunc(id, unicode.IsSpace)
}

func validHostPort(s string) bool {
	_, port, err := net.SplitHostPort(s)
	return err == nil && port != "" && len(s) <= 256
}

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

// strictQuery is the oracle for the API's query parsing: the query must
// parse, and name only allowed parameters, each once.
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

// mustJSON encodes v.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
