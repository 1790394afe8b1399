package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
)

// A 400 names the field or the query parameter at fault in the API's own
// terms, and never a Go type or struct name.
func TestAPI_BadRequestsNameTheFieldNotGoTypes(t *testing.T) {
	h := newHandler(newFakeStore("n1"), httpapi.Options{})
	for _, tc := range []struct {
		name, method, path string
		body               string
		want               string
	}{
		{"ttl as a string", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":"10s"}`, "lock: invalid ttl_ms: must be a number, not a string"},
		{"ttl with a fraction", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":1.5}`, "lock: invalid ttl_ms: must be an integer in range, not 1.5"},
		{"owner as a number", "POST", "/v1/release", `{"key":"k","owner":7}`, "lock: invalid owner: must be a string, not a number"},
		{"an array for the body", "POST", "/v1/acquire", `[1]`, "lock: invalid body: must be a JSON object, not an array"},
		{"unknown field", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl":5}`, `lock: invalid body: unknown field "ttl"; the fields are key, keys, owner, ttl_ms, wait_ms`},
		{"cut short", "POST", "/v1/acquire", `{"key":"k"`, "lock: invalid body: the JSON object is cut short"},
		{"not JSON", "POST", "/v1/acquire", `key=k`, "lock: invalid body: not valid JSON at byte 1: invalid character 'k' looking for beginning of value"},
		{"missing key", "POST", "/v1/acquire", `{"owner":"o","ttl_ms":1000}`, "lock: invalid key: empty"},
		{"missing ttl", "POST", "/v1/acquire", `{"key":"k","owner":"o"}`, "lock: invalid ttl_ms: "},
		{"negative keep", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":1000,"wait_ms":10,"keep_ms":-1}`, "lock: invalid keep_ms: -1 is negative"},
		{"keep without a wait", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":1000,"keep_ms":10}`, "lock: invalid keep_ms: keeps the place of a wait; name wait_ms too"},
		{"keep without a wait, of a set", "POST", "/v1/acquire", `{"keys":["k"],"owner":"o","ttl_ms":1000,"keep_ms":10}`, "lock: invalid keep_ms: "},
		{"missing query parameter", "GET", "/v1/lock", "", "lock: invalid key: empty"},
		{"bad limit", "GET", "/v1/locks?limit=x", "", `lock: invalid limit: "x" is not an integer`},
		{"leave without id", "POST", "/v1/leave", `{}`, "lock: invalid id: missing"},
		{"join with a numeric id", "POST", "/v1/join", `{"id":4,"addr":"127.0.0.1:1"}`, "lock: invalid id: must be a string, not a number"},
		{"join without a port", "POST", "/v1/join", `{"id":"n4","addr":"127.0.0.1"}`, `lock: invalid addr: "127.0.0.1" is not host:port`},
		{"leave with a space", "POST", "/v1/leave", `{"id":"n 4"}`, "lock: invalid id: contains white space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(h, tc.method, tc.path, tc.body)
			if r.status != http.StatusBadRequest || r.err.Code != api.CodeInvalid {
				t.Fatalf("status %d code %q, want 400 invalid; body %s", r.status, r.err.Code, r.raw)
			}
			msg := r.err.Message
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("message %q, want it to start with %q", msg, tc.want)
			}
			for _, goName := range []string{"Go ", "struct", "int64", "uint64", "Request", "cluster."} {
				if strings.Contains(msg, goName) {
					t.Errorf("message %q shows the Go name %q", msg, goName)
				}
			}
		})
	}
}

// A lone surrogate in a key is refused with a 400 that says so: decoded,
// it would become U+FFFD, and two different keys would name one lock.
func TestAPI_LoneSurrogateKeyRefused(t *testing.T) {
	h := newHandler(newFakeStore(), httpapi.Options{})
	r := do(h, "POST", "/v1/acquire", `{"key":"a\udcff","owner":"o","ttl_ms":1000}`)
	if r.status != http.StatusBadRequest || !strings.Contains(r.err.Message, "surrogate") {
		t.Fatalf("acquire with a lone surrogate: %d %s, want a 400 naming the surrogate", r.status, r.raw)
	}
	r = do(h, "POST", "/v1/acquire", `{"key":"a\ud83d\ude00","owner":"o","ttl_ms":1000}`)
	var grant api.AcquireResponse
	if r.status != http.StatusOK || json.Unmarshal(r.raw, &grant) != nil || grant.Key != "a\U0001F600" {
		t.Fatalf("acquire with a surrogate pair: %d %s", r.status, r.raw)
	}
}

// wait_ms and keep_ms reach the Store as durations, keep_ms capped at
// api.MaxKeepMillis.
func TestAPI_AcquirePassesItsWaitAndKeep(t *testing.T) {
	s := newFakeStore()
	h := newHandler(s, httpapi.Options{})
	for body, want := range map[string]httpapi.Wait{
		`{"key":"a","owner":"o","ttl_ms":1000}`:                                 {},
		`{"key":"b","owner":"o","ttl_ms":1000,"wait_ms":250}`:                   {For: 250 * time.Millisecond},
		`{"key":"c","owner":"o","ttl_ms":1000,"wait_ms":250,"keep_ms":2000}`:    {For: 250 * time.Millisecond, Keep: 2 * time.Second},
		`{"key":"d","owner":"o","ttl_ms":1000,"wait_ms":250,"keep_ms":3600000}`: {For: 250 * time.Millisecond, Keep: api.MaxKeepMillis * time.Millisecond},
	} {
		if r := do(h, "POST", api.PathAcquire, body); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
		s.mu.Lock()
		got := s.wait
		s.mu.Unlock()
		if got != want {
			t.Errorf("%s: the Store was given %+v; want %+v", body, got, want)
		}
	}
}
