package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zerotal/lock/cluster/peer"
	"github.com/zerotal/lock/cluster/raftstore"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/hostport"
)

// Config configures a Node. NewNode copies it, fills the defaults in the
// copy and validates it; the caller's struct is never changed.
type Config struct {
	ID       string // node id, unique in the cluster (required)
	DataDir  string // raft.db (stable store, and the bolt log), wal/ (the WAL log), snapshots (required)
	RaftAddr string // host:port the raft TCP transport listens on (required)
	HTTPAddr string // host:port of the HTTP API (required; port 0 picks one, see Node.HTTPAddr)
	// HealthAddr, when set, is a host:port where the node also serves
	// GET /healthz, GET /readyz and GET /metrics in plain HTTP with no
	// credential (as etcd's --listen-metrics-urls), for probes and a
	// Prometheus scraper that cannot present the client certificate or
	// the token the API requires. Bind it to loopback or a management
	// network: anyone who reaches it reads the metrics.
	HealthAddr string
	// RaftAdvertise is the host:port other nodes dial to reach this
	// node's raft transport, when that is not RaftAddr: behind NAT, in a
	// container whose ports are mapped, or with a proxy between the nodes.
	// It is what the raft configuration lists for this node (the join
	// sends it; Bootstrap must list it). A host name stays a name, which
	// each peer resolves when it dials. Empty: RaftAddr, which must then
	// name a host (not 0.0.0.0, :: or nothing, which no peer can dial).
	RaftAdvertise string
	// HTTPAdvertise is the host:port other nodes use to reach this node's
	// HTTP API (forwarding to the leader); the join sends it and the
	// leader publishes it in the member map. Empty: the bound address,
	// with an all-interfaces host (0.0.0.0, ::) replaced by the host of
	// the advertised raft address.
	HTTPAdvertise string

	// Bootstrap starts a new cluster with these voters; it must list this
	// node. Ignored (logged) when DataDir already holds raft state.
	//
	// A node bootstraps only when told to, by Bootstrap or BootstrapSelf.
	// With neither, no Join and no state on disk, it waits to be added by
	// a member (lockcluster join): it grants nothing, and its log, status
	// and /readyz say "waiting to be added". A node that bootstrapped a
	// cluster of its own could not be added to another one safely: its
	// log would be taken for a prefix of the other's.
	Bootstrap []Peer
	// BootstrapSelf starts a new cluster of this node alone (as Bootstrap
	// listing only this node). Others may join it later.
	BootstrapSelf bool
	// Join is the HTTP address (host:port or URL) of a member to ask to add
	// this node as a voter; NewNode fails if that does not succeed before
	// its ctx ends. Skipped when DataDir already holds raft state (the node
	// is a member already). Not allowed together with Bootstrap. The
	// request carries Token, which must be an operator's.
	Join string

	// Token is a bearer token with every right (an operator's, see
	// Tokens), at least MinTokenLen bytes; empty: none. With neither
	// Token nor Tokens the API needs no credential. Every node of a
	// cluster uses the same one. It never authenticates raft (RaftSecret
	// does).
	Token string
	// Tokens, when set, are the API's credentials with their roles and
	// key prefixes (package access; access.ParseFile reads a token
	// file); Token adds an operator beside them. Node.ReloadTokens
	// replaces them at run time.
	Tokens *TokenSet
	// TLS turns on TLS for the HTTP API and the raft transport (see
	// TLSConfig); the zero value is plain TCP. Every node of a cluster uses
	// TLS or none.
	TLS TLSConfig
	// ClusterID names the cluster this node belongs to (default
	// DefaultClusterID). It is stored in the data dir on first start: a node
	// refuses to start on a data dir of another cluster, to join another
	// cluster, and raft connections from nodes of another cluster.
	ClusterID string
	// RaftSecret authenticates the raft transport: every raft connection
	// starts with a challenge-response in which both ends prove, without
	// sending it, that they know the secret (HMAC-SHA256 over both ends'
	// nonces, the cluster ID and the direction). It is the peers' own
	// credential, never the API token. Every node of a cluster uses the
	// same one. At least MinRaftSecretLen bytes. Without TLS a node needs
	// it (or RaftInsecure).
	RaftSecret string
	// RaftInsecure allows raft with neither TLS nor a RaftSecret. Without
	// it such a node refuses to start: anyone who reaches that port, any
	// process of the host on loopback, could write the log. Set it only
	// where every host and process is trusted.
	RaftInsecure bool
	// Logger receives the node's logs; nil discards them. Raft, its
	// transport and snapshot store log through it too, with the attribute
	// logger=raft (logger=transport, logger=snapshot); the node's own
	// subsystems add logger=fsm, logger=http, logger=tls.
	Logger *slog.Logger

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

	// Engine limits; every node must use the same values, since the
	// replicated table applies them. 0: the default (DefaultMaxKeys,
	// DefaultMaxWaitersPerKey); drivers.Unlimited (-1): no limit. An acquire beyond them is
	// answered 429 with code "full" (drivers.ErrFull). MaxKeys counts
	// each holder and each waiter of a semaphore or read/write lock as one.
	MaxKeys          int
	MaxWaitersPerKey int
	// MaxHoldersPerKey caps the holders of one semaphore or read/write
	// lock, the same on every node: 0 is DefaultMaxHoldersPerKey, the most
	// (drivers.MaxHolders); never unlimited. A reader beyond it meets a
	// busy key (409, or it waits its turn); a semaphore above it is
	// answered 400, code "invalid".
	MaxHoldersPerKey int
	// MaxWaits caps the waiting acquires (wait_ms > 0) this node holds open
	// at once, forwarded ones included: each holds a goroutine and a
	// connection. Beyond it a waiting acquire is answered 429, code "full".
	// 0: DefaultMaxWaits; drivers.Unlimited (-1): no limit. Node-local, may differ per node.
	MaxWaits int

	// HTTPReadTimeout bounds reading a request's headers and, from when
	// they are read, its body (default DefaultHTTPReadTimeout). The wait
	// of a waiting acquire comes after its body is read and is not bound
	// by it.
	HTTPReadTimeout time.Duration
	// MaxConns caps the HTTP connections this node holds open at once;
	// beyond it new connections wait in the kernel's accept queue until one
	// closes. Every waiting acquire holds one (two on the node it was sent
	// to, when forwarded), so keep it above MaxWaits. 0: DefaultMaxConns;
	// drivers.Unlimited (-1): no limit. Node-local.
	MaxConns int

	// Registry receives the node's metrics, labelled node=<ID>; nil: a new
	// registry per node, which also holds the Go runtime and process
	// collectors (a registry passed in gets neither: it is the caller's
	// to equip, and the default one has both). /metrics serves it when it
	// is also a prometheus.Gatherer (as *prometheus.Registry is), else the
	// default gatherer.
	Registry prometheus.Registerer
	// Debug, when set, serves every path under /debug/ of the HTTP API,
	// behind the token: lockcluster's --pprof puts net/http/pprof's
	// handlers there. A library program is free to serve its own; this
	// package never registers on http.DefaultServeMux.
	Debug http.Handler

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
	// RaftLog is the store of the raft log: RaftLogBolt (raft.db, with the
	// term and vote) or RaftLogWAL (segment files under DataDir/wal, with
	// raft.db keeping the term, vote and cluster ID). A data dir keeps the
	// store it was created with: opening it with the other one is refused.
	// Empty: the data dir's store, and DefaultRaftLog for a new data dir.
	// Node-local: nodes of one cluster may use different stores.
	RaftLog string

	// Clock and DialAddr are test and fault-injection hooks (lockcluster
	// built with -tags faults sets them from its environment); leave them
	// nil in production.
	//
	// Clock replaces the clock a leader stamps into its proposals: the
	// wall clock that gives a new cluster its time origin (Now) and the
	// monotonic time that advances it (Since). nil: the host's clock.
	Clock Clock
	// DialAddr rewrites the address of every outbound connection to a
	// peer (raft, and the HTTP calls to members' APIs), so that a test can
	// route it through a proxy it controls; TLS still verifies the peer
	// under its own address. nil: dial the address as it is.
	DialAddr func(addr string) string
}

