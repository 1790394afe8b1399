package cluster

import (
	"crypto/tls"

	"github.com/zerotal/lock/cluster/peer"
	"github.com/zerotal/lock/internal/logbridge"
)

// TLSConfig turns on TLS for a node's HTTP API, for the node-to-node HTTP
// calls (forwarding to the leader, join) and for the raft transport; see
// peer.TLSConfig.
type TLSConfig = peer.TLSConfig

// tlsSetup is the loaded TLS material of a node, one *tls.Config per role
// (see peer.TLS).
type tlsSetup struct {
	httpServer *tls.Config
	peerServer *tls.Config
	peerClient *tls.Config
}

// setupTLS loads the node's TLS material when Config.TLS is set, and lets
// the node's own HTTP calls to its peers present it.
func (n *Node) setupTLS() error {
	if !n.cfg.TLS.Enabled() {
		return nil
	}
	m, err := peer.LoadTLS(n.cfg.TLS, n.log.With(logbridge.NameKey, "tls"))
	if err != nil {
		return err
	}
	n.tls = &tlsSetup{httpServer: m.HTTPServer, peerServer: m.PeerServer, peerClient: m.PeerClient}
	n.proxy.TLSClientConfig = m.PeerClient
	return nil
}

// httpScheme is the scheme of this node's API and of its peers'.
func (n *Node) httpScheme() string {
	if n.tls != nil {
		return "https"
	}
	return "http"
}
