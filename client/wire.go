package client

import (
	"time"

	"github.com/zerotal/lock/api"
)

// The request and response bodies of the v1 HTTP API are the types of
// package api, shared with the server.

// LockInfo describes one held key, as GET /v1/lock and /v1/locks report it.
type LockInfo struct {
	Key       string
	Owner     string
	Fence     uint64
	Remaining time.Duration
	// Waiters is the number of queued waiters.
	Waiters int
}

// lockInfo converts the wire form.
func lockInfo(w api.LockInfo) LockInfo {
	return LockInfo{Key: w.Key, Owner: w.Owner, Fence: w.Fence, Remaining: api.Duration(w.RemainingMillis), Waiters: w.Waiters}
}

// Status is one node's view of the cluster, as GET /v1/status reports it.
type Status = api.Status

// Peer is one member of the Raft configuration.
type Peer = api.Peer