// The raft log stores (Config.RaftLog).
const (
	// RaftLogBolt keeps the log in raft.db (raft-boltdb, bbolt).
	RaftLogBolt = raftstore.LogBolt
	// RaftLogWAL keeps the log in DataDir/wal (raft-wal): segment files
	// appended to, one fsync per batch of entries.
	RaftLogWAL = raftstore.LogWAL
)

// Peer names a voter of a bootstrapped cluster: its ID and the raft and
// HTTP addresses the other nodes reach it at (its advertised addresses).
type Peer struct{ ID, RaftAddr, HTTPAddr string }

// Default values.
const (
	DefaultElectionTimeout    = 500 * time.Millisecond
	DefaultHeartbeatTimeout   = 500 * time.Millisecond
	DefaultLeaderLeaseTimeout = 250 * time.Millisecond
	DefaultTickInterval       = time.Second
	DefaultMaxWait            = 5 * time.Minute
	DefaultApplyTimeout       = 5 * time.Second
	DefaultClusterID          = "lockcluster"
	// DefaultRaftLog is the log store of a new data dir. The WAL appends
	// a batch and fsyncs it once, where bbolt writes pages and then its
	// meta page: more cycles/s and a lower p50 than bolt in every
	// measured run (the figures and their command are in
	// docs/PERFORMANCE.md, "Raft log store"). It costs disk up front: raft-wal
	// allocates each 64 MiB segment when it creates it. Existing data
	// dirs keep their bolt log.
	DefaultRaftLog = RaftLogWAL
	// DefaultMaxKeys bounds the table's memory on every node: about 1.2 KB
	// of heap per held lock with short keys and owners (measured by
	// TestLimits_DistinctKeyFloodIsBounded), up to about 3.2 KB at the
	// longest key and owner, so 120 to 320 MB at the limit, plus a
	// transient copy while a snapshot is written. Far more locks than
	// services hold at once; raise it (--max-keys) for more.
	DefaultMaxKeys = 100_000
	// DefaultMaxWaitersPerKey is a queue no lock should ever need: a
	// thousand processes blocked on one key is a design problem, not load.
	DefaultMaxWaitersPerKey = 1000
	// DefaultMaxHoldersPerKey is the most holders of one key any backend
	// allows: a GET of the key lists them all, and at the longest owners
	// 1,000 holders and 1,000 waiters fit the API stream's answer limit.
	DefaultMaxHoldersPerKey = drivers.MaxHolders
	// DefaultMaxWaits bounds what waiting requests hold on one node: a
	// goroutine, a socket and its buffers each (tens of KB), so 100 to 200
	// MB at the limit. The leader also holds the waits forwarded to it, so
	// this is close to a cluster-wide cap.
	DefaultMaxWaits = 4096
	// DefaultHTTPReadTimeout is ample for a request of at most 64 KiB of
	// body on any network a lock service runs on.
	DefaultHTTPReadTimeout = 10 * time.Second
	// DefaultMaxConns leaves room for DefaultMaxWaits waiting acquires,
	// as many short requests and idle keep-alive connections; each
	// connection costs a goroutine and its buffers (tens of KB).
	DefaultMaxConns = 2 * DefaultMaxWaits
)

