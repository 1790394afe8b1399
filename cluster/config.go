package cluster

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Node. NewNode copies it, fills the defaults in the
// copy and validates it; the caller's struct is never changed.
type Config struct {
	ID       string // node id, unique in the cluster (required)
	DataDir  string // raft-boltdb log and stable store, file snapshots (required)
	RaftAddr string // host:port the raft TCP transport binds and advertises (required)
	HTTPAddr string // host:port of the HTTP API (required; port 0 picks one, see Node.HTTPAddr)
	// HTTPAdvertise is the host:port other nodes use to reach this node's
	// HTTP API (forwarding to the leader). Empty: the bound address, with
	// an all-interfaces host (0.0.0.0, ::) replaced by RaftAddr's host.
	HTTPAdvertise string

	// Bootstrap starts a new cluster with these voters; it must list this
	// node. Ignored (logged) when DataDir already holds raft state. Empty:
	// with no state on disk and no Join, the node starts a cluster of one;
	// with state, it rejoins from disk.
	Bootstrap []Peer
	// Join is the HTTP address (host:port or URL) of a member to ask to add
	// this node as a voter; NewNode fails if that does not succeed before
	// its ctx ends. Skipped when DataDir already holds raft state (the node
	// is a member already). Not allowed together with Bootstrap.
	Join string

	// Token is the bearer token every request (except /healthz) must carry;
	// empty: no authentication. Every node of a cluster uses the same one.
	Token string
	// Logger receives the node's logs; raft logs under Named("raft"). nil:
	// a null logger.
	Logger hclog.Logger

	// Raft timing. Defaults are tuned for a LAN: 500ms, 500ms, 250ms. The
	// constraints are raft's: each >= 5ms, LeaderLeaseTimeout <=
	// HeartbeatTimeout <= ElectionTimeout.
	ElectionTimeout    time.Duration
	HeartbeatTimeout   time.Duration
	LeaderLeaseTimeout time.Duration

	// SkipLeadershipTransfer makes Shutdown stop a leader without first
	// handing leadership to another voter. Set it when the whole cluster
	// stops at once (lockcluster dev), where a transfer has nobody to go to.
	SkipLeadershipTransfer bool

	// Engine limits; every node must use the same values (0: unlimited).
	MaxKeys          int
	MaxWaitersPerKey int

	// Registry receives the node's metrics, labelled node=<ID>; nil: a new
	// registry per node. /metrics serves it when it is also a
	// prometheus.Gatherer (as *prometheus.Registry is), else the default
	// gatherer.
	Registry prometheus.Registerer

	// Transport replaces the TCP transport (tests use raft.NewInmemTransport
	// to cut links); RaftAddr must then equal its LocalAddr. The node closes
	// it on Shutdown when it implements io.Closer.
	Transport raft.Transport

	// TickInterval is how often the leader commits a time-only entry while
	// locks are held, so that a new leader starts from a recent clock
	// (default 1s).
	TickInterval time.Duration
	// MaxWait caps an acquire's wait_ms (default 5 minutes).
	MaxWait time.Duration
	// ApplyTimeout bounds how long a proposal may wait to enter raft's
	// queue (default 5s).
	ApplyTimeout time.Duration
	// SnapshotThreshold is the number of new log entries that triggers a
	// snapshot (default raft's 8192).
	SnapshotThreshold uint64
}

// Peer names a voter of a bootstrapped cluster.
type Peer struct{ ID, RaftAddr, HTTPAddr string }

// Default values.
const (
	DefaultElectionTimeout    = 500 * time.Millisecond
	DefaultHeartbeatTimeout   = 500 * time.Millisecond
	DefaultLeaderLeaseTimeout = 250 * time.Millisecond
	DefaultTickInterval       = time.Second
	DefaultMaxWait            = 5 * time.Minute
	DefaultApplyTimeout       = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = min(DefaultHeartbeatTimeout, c.ElectionTimeout)
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = min(DefaultLeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.ApplyTimeout == 0 {
		c.ApplyTimeout = DefaultApplyTimeout
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Validate reports every inconsistency in the configuration at once, in
// words an operator can act on.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("cluster: "+format, args...))
	}
	if c.ID == "" {
		bad("ID is required")
	} else if strings.ContainsAny(c.ID, " \t\r\n") || len(c.ID) > 128 {
		bad("ID %q must be at most 128 bytes without spaces", c.ID)
	}
	if c.DataDir == "" {
		bad("DataDir is required")
	}
	if err := checkHostPort(c.RaftAddr); err != nil {
		bad("RaftAddr: %v", err)
	}
	if c.Transport != nil && string(c.Transport.LocalAddr()) != c.RaftAddr {
		bad("RaftAddr %q differs from the transport's address %q", c.RaftAddr, c.Transport.LocalAddr())
	}
	if err := checkHostPort(c.HTTPAddr); err != nil {
		bad("HTTPAddr: %v", err)
	}
	if c.HTTPAdvertise != "" {
		if err := checkHostPort(c.HTTPAdvertise); err != nil {
			bad("HTTPAdvertise: %v", err)
		}
	}
	if len(c.Bootstrap) > 0 && c.Join != "" {
		bad("Bootstrap and Join are exclusive: bootstrap a new cluster or join an existing one")
	}
	if len(c.Bootstrap) > 0 {
		ids, addrs := map[string]bool{}, map[string]bool{}
		self := false
		for _, p := range c.Bootstrap {
			if p.ID == "" || p.RaftAddr == "" {
				bad("bootstrap peer %+v needs an ID and a RaftAddr", p)
				continue
			}
			if ids[p.ID] {
				bad("bootstrap peer id %q listed twice", p.ID)
			}
			if addrs[p.RaftAddr] {
				bad("bootstrap raft address %q listed twice", p.RaftAddr)
			}
			ids[p.ID], addrs[p.RaftAddr] = true, true
			if p.ID == c.ID {
				self = true
				if p.RaftAddr != c.RaftAddr {
					bad("bootstrap lists this node (%q) at %q but RaftAddr is %q", c.ID, p.RaftAddr, c.RaftAddr)
				}
			}
		}
		if !self {
			bad("bootstrap peers do not include this node %q", c.ID)
		}
	}
	if c.ElectionTimeout < 5*time.Millisecond || c.HeartbeatTimeout < 5*time.Millisecond || c.LeaderLeaseTimeout < 5*time.Millisecond {
		bad("ElectionTimeout (%s), HeartbeatTimeout (%s) and LeaderLeaseTimeout (%s) must each be at least 5ms",
			c.ElectionTimeout, c.HeartbeatTimeout, c.LeaderLeaseTimeout)
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		bad("LeaderLeaseTimeout (%s) must not exceed HeartbeatTimeout (%s)", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.HeartbeatTimeout > c.ElectionTimeout {
		bad("HeartbeatTimeout (%s) must not exceed ElectionTimeout (%s)", c.HeartbeatTimeout, c.ElectionTimeout)
	}
	if c.MaxKeys < 0 || c.MaxWaitersPerKey < 0 {
		bad("MaxKeys (%d) and MaxWaitersPerKey (%d) must not be negative", c.MaxKeys, c.MaxWaitersPerKey)
	}
	if c.TickInterval < 0 || c.MaxWait < 0 || c.ApplyTimeout < 0 {
		bad("TickInterval, MaxWait and ApplyTimeout must not be negative")
	}
	return errors.Join(errs...)
}

func checkHostPort(addr string) error {
	if addr == "" {
		return errors.New("required (host:port)")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if port == "" {
		return fmt.Errorf("%q has no port", addr)
	}
	return nil
}
