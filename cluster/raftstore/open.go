package raftstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
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
	// Logger receives the snapshot store's and the WAL's logs
	// (logger=snapshot, logger=wal) and the warnings of the checks; nil
	// discards them.
	Logger *slog.Logger
	// CheckSnapshot reads a snapshot's state as a restore would and
	// reports why it could not be restored; nil: raft's checksum only.
	CheckSnapshot func(io.Reader) error
	// CheckCommand decodes the data of a command entry as applying it
	// would and reports why it could not be applied; nil: not decoded.
	CheckCommand func([]byte) error
	// Log is the log store, LogBolt or LogWAL; a data dir that holds the
	// other one is refused. Empty: the one the data dir holds, and
	// DefaultLog for a new data dir.
	Log string
	// DefaultLog is the log store of a new data dir when Log is empty
	// (empty: LogBolt).
	DefaultLog string
}

// Stores are the raft stores of one data dir.
type Stores struct {
	// LogStore is what raft writes its log to: the bolt store or the WAL
	// (Log says which) behind a cache of the newest entries.
	LogStore raft.LogStore
	// Log is the log store the data dir holds, LogBolt or LogWAL.
	Log string
	// StableStore keeps raft's term and vote (and the cluster ID).
	StableStore raft.StableStore
	// SnapshotStore keeps raft's snapshots in DataDir/snapshots.
	SnapshotStore raft.SnapshotStore

	bolt    *raftboltdb.BoltStore
	wal     *wal.WAL           // nil: the log is in bolt
	walMeta *metadb.BoltMetaDB // the WAL's meta file, which the WAL does not close
	rawLog  raft.LogStore      // the log without the cache
	dir     string
	opts    Options
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

// Open creates dir if needed, opens the stable store (raft.db), the log
// store opts.Log names (raft.db or the WAL in dir/wal) and the snapshot
// store in it, and checks that it belongs to opts.ClusterID.
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
	if s.Log, err = s.chooseLog(); err != nil {
		return nil, err
	}
	s.rawLog = s.bolt
	if s.Log == LogWAL {
		if err := s.openWAL(); err != nil {
			return nil, err
		}
		s.rawLog = s.wal
	}
	// Raft reads back entries it has just written: the leader to replicate
	// them, every node to apply them. A cache of the latest entries spares
	// a read transaction (or a segment read) and a decode for each.
	s.LogStore, err = raft.NewLogCache(logCacheSize, s.rawLog)
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
	return raft.HasExistingState(s.rawLog, s.bolt, s.SnapshotStore)
}

// Close closes the WAL and the bolt store (the snapshot store holds
// nothing open). Raft must have stopped.
func (s *Stores) Close() error {
	errs := []error{s.closeWAL()}
	if s.bolt != nil {
		errs = append(errs, s.bolt.Close())
	}
	return errors.Join(errs...)
}
