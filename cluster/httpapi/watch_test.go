package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
)

// watchStore is the fake store with a watch that answers what it is given
// and records what it was asked.
type watchStore struct {
	*fakeStore
	key, seen string
	wait      time.Duration
	lock      api.Lock
	held      bool
}

func (s *watchStore) Watch(_ context.Context, key, seen string, wait time.Duration) (api.Lock, bool, error) {
	s.key, s.seen, s.wait = key, seen, wait
	return s.lock, s.held, nil
}

// GET /v1/watch checks its query before the store is asked, passes key,
// seen and wait_ms (default and cap MaxWatchWait) on, answers as GET
// /v1/lock does, and 501 from a store without a watch.
func TestWatch_QueryAndAnswers(t *testing.T) {
	s := &watchStore{fakeStore: newFakeStore(), lock: api.Lock{Key: "k", Owner: "o", Fence: 7}, held: true}
	h := newHandler(s, httpapi.Options{})
	for _, bad := range []string{"", "?key=", "?key=k&wait_ms=-1", "?key=k&wait_ms=x", "?key=k&wait_ms=30001", "?key=k&other=1"} {
		mustStatus(t, do(h, "GET", api.PathWatch+bad, ""), http.StatusBadRequest, "watch"+bad)
	}
	if s.key != "" {
		t.Fatalf("the store was asked %q for a bad query", s.key)
	}
	a := do(h, "GET", api.PathWatch+"?key=k&seen=3,5", "")
	mustStatus(t, a, http.StatusOK, "watch of a held key")
	if s.key != "k" || s.seen != "3,5" || s.wait != api.MaxWatchWait {
		t.Fatalf("store asked key %q seen %q wait %v; want k, 3,5 and %v", s.key, s.seen, s.wait, api.MaxWatchWait)
	}
	s.held = false
	mustStatus(t, do(h, "GET", api.PathWatch+"?key=k&wait_ms=250", ""), http.StatusNotFound, "watch of a free key")
	if s.wait != 250*time.Millisecond {
		t.Fatalf("wait %v, want 250ms", s.wait)
	}
	mustStatus(t, do(newHandler(newFakeStore(), httpapi.Options{}), "GET", api.PathWatch+"?key=k", ""), http.StatusNotImplemented, "a store without a watch")
}

// HoldersSeen is the same for a mutex and for shared holders in any order.
func TestHoldersSeen(t *testing.T) {
	for _, tc := range []struct {
		l    api.Lock
		held bool
		want string
	}{
		{api.Lock{Fence: 9}, false, ""},
		{api.Lock{Fence: 9}, true, "9"},
		{api.Lock{Fence: 4, Holders: []api.Holder{{Fence: 12}, {Fence: 4}}}, true, "4,12"},
	} {
		if got := api.HoldersSeen(tc.l, tc.held); got != tc.want {
			t.Errorf("HoldersSeen(%+v, %v) = %q, want %q", tc.l, tc.held, got, tc.want)
		}
	}
}
