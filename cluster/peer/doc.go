// Package peer is a node's raft network: the stream layer raft's
// NetworkTransport runs on (TCP, optionally mutual TLS), the handshake
// that opens every raft connection (cluster ID and raft secret), the
// node's TLS material with its certificate reload, and the check that
// refuses an exposed, unauthenticated raft port.
//
// It knows nothing of the lock table or the node: package cluster
// builds a Config from its own and hands raft the transport.
package peer
