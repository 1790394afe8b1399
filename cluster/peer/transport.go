package peer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Config is what a node's raft network needs.
type Config struct {
	// Bind is the host:port to listen on for the peers' connections.
	Bind string
	// Advertise is the address peers are told to dial; nil: the bound
	// address, which must then name an interface.
	Advertise net.Addr
	// ServerTLS and ClientTLS are both set (see TLS.PeerServer and
	// TLS.PeerClient) or both nil (plain TCP).
	ServerTLS, ClientTLS *tls.Config
	// ClusterID is the cluster the handshake names.
	ClusterID string
	// Key is the raft secret both ends prove they know (see handshake.go);
	// nil: the handshake checks the cluster ID only.
	Key []byte
	// DialAddr rewrites the address dialled to reach a peer (a test's
	// proxy); nil: the peer's address.
	DialAddr func(addr string) string
}

// StreamLayer is raft's network: a TCP listener for the peers'
// connections and a dialer for this node's, both optionally wrapped in
// TLS. raft's own TCP transport cannot do TLS, and its dialer cannot be
// pointed elsewhere by a test (Config.DialAddr).
//
// Every connection starts with a handshake naming the cluster ID and,
// with a secret, authenticating both ends: a node of another cluster (a
// mistyped peer address, a reused data dir) or anyone without the secret
// cannot append entries here, and its attempt is logged.
type StreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	// clientTLS, when set, dials peers over TLS with this configuration
	// (the listener is then a TLS listener too).
	clientTLS *tls.Config
	clusterID string
	key       []byte
	redirect  func(string) string // Config.DialAddr

	// accepted are the peers' connections raft still serves: see Close
	// and Drained.
	mu       sync.Mutex
	accepted map[*handshakeConn]struct{}
	closed   bool
	drained  chan struct{} // closed once closed and accepted is empty
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// NewStreamLayer listens on c.Bind.
func NewStreamLayer(c Config) (*StreamLayer, error) {
	ln, err := net.Listen("tcp", c.Bind)
	if err != nil {
		return nil, err
	}
	if c.ServerTLS != nil {
		ln = tls.NewListener(ln, c.ServerTLS)
	}
	s := &StreamLayer{ln: ln, advertise: c.Advertise, clientTLS: c.ClientTLS, clusterID: c.ClusterID, key: c.Key, redirect: c.DialAddr,
		accepted: map[*handshakeConn]struct{}{}, drained: make(chan struct{})}
	if tcp, ok := s.Addr().(*net.TCPAddr); ok && (tcp.IP == nil || tcp.IP.IsUnspecified()) {
		_ = ln.Close()
		return nil, errors.New("the advertised raft address must not be all interfaces (0.0.0.0 or ::): set RaftAdvertise to the address peers dial")
	}
	return s, nil
}

// HostPort is an advertised address as configured: a host name stays a
// name, resolved by each peer when it dials.
type HostPort string

// Network is "tcp".
func (a HostPort) Network() string { return "tcp" }

// String is the address as configured.
func (a HostPort) String() string { return string(a) }

// Accept waits for a peer's connection. Its handshake runs at the first
// Read, in raft's goroutine for the connection, so that a slow or
// silent peer never holds up the accept loop.
func (s *StreamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	hc := &handshakeConn{Conn: c, clusterID: s.clusterID, key: s.key}
	hc.release = func() { s.release(hc) }
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	s.accepted[hc] = struct{}{}
	return hc, nil
}

// Close stops the listener and cuts the peers' connections, so that
// raft's goroutines serving them fail their next read and return.
func (s *StreamLayer) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		for hc := range s.accepted {
			cutSocket(hc.Conn) // hc.Close is its server's, which tells release
		}
		s.drainedIfDone()
	}
	return err
}

// cutSocket closes c's socket. A TLS connection's own Close would first
// write a close_notify alert, which can wait on a peer that does not read.
func cutSocket(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	_ = c.Close()
}

// Drained is closed once the layer is closed and raft's goroutine for
// every accepted connection has closed it, that is returned. raft answers
// a heartbeat on that goroutine, which writes the term to the stable
// store; a node waits for Drained before closing its stores, or a
// heartbeat arriving during shutdown meets a closed store and raft panics
// (hashicorp/raft#717).
func (s *StreamLayer) Drained() <-chan struct{} { return s.drained }

// release forgets a connection its server closed.
func (s *StreamLayer) release(hc *handshakeConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.accepted, hc)
	if s.closed {
		s.drainedIfDone()
	}
}

func (s *StreamLayer) drainedIfDone() {
	if len(s.accepted) == 0 {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
	}
}

// Addr is the address peers are told to dial: the advertised one, which
// need not be the one listened on (a NAT, a mapped port or a proxy may
// lie between).
func (s *StreamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.ln.Addr()
}

// Dial connects to a peer and runs the handshake: it returns once both
// ends are authenticated.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	addr := string(address)
	if s.redirect != nil {
		addr = s.redirect(addr)
	}
	var (
		c   net.Conn
		err error
	)
	if s.clientTLS != nil {
		// The certificate must name the peer, not a proxy in between.
		c, err = tls.DialWithDialer(d, "tcp", addr, forHost(s.clientTLS, string(address)))
	} else {
		c, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	if err := dialHandshake(c, s.clusterID, s.key, timeout); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("raft handshake with %s: %w", address, err)
	}
	return c, nil
}

// NewTransport builds raft's transport on a StreamLayer with the
// settings raft's TCP transport uses (3 pooled connections per peer, 10s
// I/O timeout).
// The StreamLayer is returned too, for its Drained.
func NewTransport(c Config, logger hclog.Logger) (*raft.NetworkTransport, *StreamLayer, error) {
	sl, err := NewStreamLayer(c)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: raft transport on %s: %w", c.Bind, err)
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  sl,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  logger,
	}), sl, nil
}
