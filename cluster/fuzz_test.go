package cluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/zerotal/lock/cluster/internal/apifuzz"
	"github.com/zerotal/lock/fsm"
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
		Keys: n.fsm.Engine().Len,
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

// FuzzCheckBolt: checkBolt never panics on any file, and a file it accepts
// opens in bbolt the way the node opens it (free pages rebuilt by a scan)
// and reads back, every bucket and key, without a crash: bbolt itself
// trusts the file and faults or panics on damage.
func FuzzCheckBolt(f *testing.F) {
	seed := raftDBBytes(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := checkBolt(bytes.NewReader(b), int64(len(b))); err != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "raft.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := bbolt.Open(path, 0o600, boltStoreOptions(path).BoltOptions)
		if err != nil {
			return // a clean error is what the check is for, too
		}
		defer db.Close()
		_ = db.View(func(tx *bbolt.Tx) error {
			return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { return readBucket(b, 0) })
		})
	})
}

// readBucket reads every key of b and of the buckets nested in it. b is
// nil for a top-level key that is not a bucket (tx.ForEach passes those).
func readBucket(b *bbolt.Bucket, depth int) error {
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, _ []byte) error {
		if c := b.Bucket(k); c != nil && depth < 8 {
			return readBucket(c, depth+1)
		}
		return nil
	})
}

// raftDBBytes returns a real raft log file: a few hundred entries and
// the stable-store keys, as raft-boltdb writes them.
func raftDBBytes(tb testing.TB) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "raft.db")
	s, err := raftboltdb.New(boltStoreOptions(path))
	if err != nil {
		tb.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 300; i++ {
		data, err := fsm.Encode(fsm.Entry{Type: fsm.TypeAcquire, Key: fmt.Sprintf("key-%d", i), Owner: "owner", TTL: time.Second, Now: int64(i)})
		if err != nil {
			tb.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data})
	}
	if err := s.StoreLogs(logs); err != nil {
		tb.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