func (c Config) withDefaults() Config {
	c.ElectionTimeout = cmp.Or(c.ElectionTimeout, DefaultElectionTimeout)
	c.HeartbeatTimeout = cmp.Or(c.HeartbeatTimeout, min(DefaultHeartbeatTimeout, c.ElectionTimeout))
	c.LeaderLeaseTimeout = cmp.Or(c.LeaderLeaseTimeout, min(DefaultLeaderLeaseTimeout, c.HeartbeatTimeout))
	c.TickInterval = cmp.Or(c.TickInterval, DefaultTickInterval)
	c.MaxWait = cmp.Or(c.MaxWait, DefaultMaxWait)
	c.ApplyTimeout = cmp.Or(c.ApplyTimeout, DefaultApplyTimeout)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.ClusterID = cmp.Or(c.ClusterID, DefaultClusterID)
	c.MaxKeys = cmp.Or(c.MaxKeys, DefaultMaxKeys)
	c.MaxWaitersPerKey = cmp.Or(c.MaxWaitersPerKey, DefaultMaxWaitersPerKey)
	c.MaxHoldersPerKey = cmp.Or(c.MaxHoldersPerKey, DefaultMaxHoldersPerKey)
	c.MaxWaits = cmp.Or(c.MaxWaits, DefaultMaxWaits)
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	c.HTTPReadTimeout = cmp.Or(c.HTTPReadTimeout, DefaultHTTPReadTimeout)
	c.Bootstrap = append([]Peer(nil), c.Bootstrap...)
	return c
}

