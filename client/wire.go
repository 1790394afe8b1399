package client

import "github.com/zerotal/lock/api"

// The request and response bodies of the v1 HTTP API are the types of
// package api, shared with the server.

// Status is one node's view of the cluster, as GET /v1/status reports it.
type Status = api.Status

// Peer is one member of the Raft configuration.
type Peer = api.Peer
