package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/handoff"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/cluster/metrics"
	"github.com/zerotal/lock/cluster/raftstore"
	"github.com/zerotal/lock/cluster/rounds"
	"github.com/zerotal/lock/cluster/term"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/buildinfo"
	"github.com/zerotal/lock/internal/logbridge"
)

// Node is one member of a lock cluster: a raft server with the lock FSM,
// and the HTTP API in front of it.
type Node struct {
	cfg     Config
	log     *slog.Logger
	fsm     *fsm.FSM
	raft    *raft.Raft
	stores  *stores
	metrics *metrics.Metrics
	waits   *handoff.Requests
	// featureMembers holds "feature\x00id" for each member known to apply
	// a feature's entries (features.go).
	featureMembers sync.Map
	// olderRelease makes the node's GET /v1/node say none of the
	// features (tests only: a member of an older release).
	olderRelease atomic.Bool
	member       *membership
	rounds       *rounds.Rounds // nil until raft runs
	expiry       *term.Expiry

	httpSrv *http.Server
	// healthSrv serves Config.HealthAddr (nil when not set).
	healthSrv *http.Server
	healthLn  net.Listener
	listener  net.Listener
	handler   http.Handler
	proxy     *http.Transport // forwarding to the leader
	tls       *tlsSetup       // nil: plain TCP and HTTP

	// creds are the API's credentials now (see ReloadTokens); nil: none
	// configured, the API is open.
	creds atomic.Pointer[access.Set]

	// lead is set while this node is a leader that finished its takeover
	// (barrier, clock, sweep); nil otherwise.
	lead atomic.Pointer[leadership]
	// raftForMetrics publishes n.raft to metric callbacks, which a shared
	// registry may run while NewNode is still starting.
	raftForMetrics atomic.Pointer[raft.Raft]
	// proposeHook, when set, sees every entry this node proposes before it
	// enters raft and may hold it there, or fail it with the error it
	// returns (tests only: it forces the interleavings of retried waits).
	proposeHook atomic.Pointer[func(fsm.Entry) error]
	// applyHook, when set, sees every applied lock entry before onApply
	// acts on it, and may hold it there (tests only: it delays a hand-off's
	// delivery past the engine's apply).
	applyHook atomic.Pointer[func(fsm.Applied)]
	// watches wakes the long polls of keys (GET /v1/watch, watch.go).
	watches keyWatches

	// stopping is the node's one shutdown signal: every HTTP request's
	// parent and every loop's stop, so that long waits and forwarded
	// requests end promptly. Shutdown cancels it.
	stopping     context.Context
	stop         context.CancelFunc
	shutdownOnce sync.Once
	shutdownErr  error
	wg           sync.WaitGroup
}

// NewNode opens the stores, starts raft (bootstrapping or joining as
// configured) and serves the HTTP API. ctx bounds the start, including
// the join request; it is not kept.
func NewNode(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:    cfg,
		log:    cfg.Logger,
		waits:  handoff.NewRequests(cfg.Logger),
		member: newMembership(),
		proxy:  newProxyTransport(cfg.dialAddr),
	}
	n.stopping, n.stop = context.WithCancel(context.Background())
	// Everything started below is undone by Shutdown, which copes with a
	// partly built node.
	defer func() {
		if err != nil {
			_ = n.Shutdown(context.Background())
		}
	}()

	if err := n.setupTLS(); err != nil {
		return nil, err
	}
	if err := n.newStateMachine(); err != nil {
		return nil, err
	}
	// Listen first: a busy port fails the start before any raft state is
	// written, and the address is known before this node can lead.
	n.listener, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen HTTP on %s: %w", cfg.HTTPAddr, err)
	}
	if cfg.MaxConns != drivers.Unlimited {
		n.listener = httpapi.LimitListener(n.listener, cfg.MaxConns)
	}
	if err := n.checkLimitsAtStart(ctx); err != nil {
		return nil, err
	}
	existing, err := n.startRaft()
	if err != nil {
		return nil, err
	}
	if err := n.ReloadTokens(cfg.Tokens); err != nil {
		return nil, err
	}
	n.newHTTPServer()
	if err := n.startHealth(); err != nil {
		return nil, err
	}
	n.checkMembership()
	n.startLoops()

	switch {
	case cfg.Join != "" && existing:
		// Already a member: the configuration is in the log, and the
		// cluster may be restarting as a whole, with nobody to answer.
		n.log.Info("raft state found on disk: not joining again", "join", cfg.Join)
	case cfg.Join != "":
		if err := n.joinCluster(ctx); err != nil {
			return nil, err
		}
	}
	n.log.Info("node started", "id", cfg.ID, "raft_addr", n.RaftAddr(), "raft_bind", cfg.RaftAddr,
		"http_addr", n.HTTPAddr(), "http_advertise", n.AdvertisedHTTPAddr(), "data_dir", cfg.DataDir, "version", buildinfo.Version())
	return n, nil
}

