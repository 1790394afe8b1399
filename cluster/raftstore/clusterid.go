package raftstore

import (
	"errors"
	"fmt"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// clusterIDKey is where the stable store keeps the cluster ID, next to
// raft's own term and vote.
var clusterIDKey = []byte("zerotal_lock_cluster_id")

// checkClusterID makes the data dir part of opts.ClusterID: a dir
// that already holds raft state of another cluster is refused; a dir
// without raft state takes the configured ID (a node whose first join
// failed may start again under another ID); a dir with raft state but no
// ID (written before IDs existed) adopts it.
func (s *Stores) checkClusterID() error {
	id, dir := s.opts.ClusterID, s.dir
	stored, err := s.bolt.Get(clusterIDKey)
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return fmt.Errorf("cluster: read cluster ID in %s: %w", dir, err)
	}
	if string(stored) == id {
		return nil
	}
	if len(stored) > 0 {
		existing, err := s.HasExistingState()
		if err != nil {
			return fmt.Errorf("cluster: read raft state in %s: %w", dir, err)
		}
		if existing {
			return fmt.Errorf("cluster: data dir %s belongs to cluster %q, but this node is configured for cluster %q: "+
				"start it with cluster ID %q, or give it an empty data dir to make it a new member of %q",
				dir, stored, id, stored, id)
		}
	}
	if err := s.bolt.Set(clusterIDKey, []byte(id)); err != nil {
		return fmt.Errorf("cluster: store cluster ID in %s: %w", dir, err)
	}
	return nil
}
