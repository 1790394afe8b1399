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

// POST /v1/acquire-shared names a semaphore or a mode, and the Store gets
// the claim it means.
func TestAPI_AcquireSharedPassesTheClaim(t *testing.T) {
	for body, want := range map[string]drivers.Claim{
		`{"key":"k","owner":"o","ttl_ms":1000,"semaphore":4}`:              {Kind: drivers.Semaphore, Limit: 4},
		`{"key":"k2","owner":"o","ttl_ms":1000,"mode":"read"}`:             {Kind: drivers.RWLock},
		`{"key":"k3","owner":"o","ttl_ms":1000,"mode":"write"}`:            {Kind: drivers.RWLock, Write: true},
		`{"key":"k4","owner":"o","ttl_ms":1000,"wait_ms":5,"semaphore":1}`: {Kind: drivers.Semaphore, Limit: 1},
	} {
		s := newFakeStore()
		h := newHandler(s, httpapi.Options{})
		mustStatus(t, do(h, "POST", api.PathAcquireShared, body), http.StatusOK, body)
		if s.claim != want {
			t.Errorf("%s: the store got %+v, want %+v", body, s.claim, want)
		}
	}
}

func TestAPI_AcquireSharedRefusesUnclearClaims(t *testing.T) {
	h := newHandler(newFakeStore(), httpapi.Options{})
	for body, want := range map[string]string{
		`{"key":"k","owner":"o","ttl_ms":1000}`:                             "lock: invalid semaphore: name semaphore (1 or more) or mode (read or write)",
		`{"key":"k","owner":"o","ttl_ms":1000,"semaphore":2,"mode":"read"}`: "lock: invalid mode: a semaphore has no mode",
		`{"key":"k","owner":"o","ttl_ms":1000,"mode":"shared"}`:             `lock: invalid mode: "shared" is neither "read" nor "write"`,
		`{"key":"k","owner":"o","ttl_ms":1000,"semaphore":-1}`:              "lock: invalid semaphore: ",
		`{"key":"k","owner":"o","ttl_ms":1000,"slots":2}`:                   "lock: invalid body: unknown field \"slots\"; the fields are key, owner, ttl_ms, wait_ms, keep_ms, semaphore, mode",
	} {
		r := do(h, "POST", api.PathAcquireShared, body)
		if r.status != http.StatusBadRequest || !strings.HasPrefix(r.err.Message, want) {
			t.Errorf("%s: %d %q, want 400 starting %q", body, r.status, r.err.Message, want)
		}
	}
}

// A cluster that cannot apply shared entries yet answers 501 unsupported.
func TestAPI_AcquireSharedUnsupportedIs501(t *testing.T) {
	s := newFakeStore()
	s.unsupported = fmt.Errorf("%w: member n3 runs an older release", drivers.ErrUnsupported)
	h := newHandler(s, httpapi.Options{})
	r := do(h, "POST", api.PathAcquireShared, `{"key":"k","owner":"o","ttl_ms":1000,"mode":"read"}`)
	if r.status != http.StatusNotImplemented || r.err.Code != api.CodeUnsupported || !strings.Contains(r.err.Message, "n3") {
		t.Fatalf("status %d code %q message %q, want 501 unsupported naming n3", r.status, r.err.Code, r.err.Message)
	}
}
