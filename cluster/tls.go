package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/raft"

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
	roots      *x509.CertPool // the cluster's CA
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
	n.tls = &tlsSetup{httpServer: m.HTTPServer, peerServer: m.PeerServer, peerClient: m.PeerClient, roots: m.PeerClient.RootCAs}
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

// checkForwarder says why conn, the connection a request forwarded by the
// member id came on, is not that member's (httpapi.Options.Forwarder), or
// nil. It is when its client certificate, which the handshake verified
// against the cluster's CA, is also valid as a server certificate for the
// host of the member's raft address: the name the peers verify when they
// dial that member, which its certificate must carry. A client
// certificate issued for no node's host (scripts/tls-certs.sh's are for
// none) is no member's, so its holder cannot speak for a follower and
// claim another credential. The member is looked up in the latest raft
// configuration: a removed node speaks for no one.
func (n *Node) checkForwarder(id string, conn *tls.ConnectionState) error {
	if n.tls == nil {
		return errors.New("this node does not use TLS, so it cannot tell a member's connection")
	}
	if conn == nil || len(conn.VerifiedChains) == 0 || len(conn.VerifiedChains[0]) == 0 {
		return errors.New("the connection has no verified client certificate")
	}
	addr := ""
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if s.ID == raft.ServerID(id) {
				addr = string(s.Address)
			}
		}
	}
	if addr == "" {
		return fmt.Errorf("%q is no member of the raft configuration", id)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	chain := conn.VerifiedChains[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err = chain[0].Verify(x509.VerifyOptions{Roots: n.tls.roots, Intermediates: inter, DNSName: host,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return fmt.Errorf("the connection's certificate (CN %q) is not member %s's, for its raft host %s: %w",
			chain[0].Subject.CommonName, id, host, err)
	}
	return nil
}
