package raftstore

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/zerotal/lock/internal/logbridge"
)

// logCacheSize is how many recent log entries stay in memory: more than
// one full replication batch (the node's MaxAppendEntries).
const logCacheSize = 1024

// Options configures Open.
type Options struct {
	// ClusterID is the cluster the data dir belongs to: stored on first
	// open, refused when the dir holds raft state of another cluster.
	ClusterID string
	// Logger receives the snapshot store's logs (logger=snapshot) and the
	// warnings of Check; nil discards them.
	Logger *slog.Logger
	// CheckSnapshot reads a snapshot's state as a restore would and
	// reports why it could not be restored; nil: raft's checksum only.
	CheckSnapshot func(io.Reader) error
	// CheckCommand decodes the data of a command entry as applying it
	// would and reports why it could not be applied; nil: not decoded.
	CheckCommand func([]byte) error
}

// Stores are the raft stores of one data dir.
type Stores struct {
	// LogStore is what raft writes its log to: the bolt store behind a
	// cache of the newest entries.
	LogStore raft.LogStore
	// StableStore keeps raft's term and vote (and the cluster ID).
	StableStore raft.StableStore
	// SnapshotStore keeps raft's snapshots in DataDir/snapshots.
	SnapshotStore raft.SnapshotStore

	bolt *raftboltdb.BoltStore
	dir  string
	opts Options
}

// BoltOptions configures the raft log and stable store at path.
func BoltOptions(path string) raftboltdb.Options {
	return raftboltdb.Options{
		Path: path,
		BoltOptions: &bbolt.Options{
			// bbolt waits forever for its file lock by default; a second
			// node on the same directory must fail with a clear error.
			Timeout: 2 * time.Second,
			// The free-page list is rebuilt by a scan when the file is
			// opened instead of being written by every transaction: less
			// to write per commit. Durability of the log is unchanged
			// (data pages, then the meta page, are still synced).
			NoFreelistSync: true,
			FreelistType:   bbolt.FreelistMapType,
			// Map room for a long log up front, so that growing the file
			// rarely has to remap (which waits for every reader).
			InitialMmapSize: 64 << 20,
		},
		NoSync: false, // fsync every commit: acknowledged grants survive a crash
	}
}

// Open creates dir if needed, opens the log/stable store and the
// snapshot store in it, and checks that it belongs to opts.ClusterID.
// Run CheckFiles before it (bbolt crashes on some damaged files) and
// Check after it, before raft starts. On error everything opened so far
// is closed.
func Open(dir string, opts Options) (_ *Stores, err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("cluster: create data dir: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Stores{dir: dir, opts: opts}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	s.bolt, err = raftboltdb.New(BoltOptions(filepath.Join(dir, raftDBFile)))
	if err != nil {
		return nil, fmt.Errorf("cluster: open raft store in %s (is another node using this data dir?): %w", dir, err)
	}
	s.StableStore = s.bolt
	// Raft reads back entries it has just written: the leader to replicate
	// them, every node to apply them. A cache of the latest entries spares
	// a bolt read transaction and a decode for each.
	s.LogStore, err = raft.NewLogCache(logCacheSize, s.bolt)
	if err != nil {
		return nil, fmt.Errorf("cluster: log cache: %w", err)
	}
	s.SnapshotStore, err = raft.NewFileSnapshotStoreWithLogger(dir, 2, logbridge.HCLog(opts.Logger, "snapshot"))
	if err != nil {
		return nil, fmt.Errorf("cluster: open snapshot store: %w", err)
	}
	if err := s.checkClusterID(); err != nil {
		return nil, err
	}
	return s, nil
}

// HasExistingState reports whether the stores hold raft state: a
// log, a term or a snapshot.
func (s *Stores) HasExistingState() (bool, error) {
	return raft.HasExistingState(s.bolt, s.bolt, s.SnapshotStore)
}

// Close closes the log/stable store (the snapshot store holds nothing
// open). Raft must have stopped.
func (s *Stores) Close() error {
	if s.bolt == nil {
		return nil
	}
	return s.bolt.Close()
}
