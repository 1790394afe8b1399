package httpapi_test

import (
	"testing"

	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/cluster/internal/apifuzz"
)

// The fuzz targets drive the handler over an in-memory Store with hostile
// bodies and queries, and check every answer against the oracle of
// package apifuzz. Without raft they run many more inputs a second than
// the targets against a real node (package cluster), which run a few of
// the same checks end to end. Seeds live in testdata/fuzz/<Target>/, and
// plain `go test` runs them.

// self is the one member of the fake cluster.
var self = apifuzz.Member{ID: "n1", Addr: "127.0.0.1:7101", HTTP: "127.0.0.1:7001"}

// fuzzServer is the handler over a fresh fake Store, as a target sees it.
func fuzzServer() *apifuzz.Server {
	s := newFakeStore(self.ID)
	h := httpapi.New(s, httpapi.Options{NodeID: self.ID, ClusterID: "fuzz", MaxWaits: 16})
	return &apifuzz.Server{H: h, Keys: s.keys, Self: self}
}

// fuzzBodies fuzzes the bodies target checks, on a fresh fake Store.
func fuzzBodies(f *testing.F, target func(*testing.T, *apifuzz.Server, []byte)) {
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, body []byte) { target(t, s, body) })
}

func FuzzAcquire(f *testing.F)      { fuzzBodies(f, apifuzz.Acquire) }
func FuzzRelease(f *testing.F)      { fuzzBodies(f, apifuzz.Release) }
func FuzzExtend(f *testing.F)       { fuzzBodies(f, apifuzz.Extend) }
func FuzzForceRelease(f *testing.F) { fuzzBodies(f, apifuzz.ForceRelease) }
func FuzzJoin(f *testing.F)         { fuzzBodies(f, apifuzz.Join) }
func FuzzLeave(f *testing.F)        { fuzzBodies(f, apifuzz.Leave) }

// FuzzGetLock fuzzes the query of GET /v1/lock while one key is held.
func FuzzGetLock(f *testing.F) {
	s := fuzzServer()
	apifuzz.HoldForGetLock(f, s)
	f.Fuzz(func(t *testing.T, rawQuery string) { apifuzz.GetLock(t, s, rawQuery) })
}

// FuzzListLocks fuzzes the query of GET /v1/locks while three keys are held.
func FuzzListLocks(f *testing.F) {
	s := fuzzServer()
	apifuzz.HoldForListLocks(f, s)
	f.Fuzz(func(t *testing.T, rawQuery string) { apifuzz.ListLocks(t, s, rawQuery) })
}
