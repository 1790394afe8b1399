package cluster

import "github.com/zerotal/lock/cluster/peer"

// MinRaftSecretLen is the shortest Config.RaftSecret accepted (see
// peer.MinSecretLen).
const MinRaftSecretLen = peer.MinSecretLen

// raftKey is the key of the raft handshake's MAC: RaftSecret, else Token,
// else none (the handshake then checks the cluster ID only).
func (c Config) raftKey() []byte {
	switch {
	case c.RaftSecret != "":
		return []byte(c.RaftSecret)
	case c.Token != "":
		return []byte(c.Token)
	}
	return nil
}

// checkRaftExposure refuses raft on an address other hosts can reach
// when nothing authenticates its peers (see peer.CheckExposure). An
// injected Transport is the caller's to secure.
func (c Config) checkRaftExposure() error {
	if c.Transport != nil || c.RaftInsecure || c.TLS.Enabled() || len(c.raftKey()) > 0 {
		return nil
	}
	return peer.CheckExposure(c.RaftAddr)
}
