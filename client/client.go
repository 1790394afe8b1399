package client

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/background"
)

// Compile-time checks of the capabilities the lock package looks for.
var (
	_ drivers.Driver   = (*Client)(nil)
	_ drivers.Extender = (*Client)(nil)
)

// Client talks to a lockcluster over HTTP. It is safe for concurrent use;
// share one per process so that connections are pooled.
type Client struct {
	cfg   Config
	bases []string // "scheme://host:port" of every configured node
	http  *http.Client
	// own is the transport New built, closed by Close; nil when the caller
	// supplied HTTPClient.
	own *http.Transport
	// stream carries requests to plain-http nodes over the API stream,
	// through own otherwise; nil when not in use (HTTPClient, TLS, or
	// Config.NoStream).
	stream *streamTransport
	auth   string // "Bearer <token>" or ""
	log    *slog.Logger

	// preferred is the base URL tried first: the leader when known.
	preferred atomic.Pointer[string]
	// stale asks the next call to look the leader up again (a follower or
	// a redirect answered the last call).
	stale atomic.Bool
	// lastDiscovery is when the leader was last looked up (UnixNano).
	lastDiscovery atomic.Int64
	discoveryMu   sync.Mutex
	// term is the highest raft term a node reported.
	term atomic.Uint64
	// health tracks which nodes answer (health.go).
	health health
	closed atomic.Bool
	// watches are the long polls of keys that Changed runs (watch.go).
	watchMu sync.Mutex
	watches map[string]*keyPoll
	// keepRefused is when a node last refused keep_ms (an older release;
	// UnixNano, 0: never): wait chunks go without it for keepRetry after.
	keepRefused atomic.Int64

	// certAsked records that a node asked this client for a certificate
	// in a TLS handshake and got none (no CertFile): a connection it then
	// cuts is its refusal (see tlsFailure).
	certAsked atomic.Bool

	// cleanups are the owner-guarded releases sent in the background after
	// a wait whose caller gave up (releaseAbandoned); Close cancels them
	// and waits.
	cleanups background.Set
}

// New checks cfg and returns a Client. It does not contact the cluster:
// the first call finds the leader.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Client{cfg: cfg, log: cfg.Logger}
	seen := make(map[string]bool, len(cfg.Addrs))
	for _, a := range cfg.Addrs {
		b, err := baseURLWith(a, cfg.defaultScheme())
		if err != nil {
			return nil, err
		}
		if !seen[b] {
			seen[b] = true
			c.bases = append(c.bases, b)
		}
	}
	if cfg.Token != "" {
		c.auth = api.Bearer(cfg.Token)
	}
	if cfg.HTTPClient != nil {
		hc := *cfg.HTTPClient // copy: redirects are not followed (see noRedirect)
		hc.CheckRedirect = noRedirect
		c.http = &hc
	} else {
		c.own = newTransport()
		if cfg.tlsEnabled() {
			tc, err := loadTLS(cfg, &c.certAsked)
			if err != nil {
				return nil, err
			}
			c.own.TLSClientConfig = tc
		}
		var rt http.RoundTripper = c.own
		if !cfg.tlsEnabled() && !cfg.NoStream {
			c.stream = newStreamTransport(c.own, cfg.AttemptTimeout)
			rt = c.stream
		}
		c.http = &http.Client{Transport: rt, CheckRedirect: noRedirect}
	}
	c.health.init()
	c.stale.Store(true) // look the leader up on first use
	return c, nil
}

// noRedirect returns a 3xx answer as it is, an error like any non-2xx:
// nodes forward requests to the leader themselves and never redirect, so a
// redirect comes from something else in between and is not followed.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// newTransport pools keep-alive connections generously: every concurrent
// caller of a lock holds one connection for the length of its request, and
// a waiting acquire holds it for the whole wait.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil, // the cluster is addressed directly, never through a proxy
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// Close stops the client: idle connections are closed, status requests
// of its own are stopped, and every later call returns drivers.ErrClosed.
// Calls in flight finish normally; the releases the client sends by itself
// after an abandoned wait are cancelled (the lock expires by its TTL).
// Close is idempotent and returns nil.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.stopWatches()
	c.cleanups.Close()
	c.health.close()
	if c.stream != nil {
		c.stream.Close()
	} else if c.own != nil {
		c.own.CloseIdleConnections()
	}
	return nil
}

// Addrs returns the base URLs of the configured nodes.
func (c *Client) Addrs() []string { return append([]string(nil), c.bases...) }
