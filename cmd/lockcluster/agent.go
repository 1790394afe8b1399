package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
)

const agentExamples = `  # a new three-node cluster: one line per machine, the same --bootstrap and secrets everywhere.
  # The raft secret is the nodes' own credential; the token file holds the clients' (lockcluster token)
  export LOCKCLUSTER_RAFT_SECRET_FILE=/etc/lock/raft-secret LOCKCLUSTER_TOKEN_FILE=/etc/lock/tokens
  lockcluster agent --id n1 --data-dir /var/lib/lock/n1 --raft-addr 10.0.0.1:7101 --http-addr 10.0.0.1:7001 \
      --bootstrap n1=10.0.0.1:7101=10.0.0.1:7001,n2=10.0.0.2:7101=10.0.0.2:7001,n3=10.0.0.3:7101=10.0.0.3:7001

  # restart a member: its state is on disk, no --bootstrap needed
  lockcluster agent --id n1 --data-dir /var/lib/lock/n1 --raft-addr 10.0.0.1:7101 --http-addr 10.0.0.1:7001

  # add a fourth node: start it with an empty data dir and neither --bootstrap nor --join (it waits
  # to be added, and serves nothing until then), then, with an operator's token, on any machine:
  lockcluster agent --id n4 --data-dir /var/lib/lock/n4 --raft-addr 10.0.0.4:7101 --http-addr 10.0.0.4:7001
  lockcluster join --endpoints 10.0.0.1:7001 --id n4 --raft-addr 10.0.0.4:7101 --http-addr 10.0.0.4:7001

  # a single-node cluster
  lockcluster agent --id n1 --data-dir /var/lib/lock/n1 --bootstrap-self

  # TLS for the API and raft (mutual TLS between nodes), clients need a certificate too
  lockcluster agent --id n1 ... --cluster-id prod-locks \
      --tls-cert n1.pem --tls-key n1-key.pem --tls-ca ca.pem --tls-client-auth`

const agentNotes = `Every flag can also come from the environment, as shown under each (the flag wins).
Prefer files (--raft-secret-file, --token-file) or LOCKCLUSTER_RAFT_SECRET and LOCKCLUSTER_TOKEN
to --raft-secret and --token: flags are visible to every user in the process list.
A node bootstraps only when told to (--bootstrap or --bootstrap-self). With an empty data dir and
neither, it waits to be added (lockcluster join), and its log, status and /readyz say so. The
leader asks a node before adding it, and refuses one that has raft state or another cluster ID.
A node removed from the cluster (lockcluster leave) stops serving and exits with status 1, and
its data dir refuses a restart.
Raft is authenticated by TLS or by the raft secret (never by the API token), or both. A node
with neither refuses to start, unless --raft-insecure says every host and process is trusted.
Credentials: --token is one operator token; --token-file holds named tokens with roles (client,
operator, metrics) and key prefixes, and is read again on SIGHUP (docs/CLI.md, "Credentials").
With TLS, every node of the cluster uses TLS; node certificates must be valid for both
server and client auth and name the node's raft and HTTP hosts.
SIGINT or SIGTERM stops the node gracefully (a leader hands leadership over first).`

// agentOptions are agent's flags.
type agentOptions struct {
	id, dataDir, raftAddr, httpAddr, bootstrap, join string
	raftAdvertise, httpAdvertise                     string
	healthAddr                                       string
	token, tokenFile, raftSecret, raftSecretFile     string
	raftInsecure, bootstrapSelf                      bool
	clusterID, raftLog                               string
	tlsCert, tlsKey, tlsCA                           string
	tlsClientAuth, pprof                             bool
	logLevel                                         string
	election, stopTimeout, readTimeout               time.Duration
	maxKeys, maxWaiters, maxWaits, maxConns          int
	maxHolders                                       int
}

