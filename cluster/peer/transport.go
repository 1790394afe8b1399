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
	// OnRefuse, when set, hears every inbound connection refused: a
	// failed handshake, or one over a bound (MaxHandshakes, MaxConns).
	// nil: refusals are dropped silently.
	OnRefuse func(error)
}

// The bounds of the raft port. A connection costs a goroutine and a
// descriptor (two with TLS buffers) from the moment it is accepted:
// without a bound anyone who reaches the port could hold thousands.
const (
	// MaxHandshakes is the most inbound connections in their handshake
	// at once. A peer opens few connections (raft pools 3 per peer, plus
	// one for snapshots and pipelines), so only a flood ever meets it;
	// one more takes the slot of an older one (see handshakeSlots), so
	// that connections which say nothing cannot keep a peer out.
	MaxHandshakes = 32
	// MaxHandshakesPerSource is the most of those slots one source (an
	// IPv4 address, an IPv6 /64) holds; its next connection takes the
	// slot of its own oldest. Room for a few peers behind one address.
	MaxHandshakesPerSource = 8
	// MaxConns is the most inbound connections open at once, in their
	// handshake or served by raft; one more is closed at once. Ample for
	// a cluster of a dozen nodes.
	MaxConns = 256
	// HandshakeTimeout bounds an inbound connection's TLS and cluster
	// handshakes: a peer answers in a round trip or two.
	HandshakeTimeout = 3 * time.Second
)

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

	onRefuse func(error)

	// accepted are the peers' connections raft still serves: see Close
	// and Drained. pending are those still in their handshake.
	mu       sync.Mutex
	accepted map[*handshakeConn]struct{}
	pending  *handshakeSlots
	closed   bool
	drained  chan struct{} // closed once closed and accepted is empty

	ready      chan *handshakeConn // authenticated, for Accept
	stop       chan struct{}       // closed by Close
	acceptLoop sync.WaitGroup      // the accept loop and the handshakes in progress
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
		onRefuse: c.OnRefuse, accepted: map[*handshakeConn]struct{}{}, pending: newHandshakeSlots(),
		drained: make(chan struct{}), ready: make(chan *handshakeConn), stop: make(chan struct{})}
	if tcp, ok := s.Addr().(*net.TCPAddr); ok && (tcp.IP == nil || tcp.IP.IsUnspecified()) {
		_ = ln.Close()
		return nil, errors.New("the advertised raft address must not be all interfaces (0.0.0.0 or ::): set RaftAdvertise to the address peers dial")
	}
	s.acceptLoop.Add(1)
	go s.acceptAll()
	return s, nil
}

// HostPort is an advertised address as configured: a host name stays a
// name, resolved by each peer when it dials.
type HostPort string

// Network is "tcp".
func (a HostPort) Network() string { return "tcp" }

// String is the address as configured.
func (a HostPort) String() string { return string(a) }

// Accept returns the next peer connection that passed its handshake.
// The handshakes run on goroutines of their own, at most MaxHandshakes
// at once (MaxHandshakesPerSource from one source) and each within
// HandshakeTimeout, so that neither a silent connection nor a flood of
// them holds up raft or grows the node; a newer connection takes the
// slot of an older one, so that silent ones cannot keep a peer out.
func (s *StreamLayer) Accept() (net.Conn, error) {
	select {
	case hc := <-s.ready:
		return hc, nil
	case <-s.stop:
		return nil, net.ErrClosed
	}
}

// acceptAll accepts connections until the listener closes, closing at
// once those over MaxConns, and hands each other one to a handshake,
// cutting the one whose slot it takes, if any.
func (s *StreamLayer) acceptAll() {
	defer s.acceptLoop.Done()
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of descriptors, say: pause a moment and accept again,
			// as net/http's server does, rather than stop accepting.
			s.refused(fmt.Errorf("raft listener: %w", err))
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		var gaveWay net.Conn
		s.mu.Lock()
		switch {
		case s.closed:
			err = net.ErrClosed
		case len(s.accepted) >= MaxConns:
			err = fmt.Errorf("%d raft connections are open already, the most taken at once", MaxConns)
		default:
			// At most MaxConns in all: what raft serves leaves the rest.
			gaveWay = s.pending.take(c, min(MaxHandshakes, MaxConns-len(s.accepted)))
			s.acceptLoop.Add(1)
		}
		s.mu.Unlock()
		if err != nil {
			cutSocket(c)
			s.refused(fmt.Errorf("raft connection from %s refused: %w", c.RemoteAddr(), err))
			continue
		}
		if gaveWay != nil {
			// Its handshake goroutine fails its next read and returns.
			cutSocket(gaveWay)
			s.refused(fmt.Errorf("raft connection from %s cut in its handshake: a newer connection took its slot "+
				"(at most %d in their handshake, %d from one address)", gaveWay.RemoteAddr(), MaxHandshakes, MaxHandshakesPerSource))
		}
		go s.handshake(c)
	}
}

// handshake authenticates c and hands it to Accept, or closes it.
func (s *StreamLayer) handshake(c net.Conn) {
	defer s.acceptLoop.Done()
	err := acceptHandshake(c, s.clusterID, s.key)
	s.mu.Lock()
	held := s.pending.leave(c) // false: it gave way to a newer one, and was cut
	var hc *handshakeConn
	if err == nil && held && !s.closed {
		hc = &handshakeConn{Conn: c}
		hc.release = func() { s.release(hc) }
		s.accepted[hc] = struct{}{}
	}
	s.mu.Unlock()
	if hc == nil {
		cutSocket(c)
		if err != nil && held {
			s.refused(fmt.Errorf("raft connection from %s refused: %w", c.RemoteAddr(), err))
		}
		return
	}
	select {
	case s.ready <- hc:
	case <-s.stop:
		_ = hc.Close()
	}
}

func (s *StreamLayer) refused(err error) {
	if s.onRefuse != nil {
		s.onRefuse(err)
	}
}

// Open reports the inbound connections open now: in their handshake, and
// served by raft.
func (s *StreamLayer) Open() (handshaking, served int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending.len(), len(s.accepted)
}

// Close stops the listener and cuts the peers' connections, so that
// raft's goroutines serving them fail their next read and return.
func (s *StreamLayer) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
		for hc := range s.accepted {
			cutSocket(hc.Conn) // hc.Close is its server's, which tells release
		}
		for c := range s.pending.byConn {
			cutSocket(c)
		}
		s.drainedIfDone()
	}
	s.mu.Unlock()
	s.acceptLoop.Wait()
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
// I/O timeout). Refused inbound connections are logged to logger as
// warnings, at most one line a second (refusalLog), unless c.OnRefuse is
// set. The StreamLayer is returned too, for its Drained.
func NewTransport(c Config, logger hclog.Logger) (*raft.NetworkTransport, *StreamLayer, error) {
	if c.OnRefuse == nil {
		c.OnRefuse = (&refusalLog{warn: func(msg string) { logger.Warn(msg) }}).refuse
	}
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
