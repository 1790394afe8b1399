package peer

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
)

// TLSConfig turns on TLS for a node's HTTP API, for the node-to-node HTTP
// calls (forwarding to the leader, join) and for the raft transport. Every
// node of a cluster uses TLS or none: the scheme of a member's address is
// not replicated, each node uses its own setting to reach the others.
//
// The node's certificate is both a server and a client certificate (its
// extended key usages must include serverAuth and clientAuth) and must name
// the hosts or IPs of its RaftAddr and advertised HTTP address. The raft
// transport is always mutual TLS: raft has no token, so a peer proves it
// belongs with a certificate signed by CAFile. Use a CA dedicated to the
// cluster: any certificate it signed is accepted as a peer. A renewed
// certificate (its files replaced) takes effect within a second, at the
// next handshake; a new CA needs a restart.
type TLSConfig struct {
	// CertFile and KeyFile are the node's PEM certificate (chain) and key.
	CertFile string
	KeyFile  string
	// CAFile holds the PEM certificates that sign the peers' certificates:
	// it verifies the other nodes (as servers and as raft clients) and,
	// with RequireClientCert, the API's clients.
	CAFile string
	// RequireClientCert makes the HTTP API refuse clients without a
	// certificate signed by CAFile (mutual TLS). The bearer token, when
	// set, is checked as well.
	RequireClientCert bool
}

// Enabled reports whether any TLS setting is given.
func (c TLSConfig) Enabled() bool {
	return c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" || c.RequireClientCert
}

// Validate reports a partial TLS configuration. It does not read the files:
// NewNode does, and names the file that fails.
func (c TLSConfig) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if c.CertFile == "" || c.KeyFile == "" {
		errs = append(errs, errors.New("cluster: TLS needs both CertFile and KeyFile"))
	}
	if c.CAFile == "" {
		errs = append(errs, errors.New("cluster: TLS needs CAFile, the CA that signs the nodes' certificates (raft peers are verified with it)"))
	}
	return errors.Join(errs...)
}

// TLS is a node's loaded TLS material, one *tls.Config per role.
type TLS struct {
	HTTPServer *tls.Config // the API: client certificates as RequireClientCert says
	PeerServer *tls.Config // raft listener: peer certificates required
	PeerClient *tls.Config // dialling peers (raft and HTTP): presents the node's certificate
}

// LoadTLS reads the files of an enabled c. The node's certificate is
// reloaded when its files change; the CA is read once.
func LoadTLS(c TLSConfig, log *slog.Logger) (*TLS, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	certs, err := newCertReloader(c.CertFile, c.KeyFile, log)
	if err != nil {
		return nil, err
	}
	pool, err := loadCAPool(c.CAFile)
	if err != nil {
		return nil, err
	}
	base := &tls.Config{
		MinVersion:           tls.VersionTLS12,
		GetCertificate:       certs.getCertificate,
		GetClientCertificate: certs.getClientCertificate,
	}
	httpServer := base.Clone()
	if c.RequireClientCert {
		httpServer.ClientAuth = tls.RequireAndVerifyClientCert
		httpServer.ClientCAs = pool
	}
	peerServer := base.Clone()
	peerServer.ClientAuth = tls.RequireAndVerifyClientCert
	peerServer.ClientCAs = pool
	peerClient := base.Clone()
	peerClient.RootCAs = pool
	return &TLS{HTTPServer: httpServer, PeerServer: peerServer, PeerClient: peerClient}, nil
}

// loadCAPool reads PEM certificates from path.
func loadCAPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster: TLS CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// forHost returns cfg set to verify the server as host (the host of addr),
// whatever address is actually dialled: Config.DialAddr may route a
// connection through a proxy.
func forHost(cfg *tls.Config, addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c := cfg.Clone()
	c.ServerName = host
	return c
}
