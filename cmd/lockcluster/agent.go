package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zerotal/lock/cluster"
)

const agentExamples = `  # a new three-node cluster (run one line per machine; same --bootstrap and token everywhere;
  # the token authenticates the API and, as no --raft-secret is given, raft)
  export LOCKCLUSTER_TOKEN=$(cat /etc/lock/token)
  lockcluster agent --id n1 --data-dir /var/lib/lock/n1 --raft-addr 10.0.0.1:7101 --http-addr 10.0.0.1:7001 \
      --bootstrap n1=10.0.0.1:7101=10.0.0.1:7001,n2=10.0.0.2:7101=10.0.0.2:7001,n3=10.0.0.3:7101=10.0.0.3:7001

  # restart a member: its state is on disk, no --bootstrap needed
  lockcluster agent --id n1 --data-dir /var/lib/lock/n1 --raft-addr 10.0.0.1:7101 --http-addr 10.0.0.1:7001

  # add a fourth node to a running cluster
  LOCKCLUSTER_TOKEN=$(cat /etc/lock/token) lockcluster agent --id n4 --data-dir /var/lib/lock/n4 \
      --raft-addr 10.0.0.4:7101 --http-addr 10.0.0.4:7001 --join 10.0.0.1:7001

  # a raft secret of its own (else the token authenticates raft too)
  LOCKCLUSTER_RAFT_SECRET=$(cat /etc/lock/raft-secret) lockcluster agent --id n1 ...

  # TLS for the API and raft (mutual TLS between nodes), clients need a certificate too
  lockcluster agent --id n1 ... --cluster-id prod-locks \
      --tls-cert n1.pem --tls-key n1-key.pem --tls-ca ca.pem --tls-client-auth

Every flag can also come from the environment: LOCKCLUSTER_ID, LOCKCLUSTER_DATA_DIR,
LOCKCLUSTER_RAFT_ADDR, LOCKCLUSTER_HTTP_ADDR, LOCKCLUSTER_BOOTSTRAP, LOCKCLUSTER_JOIN,
LOCKCLUSTER_TOKEN, LOCKCLUSTER_RAFT_SECRET, LOCKCLUSTER_RAFT_INSECURE, LOCKCLUSTER_CLUSTER_ID,
LOCKCLUSTER_TLS_CERT, LOCKCLUSTER_TLS_KEY, LOCKCLUSTER_TLS_CA, LOCKCLUSTER_TLS_CLIENT_AUTH,
LOCKCLUSTER_LOG_LEVEL, LOCKCLUSTER_ELECTION_TIMEOUT, LOCKCLUSTER_MAX_KEYS, LOCKCLUSTER_MAX_WAITERS,
LOCKCLUSTER_MAX_WAITS, LOCKCLUSTER_MAX_CONNS, LOCKCLUSTER_HTTP_READ_TIMEOUT,
LOCKCLUSTER_SHUTDOWN_TIMEOUT. Flags win.
Prefer LOCKCLUSTER_TOKEN and LOCKCLUSTER_RAFT_SECRET to --token and --raft-secret: flags are
visible to every user in the process list.
Raft is authenticated by TLS, or by the raft secret (the token when no raft secret is given),
or both. A node whose --raft-addr is not loopback refuses to start with none of them, unless
--raft-insecure says the network is trusted.
With TLS, every node of the cluster uses TLS; node certificates must be valid for both
server and client auth and name the node's raft and HTTP hosts.
SIGINT or SIGTERM stops the node gracefully (a leader hands leadership over first).
`

