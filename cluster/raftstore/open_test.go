package raftstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// openT opens dir for clusterID and closes it at the end of the test.
func openT(t *testing.T, dir, clusterID string) *Stores {
	t.Helper()
	s, err := Open(dir, Options{ClusterID: clusterID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A data dir with raft state belongs to its cluster; one without state
// takes whichever cluster ID it is opened for.
func TestOpen_ClusterIDOfTheDataDir(t *testing.T) {
	empty := t.TempDir()
	s := openT(t, empty, "alpha")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, empty, "beta") // no raft state yet: adopts beta
	if err := s.StableStore.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.LogStore.StoreLog(&raft.Log{Index: 1, Term: 1, Type: raft.LogNoop}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty, Options{ClusterID: "alpha"}); err == nil || !strings.Contains(err.Error(), `belongs to cluster "beta"`) {
		t.Fatalf("opening beta's dir for alpha: %v, want a refusal naming beta", err)
	}
	s = openT(t, empty, "beta")
	if existing, err := s.HasExistingState(); err != nil || !existing {
		t.Fatalf("HasExistingState = %v, %v; want true", existing, err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("a clean dir: %v", err)
	}
}

// An empty raft.db would become a new, empty log: CheckFiles refuses it
// and names the file; a dir without raft.db or snapshots is a new node.
func TestCheckFiles_EmptyRaftDBIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := CheckFiles(dir); err != nil {
		t.Fatalf("a new node's dir: %v", err)
	}
	path := filepath.Join(dir, raftDBFile)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckFiles(dir); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty raft.db: %v, want a refusal naming it", err)
	}
}

// A command entry that CheckCommand refuses stops the start, naming the
// entry; without CheckCommand the bytes are not looked at.
func TestCheck_UndecodableCommandIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, "c")
	if err := s.StableStore.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.LogStore.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("good")},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("bad")},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("without CheckCommand: %v", err)
	}
	s.opts.CheckCommand = func(b []byte) error {
		if string(b) == "bad" {
			return os.ErrInvalid
		}
		return nil
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "log entry 2 does not decode") {
		t.Fatalf("with CheckCommand: %v, want entry 2 refused", err)
	}
}

// A bolt data dir gets no record of its log store: its raft.db holds what
// it held before the WAL existed. A WAL data dir records it.
func TestOpen_OnlyAWALIsRecorded(t *testing.T) {
	for _, kind := range []string{LogBolt, LogWAL} {
		s, err := Open(t.TempDir(), Options{ClusterID: "c", Log: kind})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.bolt.Get(logStoreKey)
		if kind == LogBolt && (err == nil || len(got) > 0) {
			t.Errorf("bolt data dir records %q (%v)", got, err)
		}
		if kind == LogWAL && string(got) != LogWAL {
			t.Errorf("WAL data dir records %q (%v)", got, err)
		}
		if s.Log != kind {
			t.Errorf("opened %s, Stores.Log = %s", kind, s.Log)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