// Validate reports every inconsistency in the configuration at once, in
// words an operator can act on.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("cluster: "+format, args...))
	}
	c.checkAddrs(bad)
	c.checkBootstrap(bad)
	c.checkTimingAndLimits(bad)
	c.checkCredentials(bad, &errs)
	return errors.Join(errs...)
}

// badFunc records one problem of a Config.
type badFunc func(format string, args ...any)

// checkAddrs checks the id, the data dir and the addresses.
func (c Config) checkAddrs(bad badFunc) {
	if c.ID == "" {
		bad("ID is required")
	} else if strings.ContainsAny(c.ID, " \t\r\n") || len(c.ID) > drivers.MaxMemberIDLen {
		bad("ID %q must be at most %d bytes without spaces", c.ID, drivers.MaxMemberIDLen)
	}
	if c.DataDir == "" {
		bad("DataDir is required")
	}
	if err := hostport.Check(c.RaftAddr); err != nil {
		bad("RaftAddr: %v", err)
	}
	if c.Transport != nil && string(c.Transport.LocalAddr()) != c.RaftAddr {
		bad("RaftAddr %q differs from the transport's address %q", c.RaftAddr, c.Transport.LocalAddr())
	}
	switch {
	case c.RaftAdvertise != "" && c.Transport != nil:
		bad("RaftAdvertise %q is set, but a custom Transport advertises its own address", c.RaftAdvertise)
	case c.RaftAdvertise != "":
		if err := hostport.CheckAdvertised(c.RaftAdvertise); err != nil {
			bad("RaftAdvertise: %v", err)
		}
	case c.Transport == nil && hostport.Check(c.RaftAddr) == nil && hostport.AllInterfaces(c.RaftAddr):
		bad("RaftAddr %q listens on all interfaces, an address no peer can dial: set RaftAdvertise "+
			"(--raft-advertise) to the host:port the other nodes reach this node at", c.RaftAddr)
	}
	if err := hostport.Check(c.HTTPAddr); err != nil {
		bad("HTTPAddr: %v", err)
	}
	if c.HTTPAdvertise != "" {
		if err := hostport.CheckAdvertised(c.HTTPAdvertise); err != nil {
			bad("HTTPAdvertise: %v", err)
		}
	}
}

// checkBootstrap checks how the node starts: bootstrap or join, and the
// voters it bootstraps with.
func (c Config) checkBootstrap(bad badFunc) {
	if (len(c.Bootstrap) > 0 || c.BootstrapSelf) && c.Join != "" {
		bad("Bootstrap and Join are exclusive: bootstrap a new cluster or join an existing one")
	}
	if len(c.Bootstrap) > 0 && c.BootstrapSelf {
		bad("Bootstrap and BootstrapSelf are exclusive: list the voters, or start a cluster of this node alone")
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
				if adv := c.advertisedRaftAddr(); p.RaftAddr != adv {
					bad("bootstrap lists this node (%q) at %q but it advertises raft at %q (RaftAdvertise, else RaftAddr)", c.ID, p.RaftAddr, adv)
				}
			}
		}
		if !self {
			bad("bootstrap peers do not include this node %q", c.ID)
		}
	}
}