// newStateMachine builds the FSM, the expiry loop over it and the
// metrics that read it.
func (n *Node) newStateMachine() (err error) {
	cfg := n.cfg
	n.fsm, err = fsm.New(fsm.Config{
		MaxKeys:          cfg.MaxKeys,
		MaxWaitersPerKey: cfg.MaxWaitersPerKey,
		MaxHoldersPerKey: cfg.MaxHoldersPerKey,
		Logger:           cfg.Logger.With(logbridge.NameKey, "fsm"),
		OnApply:          n.onApply,
		OnConfiguration:  func(c raft.Configuration) { n.member.committed(raft.ServerID(cfg.ID), c) },
		OnRestore:        n.watches.restored,
	})
	if err != nil {
		return err
	}
	n.expiry = term.NewExpiry(n.fsm, n.propose, cfg.TickInterval)
	n.metrics, err = metrics.New(metrics.Sources{
		ID:       cfg.ID,
		Registry: cfg.Registry,
		Raft:     n.raftForMetrics.Load,
		Waiters:  n.fsm.WaiterCount,
		Keys:     n.fsm.Keys,
		Ready:    func(r *raft.Raft) bool { return n.readiness(r).Ready },
	})
	return err
}

// startRaft checks and opens the data dir's stores, starts raft on them
// and bootstraps when told to. existing reports whether the dir held raft
// state already.
func (n *Node) startRaft() (existing bool, err error) {
	cfg := n.cfg
	// Damaged files refuse the start with an error naming them, before
	// bbolt or raft can crash on them or start without their content.
	if err := raftstore.CheckFiles(cfg.DataDir); err != nil {
		return false, err
	}
	if err := checkNotRemoved(cfg.DataDir); err != nil {
		return false, err
	}
	n.stores, err = openStores(cfg, n.tls)
	if err != nil {
		return false, err
	}
	if err := n.stores.Check(); err != nil {
		return false, err
	}
	existing, err = n.stores.HasExistingState()
	if err != nil {
		return false, fmt.Errorf("cluster: read raft state in %s: %w", cfg.DataDir, err)
	}
	n.raft, err = raft.NewRaft(raftConfig(cfg), n.fsm, n.stores.LogStore, n.stores.StableStore, n.stores.SnapshotStore, n.stores.transport)
	if err != nil {
		return false, fmt.Errorf("cluster: start raft: %w", err)
	}
	n.raftForMetrics.Store(n.raft)
	n.rounds = rounds.New(rounds.Config{Apply: n.raft.Apply, Timeout: cfg.ApplyTimeout})
	return existing, n.bootstrap(existing)
}

