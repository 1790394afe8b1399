package cluster

import (
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/internal/apifuzz"
)

// The HTTP fuzz targets run in package httpapi, against an in-memory
// Store. Three of them run here as well, against the real handler of a
// single-node cluster started once per target, with the same oracle
// (package apifuzz) and the same seeds (httpapi's testdata): end to end,
// through raft and the engine, they check that the node's answers are the
// ones the oracle expects of the API.

// fuzzSeeds is where the seeds of the HTTP targets live.
const fuzzSeeds = "httpapi/testdata/fuzz/"

// startFuzzNode starts the node a fuzz target talks to.
func startFuzzNode(f *testing.F) *apifuzz.Server {
	f.Helper()
	cfg := testConfig(f, "n1")
	// Small timing: a single node elects itself quickly. A short MaxWait
	// bounds an acquire with wait_ms.
	cfg.ElectionTimeout, cfg.HeartbeatTimeout, cfg.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	cfg.MaxWait = 20 * time.Millisecond
	cfg.Logger = testLogger(f, "n1").With("logger", "fuzz")
	n := startNode(f, cfg)
	waitLeader(f, []*Node{n})
	return &apifuzz.Server{
		H:    n.Handler(),
		Keys: n.fsm.Keys,
		Self: apifuzz.Member{ID: n.ID(), Addr: n.RaftAddr(), HTTP: n.AdvertisedHTTPAddr()},
	}
}

// FuzzNodeAcquire is httpapi's FuzzAcquire against a real node: grants,
// refreshes, waits (bounded by MaxWait) and expiries through raft.
func FuzzNodeAcquire(f *testing.F) {
	apifuzz.AddBytes(f, fuzzSeeds+"FuzzAcquire")
	s := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, body []byte) { apifuzz.Acquire(t, s, body) })
}

// FuzzNodeLeave is httpapi's FuzzLeave against a real node: the raft
// configuration decides what is a member.
func FuzzNodeLeave(f *testing.F) {
	apifuzz.AddBytes(f, fuzzSeeds+"FuzzLeave")
	s := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, body []byte) { apifuzz.Leave(t, s, body) })
}

// FuzzNodeGetLock is httpapi's FuzzGetLock against a real node: a
// linearizable read of the engine while one key is held.
func FuzzNodeGetLock(f *testing.F) {
	apifuzz.AddStrings(f, fuzzSeeds+"FuzzGetLock")
	s := startFuzzNode(f)
	apifuzz.HoldForGetLock(f, s)
	f.Fuzz(func(t *testing.T, rawQuery string) { apifuzz.GetLock(t, s, rawQuery) })
}