// checkTimingAndLimits checks raft's timeouts, the limits and the raft
// log's store.
func (c Config) checkTimingAndLimits(bad badFunc) {
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
	if c.MaxKeys < drivers.Unlimited || c.MaxWaitersPerKey < drivers.Unlimited || c.MaxWaits < drivers.Unlimited {
		bad("MaxKeys (%d), MaxWaitersPerKey (%d) and MaxWaits (%d) must be positive, 0 (default) or drivers.Unlimited (-1)",
			c.MaxKeys, c.MaxWaitersPerKey, c.MaxWaits)
	}
	if c.MaxHoldersPerKey < 0 || c.MaxHoldersPerKey > drivers.MaxHolders {
		bad("MaxHoldersPerKey (%d) must be between 1 and %d, or 0 (default: %d); a key's holders are never unlimited", c.MaxHoldersPerKey, drivers.MaxHolders, DefaultMaxHoldersPerKey)
	}
	if c.MaxConns < drivers.Unlimited {
		bad("MaxConns (%d) must be positive, 0 (default) or drivers.Unlimited (-1)", c.MaxConns)
	} else if conns, waits := cmp.Or(c.MaxConns, DefaultMaxConns), cmp.Or(c.MaxWaits, DefaultMaxWaits); conns != drivers.Unlimited && waits != drivers.Unlimited && conns <= waits {
		bad("MaxConns (%d) must exceed MaxWaits (%d): every waiting acquire holds a connection, and the other requests need some too",
			conns, waits)
	}
	switch c.RaftLog {
	case "", RaftLogBolt, RaftLogWAL:
	default:
		bad("RaftLog %q must be %q or %q (empty: the data dir's, %q for a new one)", c.RaftLog, RaftLogBolt, RaftLogWAL, DefaultRaftLog)
	}
	if c.TickInterval < 0 || c.MaxWait < 0 || c.ApplyTimeout < 0 || c.HTTPReadTimeout < 0 {
		bad("TickInterval, MaxWait, ApplyTimeout and HTTPReadTimeout must not be negative")
	}
}

// checkCredentials checks the cluster ID, TLS, the raft secret and the
// token; errs gets the errors that come whole.
func (c Config) checkCredentials(bad badFunc, errs *[]error) {
	if c.ClusterID != "" {
		if err := checkClusterID(c.ClusterID); err != nil {
			bad("ClusterID: %v", err)
		}
	}
	if err := c.TLS.Validate(); err != nil {
		*errs = append(*errs, err)
	}
	if c.RaftSecret != "" && len(c.RaftSecret) < MinRaftSecretLen {
		// The length only: the secret itself never goes into an error.
		bad("RaftSecret is %d bytes; use at least %d (a random one: openssl rand -hex 32)", len(c.RaftSecret), MinRaftSecretLen)
	}
	if c.Token != "" && len(c.Token) < MinTokenLen {
		bad("Token is %d bytes; use at least %d (a random one: openssl rand -hex 32)", len(c.Token), MinTokenLen)
	}
	if err := c.checkRaftAuth(); err != nil {
		*errs = append(*errs, err)
	}
}

// checkClusterID allows printable ASCII without spaces, up to 128 bytes:
// the ID travels in an HTTP header and in the raft handshake.
func checkClusterID(id string) error {
	if len(id) > peer.MaxClusterIDLen {
		return fmt.Errorf("%d bytes, the limit is %d", len(id), peer.MaxClusterIDLen)
	}
	for _, r := range id {
		if r <= ' ' || r > '~' {
			return fmt.Errorf("%q must be printable ASCII without spaces", id)
		}
	}
	return nil
}

// advertisedRaftAddr is the raft address this node gives its peers, as
// configured: RaftAdvertise, else RaftAddr (whose port 0 the transport
// replaces by the one it got).
func (c Config) advertisedRaftAddr() string {
	if c.RaftAdvertise != "" {
		return c.RaftAdvertise
	}
	return c.RaftAddr
}

// Clock is the time source of a node (see Config.Clock). Implementations
// must be safe for concurrent use, and Since must never run backwards.
type Clock interface {
	// Now is the wall-clock time.
	Now() time.Time
	// Since is the monotonic time elapsed since t, a time.Now reading.
	Since(t time.Time) time.Duration
}

// hostClock is the host's clock: Config.Clock when none is given.
type hostClock struct{}

func (hostClock) Now() time.Time                  { return time.Now() }
func (hostClock) Since(t time.Time) time.Duration { return time.Since(t) }

// clock is the configured Clock, or the host's.
func (c Config) clock() Clock {
	if c.Clock != nil {
		return c.Clock
	}
	return hostClock{}
}

// dialAddr is the address dialled to reach addr (see Config.DialAddr).
func (c Config) dialAddr(addr string) string {
	if c.DialAddr != nil {
		return c.DialAddr(addr)
	}
	return addr
}
