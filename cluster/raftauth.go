package cluster

import (
	"fmt"

	"github.com/zerotal/lock/cluster/peer"
)

// MinRaftSecretLen is the shortest Config.RaftSecret accepted (see
// peer.MinSecretLen).
const MinRaftSecretLen = peer.MinSecretLen

// MinTokenLen is the shortest Config.Token accepted: a bearer token is
// guessed online, one request a try, but a short one still falls to a
// patient caller.
const MinTokenLen = 16

// raftKey is the key of the raft handshake's MAC: RaftSecret, or none
// (TLS or RaftInsecure then stands for it). It is never the API token:
// every lock client holds that one, and whoever knows the raft key can
// append entries to the log.
func (c Config) raftKey() []byte {
	if c.RaftSecret != "" {
		return []byte(c.RaftSecret)
	}
	return nil
}

// checkRaftAuth refuses a node whose raft port nothing authenticates:
// neither TLS nor a raft secret, and no RaftInsecure to say the network
// is trusted. Loopback is no exception, since any process of the host
// could then write the lock table. An injected Transport is the
// caller's to secure.
func (c Config) checkRaftAuth() error {
	if c.Transport != nil || c.RaftInsecure || c.TLS.Enabled() || len(c.raftKey()) > 0 {
		return nil
	}
	if c.Token != "" {
		// Before, the token stood in for a missing raft secret: say how
		// to keep the cluster's key rather than change it silently.
		return fmt.Errorf("cluster: raft needs its own secret: the API token no longer authenticates raft, since every " +
			"lock client holds it. To upgrade a cluster that relied on it, give every node the current token's value as " +
			"its raft secret (RaftSecret, --raft-secret-file or LOCKCLUSTER_RAFT_SECRET) and restart the nodes one at a " +
			"time: the raft key stays the same. Then change the API token (or move to a token file) freely")
	}
	return peer.ErrNoRaftAuth(c.RaftAddr)
}
