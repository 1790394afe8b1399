package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/cluster/peer"
	"github.com/zerotal/lock/cluster/raftstore"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/logbridge"
)

// stores are the raft pieces a node opens and must close: its
// raftstore.Stores and the transport.
type stores struct {
	*raftstore.Stores
	transport raft.Transport
	layer     *peer.StreamLayer // the transport's network; nil with Config.Transport
}

// drainTimeout bounds the wait for raft's connection goroutines at close:
// once their sockets are cut they return at their next read.
const drainTimeout = 10 * time.Second

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
	if s.layer != nil {
		// A heartbeat being answered writes to the stable store.
		select {
		case <-s.layer.Drained():
		case <-time.After(drainTimeout):
			errs = append(errs, fmt.Errorf("cluster: raft connections still served %v after the transport closed", drainTimeout))
		}
	}
	if s.Stores != nil {
		errs = append(errs, s.Stores.Close())
	}
	return errors.Join(errs...)
}

// openStores opens the log/stable store and the snapshot store (checking
// that the data dir belongs to cfg.ClusterID), then the transport (over
// TLS when t is set). On error everything opened so far is closed.
func openStores(cfg Config, t *tlsSetup) (_ *stores, err error) {
	s := &stores{}
	defer func() {
		if err != nil {
			_ = s.close()
		}
	}()
	s.Stores, err = raftstore.Open(cfg.DataDir, raftstore.Options{
		ClusterID:     cfg.ClusterID,
		Logger:        cfg.Logger,
		Log:           cfg.RaftLog,
		DefaultLog:    DefaultRaftLog,
		CheckSnapshot: fsm.CheckSnapshot,
		CheckCommand: func(b []byte) error {
			_, err := fsm.DecodeLog(b)
			return err
		},
	})
	if err != nil {
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
	nt, layer, err := peer.NewTransport(pc, logbridge.HCLog(cfg.Logger, "transport"))
	if err != nil {
		return nil, err
	}
	s.transport, s.layer = nt, layer
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
