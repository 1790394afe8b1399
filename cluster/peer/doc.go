// Package peer is a node's raft network: the stream layer raft's
// NetworkTransport runs on (TCP, optionally mutual TLS), the handshake
// that opens every raft connection (cluster ID and raft secret), the
// node's TLS material with its certificate reload, and the check that
// refuses an exposed, unauthenticated raft port.
//
// It knows nothing of the lock table or the node: package cluster
// builds a Config from its own and hands raft the transport.
//
// # Security
//
// Config.TLS (cert, key, CA; optionally RequireClientCert) serves the API
// over https and runs raft over mutual TLS: a raft peer must present a
// certificate signed by the CA whether or not API clients must. Node-to-node HTTP (join, forwarding) uses https and
// presents the node's certificate, so node certificates are valid for
// server and client auth and name the node's advertised raft and HTTP
// hosts (a peer checks the name it dialled). Members
// publish host:port only; every node of a cluster uses TLS or none. Use a
// CA dedicated to the cluster: any certificate it signs is a valid peer.
// A renewed node certificate (its files replaced) is used from the next
// handshake on, within a second; a new CA needs a restart.
//
// Config.RaftSecret authenticates raft without TLS (never the API token,
// which every lock client holds):
// every raft connection opens with a challenge-response in which both
// ends prove they know the secret without sending it (HMAC-SHA256 over
// both nonces, the cluster ID and the direction), so a process without it
// cannot append entries, vote or raise the term. It authenticates who
// opened a connection, not the bytes after it: against a machine on the
// network path that can rewrite traffic, use TLS. A node refuses to start
// with neither TLS nor a secret, unless Config.RaftInsecure says so.
//
// The port is bounded: at most MaxHandshakes connections in their
// handshake, MaxHandshakesPerSource of them from one address (an IPv6
// /64), and MaxConns open at once (one more is closed as soon as it is
// accepted), each handshake within HandshakeTimeout, run on a goroutine
// of the layer's before raft sees the connection. A new connection takes
// the slot of an older one rather than being refused (see
// handshakeSlots): silent connections cannot keep a peer out, whose
// handshake completes in two round trips.
//
// Config.ClusterID (default "lockcluster") is stored in the data dir's
// stable store on first start. A node refuses to start on a data dir that
// holds raft state of another cluster, a join names the ID and a member of
// another cluster refuses it (403 wrong_cluster, not retried), every raft
// connection opens with a handshake naming it (a peer of another cluster
// is dropped and logged), and a request that carries X-Lock-Cluster-Id
// with another ID is refused with 403.
package peer
