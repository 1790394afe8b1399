package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// Request and response bodies of the v1 HTTP API. Durations travel as
// integer milliseconds.

type acquireRequest struct {
	Key    string `json:"key"`
	Owner  string `json:"owner"`
	TTLMS  int64  `json:"ttl_ms"`
	WaitMS int64  `json:"wait_ms,omitempty"`
}

type acquireResponse struct {
	Key   string `json:"key"`
	Owner string `json:"owner"`
	Fence uint64 `json:"fence"`
	TTLMS int64  `json:"ttl_ms"`
}

type releaseRequest struct {
	Key   string `json:"key"`
	Owner string `json:"owner"`
}

type releaseResponse struct {
	Released bool `json:"released"`
}

type extendRequest struct {
	Key   string `json:"key"`
	Owner string `json:"owner"`
	TTLMS int64  `json:"ttl_ms"`
}

type extendResponse struct {
	Extended bool  `json:"extended"`
	TTLMS    int64 `json:"ttl_ms"`
}

type forceReleaseRequest struct {
	Key string `json:"key"`
}

type joinRequest struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

type leaveRequest struct {
	ID string `json:"id"`
}

type errorBody struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	HolderTTLMS int64  `json:"holder_ttl_ms,omitempty"`
}

// LockInfo describes one held key, as GET /v1/lock and /v1/locks report it.
type LockInfo struct {
	Key       string
	Owner     string
	Fence     uint64
	Remaining time.Duration
	// Waiters is the number of queued waiters.
	Waiters int
	// WaiterOwners lists the queued owners in FIFO order when the server
	// reports them (it may report only a count).
	WaiterOwners []string
}

type lockInfoWire struct {
	Key         string          `json:"key"`
	Owner       string          `json:"owner"`
	Fence       uint64          `json:"fence"`
	RemainingMS int64           `json:"remaining_ms"`
	Waiters     json.RawMessage `json:"waiters"`
}

func (w lockInfoWire) info() (LockInfo, error) {
	li := LockInfo{Key: w.Key, Owner: w.Owner, Fence: w.Fence, Remaining: time.Duration(w.RemainingMS) * time.Millisecond}
	n, owners, err := decodeWaiters(w.Waiters)
	if err != nil {
		return LockInfo{}, err
	}
	li.Waiters, li.WaiterOwners = n, owners
	return li, nil
}

// decodeWaiters accepts the waiters field as a count, a list of owner
// strings, or a list of objects with an "owner" field.
func decodeWaiters(raw json.RawMessage) (int, []string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil, nil
	}
	var owners []string
	if err := json.Unmarshal(raw, &owners); err == nil {
		return len(owners), owners, nil
	}
	var objs []struct {
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal(raw, &objs); err == nil {
		owners = make([]string, len(objs))
		for i, o := range objs {
			owners[i] = o.Owner
		}
		return len(objs), owners, nil
	}
	return 0, nil, fmt.Errorf("client: unexpected waiters field %.40s", raw)
}

type locksWire struct {
	Locks     []lockInfoWire `json:"locks"`
	Truncated bool           `json:"truncated"`
}

// Status is one node's view of the cluster, as GET /v1/status reports it.
type Status struct {
	ID           string `json:"id"`
	State        string `json:"state"`
	LeaderID     string `json:"leader_id"`
	LeaderAddr   string `json:"leader_addr"`
	LeaderHTTP   string `json:"leader_http"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	LastIndex    uint64 `json:"last_index"`
	Peers        []Peer `json:"peers"`
	Keys         int    `json:"keys"`
	// Version is the node's build: "v1.2.3", or "devel (<revision>)" for
	// a build from a checkout; empty from a node that does not report it.
	Version string `json:"version"`
}

// Peer is one member of the Raft configuration.
type Peer struct {
	ID       string `json:"id"`
	Addr     string `json:"addr"`
	Suffrage string `json:"suffrage"`
}

// durationMS converts d to whole milliseconds, rounding up so that a
// positive duration never becomes zero.
func durationMS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
