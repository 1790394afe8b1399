package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
)

// POST /v1/acquire names a semaphore, a mode or neither (a mutex), and
// the Store gets the claim it means.
func TestAPI_AcquireSharedPassesTheClaim(t *testing.T) {
	for body, want := range map[string]drivers.Claim{
		`{"key":"k0","owner":"o","ttl_ms":1000}`:                           {},
		`{"keys":["k5","k6"],"owner":"o","ttl_ms":1000,"semaphore":2}`:     {Kind: drivers.Semaphore, Limit: 2},
		`{"key":"k","owner":"o","ttl_ms":1000,"semaphore":4}`:              {Kind: drivers.Semaphore, Limit: 4},
		`{"key":"k2","owner":"o","ttl_ms":1000,"mode":"read"}`:             {Kind: drivers.RWLock},
		`{"key":"k3","owner":"o","ttl_ms":1000,"mode":"write"}`:            {Kind: drivers.RWLock, Write: true},
		`{"key":"k4","owner":"o","ttl_ms":1000,"wait_ms":5,"semaphore":1}`: {Kind: drivers.Semaphore, Limit: 1},
	} {
		s := newFakeStore()
		h := newHandler(s, httpapi.Options{})
		mustStatus(t, do(h, "POST", api.PathAcquire, body), http.StatusOK, body)
		if s.claim != want {
			t.Errorf("%s: the store got %+v, want %+v", body, s.claim, want)
		}
	}
}

func TestAPI_AcquireSharedRefusesUnclearClaims(t *testing.T) {
	h := newHandler(newFakeStore(), httpapi.Options{})
	for body, want := range map[string]string{
		`{"key":"k","owner":"o","ttl_ms":1000,"semaphore":2,"mode":"read"}`: "lock: invalid mode: a semaphore has no mode",
		`{"key":"k","owner":"o","ttl_ms":1000,"mode":"shared"}`:             `lock: invalid mode: "shared" is neither "read" nor "write"`,
		`{"key":"k","owner":"o","ttl_ms":1000,"semaphore":-1}`:              "lock: invalid semaphore: ",
		`{"key":"k","owner":"o","ttl_ms":1000,"slots":2}`:                   "lock: invalid body: unknown field \"slots\"; the fields are key, keys, owner, ttl_ms, wait_ms, keep_ms, semaphore, mode",
	} {
		r := do(h, "POST", api.PathAcquire, body)
		if r.status != http.StatusBadRequest || !strings.HasPrefix(r.err.Message, want) {
			t.Errorf("%s: %d %q, want 400 starting %q", body, r.status, r.err.Message, want)
		}
	}
}

// A cluster that cannot apply a shared claim yet answers 501 unsupported.
func TestAPI_AcquireSharedUnsupportedIs501(t *testing.T) {
	s := newFakeStore()
	s.unsupported = fmt.Errorf("%w: member n3 runs an older release", drivers.ErrUnsupported)
	h := newHandler(s, httpapi.Options{})
	r := do(h, "POST", api.PathAcquire, `{"key":"k","owner":"o","ttl_ms":1000,"mode":"read"}`)
	if r.status != http.StatusNotImplemented || r.err.Code != api.CodeUnsupported || !strings.Contains(r.err.Message, "n3") {
		t.Fatalf("status %d code %q message %q, want 501 unsupported naming n3", r.status, r.err.Code, r.err.Message)
	}
}

// One body names key or keys: both, none, an empty set, a key twice or
// too many keys are 400s naming the field.
func TestAPI_AcquireKeysRefusesUnclearKeys(t *testing.T) {
	h := newHandler(newFakeStore(), httpapi.Options{})
	many := `"k0"` + strings.Repeat(`,"k"`, api.MaxAcquireKeys)
	for body, want := range map[string]string{
		`{"owner":"o","ttl_ms":1000}`:                        "lock: invalid key: empty",
		`{"key":"a","keys":["b"],"owner":"o","ttl_ms":1000}`: "lock: invalid keys: name key or keys, not both",
		`{"keys":[],"owner":"o","ttl_ms":1000}`:              "lock: invalid keys: 0 keys; name 1 to 64",
		`{"keys":["a","a"],"owner":"o","ttl_ms":1000}`:       `lock: invalid keys: key "a" is named twice`,
		`{"keys":["a",""],"owner":"o","ttl_ms":1000}`:        "lock: invalid key: empty",
		`{"keys":[` + many + `],"owner":"o","ttl_ms":1000}`:  "lock: invalid keys: 65 keys; name 1 to 64",
	} {
		r := do(h, "POST", api.PathAcquire, body)
		if r.status != http.StatusBadRequest || !strings.HasPrefix(r.err.Message, want) {
			t.Errorf("%.60s: %d %q, want 400 starting %q", body, r.status, r.err.Message, want)
		}
	}
}

// A set is answered with each key's fence in the request's order, and
// the first key's as the answer's own; one key is answered as v0.1.0 did.
func TestAPI_AcquireKeysAnswersEveryFence(t *testing.T) {
	h := newHandler(newFakeStore(), httpapi.Options{})
	mustStatus(t, do(h, "POST", api.PathAcquire, `{"key":"a","owner":"o","ttl_ms":1000}`), http.StatusOK, "one key")
	r := do(h, "POST", api.PathAcquire, `{"keys":["c","a","b"],"owner":"o","ttl_ms":1000}`)
	want := `{"key":"c","owner":"o","fence":2,"ttl_ms":1000,"locks":[{"key":"c","fence":2},{"key":"a","fence":1},{"key":"b","fence":3}]}`
	if r.status != http.StatusOK || strings.TrimSpace(string(r.raw)) != want {
		t.Fatalf("a set: %d %s, want %s", r.status, r.raw, want)
	}
	r = do(h, "POST", api.PathAcquire, `{"key":"d","owner":"o","ttl_ms":1000}`)
	if want := `{"key":"d","owner":"o","fence":4,"ttl_ms":1000}`; strings.TrimSpace(string(r.raw)) != want {
		t.Fatalf("one key: %s, want %s", r.raw, want)
	}
}
