// Package httpapi is the HTTP API of a lock cluster node: the routes of
// package api's wire schema, the bearer-token and cluster-ID checks, the
// deadline on request bodies, the one decode and field checks of every
// request, the one map from errors to statuses, the cap on waiting
// acquires, the connection cap, and the forwarding of requests to the
// leader by a node that does not lead.
//
// It serves a Store, which it declares itself: the node's lock
// operations with plain, already checked arguments. It knows nothing of
// consensus (it imports neither raft nor the node's state machine), so
// it is tested, and fuzzed, against an in-memory Store.
package httpapi