// newHTTPServer builds the API handler and the server that serves it on
// the node's listener.
func (n *Node) newHTTPServer() {
	cfg := n.cfg
	n.handler = httpapi.New(apiStore{n}, httpapi.Options{
		NodeID:      cfg.ID,
		ClusterID:   cfg.ClusterID,
		Credentials: n.creds.Load,
		Forwarder:   n.checkForwarder,
		Logger:      cfg.Logger.With(logbridge.NameKey, "http"),
		ReadTimeout: cfg.HTTPReadTimeout,
		MaxWaits:    cfg.MaxWaits,
		Metrics:     promhttp.HandlerFor(n.metrics.Gatherer, promhttp.HandlerOpts{}),
		Debug:       cfg.Debug,
		Transport:   n.proxy,
		Scheme:      n.httpScheme(),
		Streams:     &n.wg,
	})
	n.httpSrv = &http.Server{
		Handler:           n.handler,
		ReadHeaderTimeout: cfg.HTTPReadTimeout, // no ReadTimeout: see httpapi/readbody.go
		MaxHeaderBytes:    httpapi.MaxHeaderBytes,
		IdleTimeout:       httpapi.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return n.stopping },
		ErrorLog:          logbridge.HCLog(cfg.Logger, "http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// startLoops starts the node's goroutines, which Shutdown waits for: the
// HTTP server, and the watches of leadership and membership.
func (n *Node) startLoops() {
	n.wg.Add(3)
	go func() {
		defer n.wg.Done()
		if err := n.serveHTTP(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server stopped", "error", err)
		}
	}()
	go func() {
		defer n.wg.Done()
		n.watchLeadership()
	}()
	go func() {
		defer n.wg.Done()
		n.watchMembership()
	}()
}

// serveHTTP serves the API on the node's listener, over TLS when
// configured (HTTP/2 offered, as ServeTLS does).
func (n *Node) serveHTTP() error {
	if n.tls == nil {
		return n.httpSrv.Serve(n.listener)
	}
	n.httpSrv.TLSConfig = n.tls.httpServer.Clone()
	return n.httpSrv.ServeTLS(n.listener, "", "")
}

// bootstrap starts a new cluster when the data dir holds no raft state
// and the configuration says to (Bootstrap or BootstrapSelf). A node told
// neither waits to be added: one that bootstrapped a cluster of its own
// would hold a log and a configuration, and adding it to another cluster
// would fork the lock table.
func (n *Node) bootstrap(existing bool) error {
	if existing {
		if len(n.cfg.Bootstrap) > 0 || n.cfg.BootstrapSelf {
			n.log.Info("raft state found on disk: ignoring the bootstrap settings", "data_dir", n.cfg.DataDir)
		}
		return nil
	}
	if n.cfg.Join != "" {
		return nil
	}
	var servers []raft.Server
	switch {
	case n.cfg.BootstrapSelf:
		servers = []raft.Server{{ID: raft.ServerID(n.cfg.ID), Address: n.stores.transport.LocalAddr()}}
	case len(n.cfg.Bootstrap) == 0:
		n.log.Warn("no raft state, no bootstrap and no join: waiting to be added to a cluster; on a member run "+
			"lockcluster join --id "+n.cfg.ID+" --raft-addr "+n.RaftAddr()+" --http-addr "+n.AdvertisedHTTPAddr(),
			"data_dir", n.cfg.DataDir)
		return nil
	}
	for _, p := range n.cfg.Bootstrap {
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	if err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	return nil
}

// startHealth opens Config.HealthAddr, when set, and serves the probes and
// the metrics there (httpapi.NewHealth).
func (n *Node) startHealth() error {
	if n.cfg.HealthAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.HealthAddr)
	if err != nil {
		return fmt.Errorf("cluster: listen for health on %s: %w", n.cfg.HealthAddr, err)
	}
	n.healthLn = ln
	n.healthSrv = &http.Server{
		Handler: httpapi.NewHealth(apiStore{n}, httpapi.Options{
			NodeID:  n.cfg.ID,
			Metrics: promhttp.HandlerFor(n.metrics.Gatherer, promhttp.HandlerOpts{}),
		}),
		ReadHeaderTimeout: n.cfg.HTTPReadTimeout,
		MaxHeaderBytes:    httpapi.MaxHeaderBytes,
		IdleTimeout:       httpapi.IdleTimeout,
		ErrorLog:          logbridge.HCLog(n.cfg.Logger, "health").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.healthSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("health server stopped", "error", err)
		}
	}()
	return nil
}

// HealthAddr is the address of the health listener (Config.HealthAddr,
// with the real port when it asked for port 0); "" when there is none.
func (n *Node) HealthAddr() string {
	if n.healthLn == nil {
		return ""
	}
	return n.healthLn.Addr().String()
}

// HTTPAddr is the address the HTTP API listens on (the real port when
// Config.HTTPAddr asked for port 0).
func (n *Node) HTTPAddr() string {
	if n.listener == nil {
		return n.cfg.HTTPAddr
	}
	return n.listener.Addr().String()
}

// AdvertisedHTTPAddr is the HTTP address this node publishes to the others
// (see Config.HTTPAdvertise).
func (n *Node) AdvertisedHTTPAddr() string {
	return advertiseAddr(n.cfg.HTTPAdvertise, n.HTTPAddr(), n.RaftAddr())
}

// advertiseAddr is override when set, else bound with an all-interfaces
// host replaced by the host of raftAddr, the advertised raft address
// (which peers must be able to dial).
func advertiseAddr(override, bound, raftAddr string) string {
	if override != "" {
		return override
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if raftHost, _, err := net.SplitHostPort(raftAddr); err == nil {
			return net.JoinHostPort(raftHost, port)
		}
	}
	return bound
}

// RaftAddr is the address the raft transport advertises: the one peers
// dial and the raft configuration lists (Config.RaftAdvertise, else the
// bound address).
func (n *Node) RaftAddr() string {
	if n.stores == nil || n.stores.transport == nil {
		return n.cfg.advertisedRaftAddr()
	}
	return string(n.stores.transport.LocalAddr())
}

// ID is the node's raft server id.
func (n *Node) ID() string { return n.cfg.ID }

// Handler is the node's HTTP API, for in-process tests.
func (n *Node) Handler() http.Handler { return n.handler }

// IsLeader reports whether this node leads the cluster and has finished
// taking over (it then accepts writes). Raft's own state is read too: the
// term this node serves ends only when raft's leader channel is read, a
// moment after raft has stepped down, and in that moment the node must
// not claim a leadership it no longer has.
func (n *Node) IsLeader() bool { return n.leading() != nil }

// leading is the term this node serves as leader, or nil when it does not
// lead (raft has stepped down, even if the term has not ended yet).
func (n *Node) leading() *leadership {
	l := n.lead.Load()
	if l == nil || n.raft.State() != raft.Leader {
		return nil
	}
	return l
}

// WaitForLeader blocks until this node can serve requests: it leads and
// has taken over, or it knows a leader and that leader's HTTP address.
func (n *Node) WaitForLeader(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		// The API's own rule: this node serves a request, or forwards it.
		if _, err := (apiStore{n}).Leader(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for a leader: %w", ctx.Err())
		case <-n.stopping.Done():
			return fmt.Errorf("cluster: waiting for a leader: %w", drivers.ErrClosed)
		case <-t.C:
		}
	}
}

