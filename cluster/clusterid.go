package cluster

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// clusterIDKey is where the stable store keeps the cluster ID, next to
// raft's own term and vote.
var clusterIDKey = []byte("zerotal_lock_cluster_id")

// checkStoredClusterID makes the data dir part of cfg.ClusterID: a dir
// that already holds raft state of another cluster is refused; a dir
// without raft state takes the configured ID (a node whose first join
// failed may start again under another ID); a dir with raft state but no
// ID (written before IDs existed) adopts it.
func checkStoredClusterID(s *stores, cfg Config) error {
	stored, err := s.bolt.Get(clusterIDKey)
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return fmt.Errorf("cluster: read cluster ID in %s: %w", cfg.DataDir, err)
	}
	if string(stored) == cfg.ClusterID {
		return nil
	}
	if len(stored) > 0 {
		existing, err := raft.HasExistingState(s.bolt, s.bolt, s.snaps)
		if err != nil {
			return fmt.Errorf("cluster: read raft state in %s: %w", cfg.DataDir, err)
		}
		if existing {
			return fmt.Errorf("cluster: data dir %s belongs to cluster %q, but this node is configured for cluster %q: "+
				"start it with cluster ID %q, or give it an empty data dir to make it a new member of %q",
				cfg.DataDir, stored, cfg.ClusterID, stored, cfg.ClusterID)
		}
	}
	if err := s.bolt.Set(clusterIDKey, []byte(cfg.ClusterID)); err != nil {
		return fmt.Errorf("cluster: store cluster ID in %s: %w", cfg.DataDir, err)
	}
	return nil
}
