package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
)

// max_hold_ms is 0 (no cap) or a cap of up to a week: anything else is a
// 400 that names the field and the range, the Store never asked; a cap in
// range reaches the Store as Request.MaxHold, for one key and for a set.
func TestAcquire_MaxHoldIsCheckedAndReachesTheStore(t *testing.T) {
	s := newFakeStore("n1")
	h := newHandler(s, httpapi.Options{})
	for _, body := range []string{
		`{"key":"k","owner":"o","ttl_ms":1000,"max_hold_ms":-1}`,
		`{"keys":["k","j"],"owner":"o","ttl_ms":1000,"max_hold_ms":604800001}`,
	} {
		a := do(h, "POST", "/v1/acquire", body)
		if a.status != http.StatusBadRequest || a.err.Code != api.CodeInvalid || !strings.HasPrefix(a.err.Message, "lock: invalid max_hold_ms: ") || !strings.Contains(a.err.Message, "[0, 604800000]") {
			t.Errorf("%s: status %d, %+v; want 400 invalid naming max_hold_ms and its range", body, a.status, a.err)
		}
	}
	if s.keys() != 0 {
		t.Fatalf("%d keys held after the refusals", s.keys())
	}
	for body, want := range map[string]time.Duration{
		`{"key":"k","owner":"o","ttl_ms":1000,"max_hold_ms":2500}`:             2500 * time.Millisecond,
		`{"keys":["a","b"],"owner":"o","ttl_ms":1000,"max_hold_ms":604800000}`: 7 * 24 * time.Hour,
		`{"key":"plain","owner":"o","ttl_ms":1000}`:                            0,
	} {
		mustStatus(t, do(h, "POST", "/v1/acquire", body), http.StatusOK, body)
		s.mu.Lock()
		got := s.maxHold
		s.mu.Unlock()
		if got != want {
			t.Errorf("%s: the Store got MaxHold %v, want %v", body, got, want)
		}
	}
}
