package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/zerotal/lock/cluster/peer"
	"github.com/zerotal/lock/internal/logbridge"
	"go.etcd.io/bbolt"
)

// logCacheSize is how many recent log entries stay in memory: more than
// one full replication batch (MaxAppendEntries).
const logCacheSize = 1024

// stores are the raft pieces a node opens and must close.
type stores struct {
	bolt      *raftboltdb.BoltStore
	logs      raft.LogStore // what raft writes its log to: bolt, wrapped
	snaps     raft.SnapshotStore
	transport raft.Transport
}

func (s *stores) close() error {
	var errs []error
	if nt, ok := s.transport.(*raft.NetworkTransport); ok {
		// Pooled outbound connections keep the peers' handler goroutines
		// alive; close them with the transport.
		nt.CloseStreams()
	}
	if c, ok := s.transport.(io.Closer); ok && c != nil {
		errs = append(errs, c.Close())
	}
	if s.bolt != nil {
		errs = append(errs, s.bolt.Close())
	}
	return errors.Join(errs...)
}

// boltStoreOptions configures the raft log and stable store at path.
func boltStoreOptions(path string) raftboltdb.Options {
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

// openStores opens the log/stable store, the snapshot store and the
// transport (over TLS when t is set), and checks that the data dir belongs
// to cfg.ClusterID. On error everything opened so far is closed.
func openStores(cfg Config, t *tlsSetup) (_ *stores, err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("cluster: create data dir: %w", err)
	}
	s := &stores{}
	defer func() {
		if err != nil {
			_ = s.close()
		}
	}()
	s.bolt, err = raftboltdb.New(boltStoreOptions(filepath.Join(cfg.DataDir, "raft.db")))
	if err != nil {
		return nil, fmt.Errorf("cluster: open raft store in %s (is another node using this data dir?): %w", cfg.DataDir, err)
	}
	// Raft reads back entries it has just written: the leader to replicate
	// them, every node to apply them. A cache of the latest entries spares
	// a bolt read transaction and a decode for each.
	s.logs, err = raft.NewLogCache(logCacheSize, s.bolt)
	if err != nil {
		return nil, fmt.Errorf("cluster: log cache: %w", err)
	}
	s.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, logbridge.HCLog(cfg.Logger, "snapshot"))
	if err != nil {
		return nil, fmt.Errorf("cluster: open snapshot store: %w", err)
	}
	if err := checkStoredClusterID(s, cfg); err != nil {
		return nil, err
	}
	if cfg.Transport != nil {
		s.transport = cfg.Transport
		return s, nil
	}
	var advertise net.Addr // nil (RaftAddr with port 0): the address the listener got
	if cfg.RaftAdvertise != "" {
		advertise = peer.HostPort(cfg.RaftAdvertise)
	} else {
		tcpAddr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
		if err != nil {
			return nil, fmt.Errorf("cluster: resolve RaftAddr %q: %w", cfg.RaftAddr, err)
		}
		if tcpAddr.Port != 0 {
			advertise = tcpAddr
		}
	}
	// Assign only on success: a nil *NetworkTransport in the interface
	// would not be a nil interface, and close would call through it.
	pc := peer.Config{Bind: cfg.RaftAddr, Advertise: advertise, ClusterID: cfg.ClusterID, Key: cfg.raftKey(), DialAddr: cfg.DialAddr}
	if t != nil {
		pc.ServerTLS, pc.ClientTLS = t.peerServer, t.peerClient
	}
	nt, err := peer.NewTransport(pc, logbridge.HCLog(cfg.Logger, "transport"))
	if err != nil {
		return nil, err
	}
	s.transport = nt
	return s, nil
}

// raftConfig maps the node's configuration to raft's.
func raftConfig(cfg Config) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	// Group commit: concurrent proposals are taken from the apply channel
	// in batches of up to MaxAppendEntries, one fsync each.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 256
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	rc.Logger = logbridge.HCLog(cfg.Logger, "raft")
	return rc
}