func newAgentCmd(e *env) *cobra.Command {
	var o agentOptions
	cmd, fs := newCommand("agent --id ID --data-dir DIR --raft-addr HOST:PORT --http-addr HOST:PORT [--bootstrap ...|--join ADDR] [flags]",
		"run one cluster node", agentExamples, agentNotes)
	fs.StringVar(&o.id, "id", "", "node id, unique in the cluster (required)")
	fs.StringVar(&o.dataDir, "data-dir", "", "`directory` for the raft log, stable store and snapshots (required)")
	fs.StringVar(&o.raftAddr, "raft-addr", "127.0.0.1:7101", "`host:port` the raft transport listens on")
	fs.StringVar(&o.httpAddr, "http-addr", "127.0.0.1:7001", "`host:port` the HTTP API listens on")
	fs.StringVar(&o.raftAdvertise, "raft-advertise", "", "`host:port` other nodes dial for raft, when not --raft-addr (NAT, containers, a proxy);\nneeded when --raft-addr listens on all interfaces")
	fs.StringVar(&o.httpAdvertise, "http-advertise", "", "`host:port` other nodes and clients are told to use for this node's HTTP\nAPI, when not --http-addr")
	fs.StringVar(&o.healthAddr, "health-addr", "", "`host:port` of a plain HTTP listener for /healthz, /readyz and /metrics with no credential,\nfor probes and Prometheus when the API requires client certificates (loopback or a\nmanagement network: anyone who reaches it reads the metrics)")
	fs.StringVar(&o.bootstrap, "bootstrap", "", "start a NEW cluster with these voters: `id=raftaddr=httpaddr,...` (must include this node)")
	fs.BoolVar(&o.bootstrapSelf, "bootstrap-self", false, "start a NEW cluster of this node alone (others may join it later)")
	fs.StringVar(&o.join, "join", "", "HTTP `address` of a member to ask to add this node (needs an operator's --token);\nor start with neither flag and run lockcluster join")
	fs.StringVar(&o.token, "token", "", fmt.Sprintf("an operator's bearer token (every right), at least %d bytes", cluster.MinTokenLen))
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` of named tokens with roles and key prefixes (one per line: name role prefixes\nsha256:HASH; lockcluster token makes one); read again on SIGHUP.\nAn empty file is refused (a reload keeps the tokens in force): to admit no one, write a # comment line")
	fs.StringVar(&o.raftSecret, "raft-secret", "", fmt.Sprintf(
		"secret both ends of every raft connection prove they know, without sending it; the same on every\nnode, at least %d bytes; never the API token", cluster.MinRaftSecretLen))
	fs.StringVar(&o.raftSecretFile, "raft-secret-file", "", "`file` holding the raft secret (kept out of the process list)")
	fs.BoolVar(&o.raftInsecure, "raft-insecure", false, "allow raft with neither TLS nor a raft secret: anyone who reaches it can write the lock table")
	fs.StringVar(&o.clusterID, "cluster-id", cluster.DefaultClusterID,
		"the cluster's name: stored in the data dir; joins and raft peers of another cluster are refused")
	fs.StringVar(&o.raftLog, "raft-log", "", raftLogUsage)
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate `file` of this node (server and client auth); turns TLS on for HTTP and raft")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM key `file` of --tls-cert")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "PEM CA `file` that signs the nodes' (and clients') certificates")
	fs.BoolVar(&o.tlsClientAuth, "tls-client-auth", false, "require API clients to present a certificate signed by --tls-ca (mutual TLS)")
	fs.StringVar(&o.logLevel, "log-level", "info", "trace, debug, info, warn, error or off")
	fs.BoolVar(&o.pprof, "pprof", false, "serve Go's profiler under /debug/pprof/ of the HTTP API, behind the token\n(go tool pprof http://HOST:PORT/debug/pprof/profile)")
	durationVar(fs, &o.election, "election-timeout", 0, "raft election timeout; heartbeat = the same, leader lease = half (0: 500ms/500ms/250ms)")
	fs.IntVar(&o.maxKeys, "max-keys", 0, fmt.Sprintf("refuse new keys beyond this many, each holder and waiter of a semaphore or read/write lock\ncounting one (0: %d, -1: unlimited); the same on every node", cluster.DefaultMaxKeys))
	fs.IntVar(&o.maxWaiters, "max-waiters", 0, fmt.Sprintf("refuse waiters beyond this many per key (0: %d, -1: unlimited); the same on every node", cluster.DefaultMaxWaitersPerKey))
	fs.IntVar(&o.maxHolders, "max-holders", 0, fmt.Sprintf("holders of one semaphore or read/write lock at once: a reader beyond waits, a semaphore\nabove is refused (0: %d, the most; never unlimited); the same on every node", cluster.DefaultMaxHoldersPerKey))
	fs.IntVar(&o.maxWaits, "max-waits", 0, fmt.Sprintf("waiting acquires, watches and lock-page streams this node holds open at once (0: %d,\n-1: unlimited)", cluster.DefaultMaxWaits))
	fs.IntVar(&o.maxConns, "max-conns", 0, fmt.Sprintf("HTTP connections this node holds open at once; more wait to be accepted (0: %d,\n-1: unlimited; above --max-waits)", cluster.DefaultMaxConns))
	durationVar(fs, &o.readTimeout, "http-read-timeout", 0, fmt.Sprintf("time a client has to send a request's headers, and again its body; waits are not bound\nby it (0: %s)", cluster.DefaultHTTPReadTimeout))
	durationVar(fs, &o.stopTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful stop may take")
	_ = cmd.RegisterFlagCompletionFunc("log-level", logLevels)
	_ = cmd.RegisterFlagCompletionFunc("raft-log", raftLogs)
	readsEnv(cmd, false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runAgent(cmd.Context(), e, &o)
	}
	return cmd
}

// runAgent runs one node until SIGINT/SIGTERM.
func runAgent(ctx context.Context, e *env, o *agentOptions) error {
	if o.election < 0 || o.readTimeout < 0 || o.stopTimeout <= 0 {
		return usagef("--election-timeout and --http-read-timeout must not be negative, and --shutdown-timeout must be positive")
	}
	peers, err := parsePeers(o.bootstrap)
	if err != nil {
		return usagef("--bootstrap: %v", err)
	}
	logger, _, err := newLogger(e.stderr, o.logLevel)
	if err != nil {
		return usagef("--log-level: %v", err)
	}
	if err := o.readSecretFile(); err != nil {
		return err
	}
	tokens, err := o.readTokens()
	if err != nil {
		return err
	}
	cfg := cluster.Config{
		ID: o.id, DataDir: o.dataDir, RaftAddr: o.raftAddr, HTTPAddr: o.httpAddr,
		RaftAdvertise: o.raftAdvertise, HTTPAdvertise: o.httpAdvertise, HealthAddr: o.healthAddr,
		Bootstrap: peers, BootstrapSelf: o.bootstrapSelf, Join: o.join, Token: o.token, Tokens: tokens,
		RaftSecret: o.raftSecret, RaftInsecure: o.raftInsecure,
		MaxConns: o.maxConns, HTTPReadTimeout: o.readTimeout,
		Logger:             logger.With("node", o.id),
		ElectionTimeout:    cluster.DefaultElectionTimeout,
		HeartbeatTimeout:   cluster.DefaultHeartbeatTimeout,
		LeaderLeaseTimeout: cluster.DefaultLeaderLeaseTimeout,
		MaxKeys:            o.maxKeys, MaxWaitersPerKey: o.maxWaiters, MaxWaits: o.maxWaits, MaxHoldersPerKey: o.maxHolders,
		ClusterID: o.clusterID, RaftLog: o.raftLog,
		TLS: cluster.TLSConfig{CertFile: o.tlsCert, KeyFile: o.tlsKey, CAFile: o.tlsCA,
			RequireClientCert: o.tlsClientAuth},
	}
	if o.election > 0 {
		cfg.ElectionTimeout = o.election
		cfg.HeartbeatTimeout = o.election
		cfg.LeaderLeaseTimeout = o.election / 2
	}
	if o.pprof {
		cfg.Debug = pprofHandler()
	}
	if err := cfg.Validate(); err != nil {
		return &usageError{msg: cliexplain.Strip(err.Error())}
	}
	injectFaults(&cfg)
	node, err := cluster.NewNode(ctx, cfg)
	if err != nil {
		return err
	}
	// The node logged "node started" (one line, with its addresses).
	removed := serveUntilStopped(ctx, node, o, logger)
	logger.Info("stopping", "id", o.id)
	sctx, cancel := context.WithTimeout(context.Background(), o.stopTimeout)
	defer cancel()
	if err := node.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped", "id", o.id)
	if removed {
		return fmt.Errorf("node %s was removed from the cluster: its data dir refuses a restart; empty it and join the node again to bring it back", o.id)
	}
	return nil
}

// parsePeers parses "id=raft[=http],..." into bootstrap peers.
func parsePeers(s string) ([]cluster.Peer, error) {
	var peers []cluster.Peer
	for _, item := range splitList(s) {
		parts := strings.Split(item, "=")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("%q is not id=raftaddr=httpaddr", item)
		}
		p := cluster.Peer{ID: parts[0], RaftAddr: parts[1]}
		if len(parts) == 3 {
			p.HTTPAddr = parts[2]
		}
		peers = append(peers, p)
	}
	return peers, nil
}