// Shutdown stops the node gracefully: a leader first hands leadership to
// another voter, then the HTTP server drains (bounded by ctx), raft stops
// and the stores close. It is idempotent.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() { n.shutdownErr = n.shutdown(ctx) })
	return n.shutdownErr
}

func (n *Node) shutdown(ctx context.Context) error {
	var errs []error
	if n.raft != nil && !n.cfg.SkipLeadershipTransfer && n.raft.State() == raft.Leader && n.hasOtherVoters() {
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("leadership transfer failed", "error", err)
		}
	}
	n.stop()
	if n.healthSrv != nil {
		_ = n.healthSrv.Close() // probes and scrapes: nothing to drain
	}
	if n.httpSrv != nil {
		if err := n.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cluster: http shutdown: %w", err), n.httpSrv.Close())
		}
	} else if n.listener != nil {
		_ = n.listener.Close()
	}
	if n.rounds != nil {
		if err := n.rounds.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if n.raft != nil {
		if err := n.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: raft shutdown: %w", err))
		}
	}
	n.wg.Wait()
	n.waits.Wait() // the clean-ups after answered waits: their term has ended
	n.proxy.CloseIdleConnections()
	if n.stores != nil {
		errs = append(errs, n.stores.close())
	}
	if n.fsm != nil {
		errs = append(errs, n.fsm.Close())
	}
	if n.metrics != nil {
		n.metrics.Unregister()
	}
	return errors.Join(errs...)
}

func (n *Node) hasOtherVoters() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter && s.ID != raft.ServerID(n.cfg.ID) {
			return true
		}
	}
	return false
}
