package raftstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

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
		db, err := bbolt.Open(path, 0o600, BoltOptions(path).BoltOptions)
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
	s, err := raftboltdb.New(BoltOptions(path))
	if err != nil {
		tb.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 300; i++ {
		// The walk never looks inside values: any command bytes will do.
		data := fmt.Appendf(nil, "acquire key-%d owner 1s at %d", i, i)
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