// runAgent runs one node until SIGINT/SIGTERM.
func runAgent(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "agent", "agent --id ID --data-dir DIR --raft-addr HOST:PORT --http-addr HOST:PORT [--bootstrap ...|--join ADDR]", agentExamples)
	id := fs.String("id", envOr(e, "", "LOCKCLUSTER_ID"), "node id, unique in the cluster (required)")
	dataDir := fs.String("data-dir", envOr(e, "", "LOCKCLUSTER_DATA_DIR"), "directory for the raft log, stable store and snapshots (required)")
	raftAddr := fs.String("raft-addr", envOr(e, "127.0.0.1:7101", "LOCKCLUSTER_RAFT_ADDR"), "host:port of the raft transport (bound and advertised)")
	httpAddr := fs.String("http-addr", envOr(e, "127.0.0.1:7001", "LOCKCLUSTER_HTTP_ADDR"), "host:port of the HTTP API")
	bootstrap := fs.String("bootstrap", envOr(e, "", "LOCKCLUSTER_BOOTSTRAP"), "start a NEW cluster with these voters: id=raftaddr=httpaddr,... (must include this node)")
	join := fs.String("join", envOr(e, "", "LOCKCLUSTER_JOIN"), "HTTP address of a member to ask to add this node")
	token := fs.String("token", "", "bearer token required on every request (default: env LOCKCLUSTER_TOKEN); also the raft secret when --raft-secret is not given")
	raftSecret := fs.String("raft-secret", "", fmt.Sprintf(
		"secret both ends of every raft connection prove they know, without sending it; the same on every node, at least %d bytes (default: env LOCKCLUSTER_RAFT_SECRET, else the token)", cluster.MinRaftSecretLen))
	defRaftInsecure, err := envBool(e, false, "LOCKCLUSTER_RAFT_INSECURE")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	raftInsecure := fs.Bool("raft-insecure", defRaftInsecure, "allow raft on a non-loopback address with neither TLS nor a secret: anyone who reaches it can write the lock table")
	clusterID := fs.String("cluster-id", envOr(e, cluster.DefaultClusterID, "LOCKCLUSTER_CLUSTER_ID"),
		"the cluster's name: stored in the data dir; joins and raft peers of another cluster are refused")
	tlsCert := fs.String("tls-cert", envOr(e, "", "LOCKCLUSTER_TLS_CERT"), "PEM certificate of this node (server and client auth); turns TLS on for HTTP and raft")
	tlsKey := fs.String("tls-key", envOr(e, "", "LOCKCLUSTER_TLS_KEY"), "PEM key of --tls-cert")
	tlsCA := fs.String("tls-ca", envOr(e, "", "LOCKCLUSTER_TLS_CA"), "PEM CA that signs the nodes' (and clients') certificates")
	defClientAuth, err := envBool(e, false, "LOCKCLUSTER_TLS_CLIENT_AUTH")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	tlsClientAuth := fs.Bool("tls-client-auth", defClientAuth, "require API clients to present a certificate signed by --tls-ca (mutual TLS)")
	logLevel := fs.String("log-level", envOr(e, "info", "LOCKCLUSTER_LOG_LEVEL"), "trace, debug, info, warn, error or off")
	defElection, err := envDuration(e, 0, "LOCKCLUSTER_ELECTION_TIMEOUT")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	election := fs.Duration("election-timeout", defElection, "raft election timeout; heartbeat = the same, leader lease = half (0: 500ms/500ms/250ms)")
	defMaxKeys, err := envInt(e, 0, "LOCKCLUSTER_MAX_KEYS")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	maxKeys := fs.Int("max-keys", defMaxKeys, fmt.Sprintf("refuse new keys beyond this many (0: %d, -1: unlimited); the same on every node", cluster.DefaultMaxKeys))
	defMaxWaiters, err := envInt(e, 0, "LOCKCLUSTER_MAX_WAITERS")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	maxWaiters := fs.Int("max-waiters", defMaxWaiters, fmt.Sprintf("refuse waiters beyond this many per key (0: %d, -1: unlimited); the same on every node", cluster.DefaultMaxWaitersPerKey))
	defMaxWaits, err := envInt(e, 0, "LOCKCLUSTER_MAX_WAITS")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	maxWaits := fs.Int("max-waits", defMaxWaits, fmt.Sprintf("waiting acquires this node holds open at once (0: %d, -1: unlimited)", cluster.DefaultMaxWaits))
	defStop, err := envDuration(e, 10*time.Second, "LOCKCLUSTER_SHUTDOWN_TIMEOUT")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	stopTimeout := fs.Duration("shutdown-timeout", defStop, "how long a graceful stop may take")
	defMaxConns, err := envInt(e, 0, "LOCKCLUSTER_MAX_CONNS")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	maxConns := fs.Int("max-conns", defMaxConns, fmt.Sprintf("HTTP connections this node holds open at once; more wait to be accepted (0: %d, -1: unlimited; above --max-waits)", cluster.DefaultMaxConns))
	defReadTimeout, err := envDuration(e, 0, "LOCKCLUSTER_HTTP_READ_TIMEOUT")
	if err != nil {
		return usageError(e, "agent", "%v", err)
	}
	readTimeout := fs.Duration("http-read-timeout", defReadTimeout, fmt.Sprintf("time a client has to send a request's headers, and again its body; waits are not bound by it (0: %s)", cluster.DefaultHTTPReadTimeout))
	if code, done := parse(fs, e, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(e, "agent", "unexpected argument %q", fs.Arg(0))
	}
	if *election < 0 || *readTimeout < 0 || *stopTimeout <= 0 {
		return usageError(e, "agent", "--election-timeout and --http-read-timeout must not be negative, and --shutdown-timeout must be positive")
	}
	peers, err := parsePeers(*bootstrap)
	if err != nil {
		return usageError(e, "agent", "--bootstrap: %v", err)
	}
	if *token == "" {
		*token = envOr(e, "", "LOCKCLUSTER_TOKEN")
	}
	if *raftSecret == "" {
		*raftSecret = envOr(e, "", "LOCKCLUSTER_RAFT_SECRET")
	}
	logger, err := newLogger(e.stderr, "lockcluster", *logLevel)
	if err != nil {
		return usageError(e, "agent", "--log-level: %v", err)
	}
	cfg := cluster.Config{
		ID: *id, DataDir: *dataDir, RaftAddr: *raftAddr, HTTPAddr: *httpAddr,
		Bootstrap: peers, Join: *join, Token: *token,
		RaftSecret: *raftSecret, RaftInsecure: *raftInsecure,
		MaxConns: *maxConns, HTTPReadTimeout: *readTimeout,
		Logger:             logger.Named(*id),
		ElectionTimeout:    cluster.DefaultElectionTimeout,
		HeartbeatTimeout:   cluster.DefaultHeartbeatTimeout,
		LeaderLeaseTimeout: cluster.DefaultLeaderLeaseTimeout,
		MaxKeys:            *maxKeys, MaxWaitersPerKey: *maxWaiters, MaxWaits: *maxWaits,
		ClusterID: *clusterID,
		TLS: cluster.TLSConfig{CertFile: *tlsCert, KeyFile: *tlsKey, CAFile: *tlsCA,
			RequireClientCert: *tlsClientAuth},
	}
	if *election > 0 {
		cfg.ElectionTimeout = *election
		cfg.HeartbeatTimeout = *election
		cfg.LeaderLeaseTimeout = *election / 2
	}
	if err := cfg.Validate(); err != nil {
		return usageError(e, "agent", "%v", err)
	}
	node, err := cluster.NewNode(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "lockcluster agent: %v\n", err)
		return exitFailure
	}
	logger.Info("node started", "id", *id, "http", node.HTTPAddr(), "raft", *raftAddr, "data_dir", *dataDir)
	<-ctx.Done()
	logger.Info("stopping", "id", *id)
	sctx, cancel := context.WithTimeout(context.Background(), *stopTimeout)
	defer cancel()
	if err := node.Shutdown(sctx); err != nil {
		fmt.Fprintf(e.stderr, "lockcluster agent: shutdown: %v\n", err)
		return exitFailure
	}
	logger.Info("stopped", "id", *id)
	return exitOK
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
