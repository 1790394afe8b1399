package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/client"
)

// locks on the cluster prints what it printed when it read GET /v1/locks
// itself: a node's lock object, read through the Manager's List (the
// client's drivers.Holding) and turned back, is the object the node sent,
// for a mutex, a semaphore and a read/write lock, each with a queue,
// owners shown whole or without their token.
func TestLocks_ClusterLockObjectRoundTrips(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	const hidden = "00000000000000000000000000000000"
	for _, l := range []api.Lock{
		{Key: "deploy", Owner: tok + ":pid42@host", Holder: "pid42@host", Fence: 7, Remaining: 12 * time.Second, Waiters: 2,
			Queue: []api.Waiting{{Owner: hidden + ":web-1", Holder: "web-1"}, {Owner: "app-chosen-owner"}}},
		{Key: "exports", Owner: hidden + ":b", Holder: "b", Fence: 9, Remaining: 3 * time.Second, Waiters: 1, Kind: api.KindSemaphore, Limit: 3,
			Holders: []api.Holder{
				{Owner: tok + ":a", Holder: "a", Fence: 8, Remaining: 5 * time.Second},
				{Owner: hidden + ":b", Holder: "b", Fence: 9, Remaining: 3 * time.Second},
				{Owner: "", Holder: "", Fence: 10, Remaining: 3 * time.Second},
			},
			Queue: []api.Waiting{{Owner: "app-chosen-owner"}}},
		{Key: "catalog", Owner: "reader-1", Holder: "reader-1", Fence: 4, Remaining: time.Second, Waiters: 1, Kind: api.KindRWLock,
			Holders: []api.Holder{
				{Owner: "reader-1", Holder: "reader-1", Fence: 4, Remaining: time.Second, Mode: api.ModeRead},
				{Owner: "reader-2", Holder: "reader-2", Fence: 5, Remaining: 2 * time.Second, Mode: api.ModeRead},
			},
			Queue: []api.Waiting{{Owner: "writer", Mode: api.ModeWrite}, {Owner: "reader-3", Mode: api.ModeRead}}},
	} {
		if got := apiLock(lock.Listed{Key: l.Key, Holding: client.HoldingOf(l)}); !reflect.DeepEqual(got, l) {
			t.Errorf("%s:\n got %+v\nwant %+v", l.Key, got, l)
		}
	}
}
