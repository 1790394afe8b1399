package api

// AcquireRequest is the body of POST /v1/acquire: one acquire of Key, or
// of every key of Keys at once (exactly one of the two), for Owner for
// TTLMillis, refreshing what Owner holds already.
//
// Keys are taken in one step, all or none: without WaitMillis, a key held
// by another owner is answered 409 at once, naming that key and its
// holder, with none of the keys taken. Keys are distinct, 1 to
// MaxAcquireKeys of them; each is released, extended or read on its own
// afterwards.
//
// The claim is a mutex, unless the request names Semaphore, the most
// holders of each key at once (1 or more), or Mode, ModeRead or ModeWrite,
// a side of a read/write lock.
//
// WaitMillis > 0 queues the request, first come first served (for a set:
// the free keys are taken and the busy ones queued for in one step), until
// every key is granted (every TTL counted from then) or the wait passes
// (409, naming the key still waited for, with none of the keys kept);
// missing or 0, a held key is answered 409 at once.
//
// A node of v0.1.0 knows Key, Owner, TTLMillis and WaitMillis only, and
// answers 400 to a body with any other field.
type AcquireRequest struct {
	Key        string   `json:"key,omitempty"`
	Keys       []string `json:"keys,omitempty"`
	Owner      string   `json:"owner"`
	TTLMillis  int64    `json:"ttl_ms"`
	WaitMillis int64    `json:"wait_ms,omitempty"`
	// KeepMillis, with WaitMillis, keeps the request's places in the
	// queues (and the keys of a set taken meanwhile) for this long after
	// its wait runs out, for the owner's next request: a client that
	// waits in chunks asks it of every chunk but the last, so that its
	// wait stays first come first served. The node caps it at
	// MaxKeepMillis.
	KeepMillis int64  `json:"keep_ms,omitempty"`
	Semaphore  uint32 `json:"semaphore,omitempty"`
	Mode       string `json:"mode,omitempty"`
	// MaxHoldMillis, when not 0, caps the total time each grant of the
	// request can be held, counted from the moment it is granted: no
	// extend or repeated acquire takes its deadline past that, and at the
	// cap the grant ends like an expiry (drivers.Request.MaxHold). At
	// most MaxHoldLimitMillis. A refresh keeps the first grant's cap.
	MaxHoldMillis int64 `json:"max_hold_ms,omitempty"`
}

// Names are the keys r names: Keys, or Key alone.
func (r AcquireRequest) Names() []string {
	if r.Keys != nil {
		return r.Keys
	}
	return []string{r.Key}
}

// MaxHoldLimitMillis is the longest AcquireRequest.MaxHoldMillis: a
// week, the longest TTL (drivers.MaxTTL).
const MaxHoldLimitMillis = 7 * 24 * 3600 * 1000

// MaxKeepMillis caps AcquireRequest.KeepMillis.
const MaxKeepMillis = 10_000

// MaxAcquireKeys is the most keys one AcquireRequest names.
const MaxAcquireKeys = 64

// The modes of a read/write lock (AcquireRequest.Mode, Holder.Mode).
const (
	ModeRead  = "read"
	ModeWrite = "write"
)

// AcquireResponse is the answer to a granted acquire: Key and Fence are
// those of the one key, or of the first of Keys; Locks, for a request
// that named Keys, has each key with its own fence, in the order of the
// request's keys. The answer to a single key is v0.1.0's.
type AcquireResponse struct {
	Key       string     `json:"key"`
	Owner     string     `json:"owner"`
	Fence     uint64     `json:"fence"`
	TTLMillis int64      `json:"ttl_ms"`
	Locks     []KeyFence `json:"locks,omitempty"`
}

// KeyFence is one key of an acquire of several keys and the fence of its
// grant.
type KeyFence struct {
	Key   string `json:"key"`
	Fence uint64 `json:"fence"`
}

// ReleaseRequest is the body of POST /v1/release.
type ReleaseRequest struct {
	Key   string `json:"key"`
	Owner string `json:"owner"`
}

// ReleaseResponse answers a release and a force-release: Released is
// false when there was nothing to delete (for a release: Owner did not
// hold the key).
type ReleaseResponse struct {
	Released bool `json:"released"`
}

// ExtendRequest is the body of POST /v1/extend.
type ExtendRequest struct {
	Key       string `json:"key"`
	Owner     string `json:"owner"`
	TTLMillis int64  `json:"ttl_ms"`
}

// ExtendResponse answers an extend: Extended is false when Owner does not
// hold the key.
type ExtendResponse struct {
	Extended  bool  `json:"extended"`
	TTLMillis int64 `json:"ttl_ms"`
}

// ForceReleaseRequest is the body of POST /v1/force-release.
type ForceReleaseRequest struct {
	Key string `json:"key"`
}

// LockList is the answer of GET /v1/locks: the held keys, sorted by key.
// Truncated is true when more keys matched than the limit let through.
// Edges and Cycles are who waits for whom among them (WaitsFor);
// EdgesTruncated is true when there were more edges than MaxWaitEdges,
// and Cycles are then those among the edges kept.
type LockList struct {
	Locks          []Lock     `json:"locks"`
	Truncated      bool       `json:"truncated"`
	Edges          []WaitEdge `json:"edges,omitempty"`
	EdgesTruncated bool       `json:"edges_truncated,omitempty"`
	Cycles         [][]string `json:"cycles,omitempty"`
}

// Status is one node's view of the cluster (GET /v1/status).
type Status struct {
	ID string `json:"id"`
	// State is raft's, in lower case: follower, candidate, leader or
	// shutdown.
	State      string `json:"state"`
	LeaderID   string `json:"leader_id"`
	LeaderAddr string `json:"leader_addr"`
	// LeaderHTTP is the leader's HTTP address (host:port) from the member
	// map; empty while unknown.
	LeaderHTTP   string `json:"leader_http"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	LastIndex    uint64 `json:"last_index"`
	Peers        []Peer `json:"peers"`
	Keys         int    `json:"keys"`
	// Membership is this node's place in the cluster: MemberOf,
	// MemberWaiting (started with no state and no bootstrap, it waits to
	// be added) or MemberRemoved (it stopped serving).
	Membership string `json:"membership"`
	// Version is the node's build: "v1.2.3", or "v0.1.0 (<revision>)" for
	// a build from a checkout; empty from a node that does not report it.
	Version string `json:"version"`
}

// Peer is one member of the raft configuration.
type Peer struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
	// HTTPAddr is the member's HTTP address from the member map; empty
	// while unknown.
	HTTPAddr string `json:"http_addr,omitempty"`
	// Suffrage is raft's, in lower case: voter, nonvoter or staging.
	Suffrage string `json:"suffrage"`
}

// Values of Status.Membership and NodeInfo.Membership.
const (
	MemberOf      = "member"
	MemberWaiting = "waiting"
	MemberRemoved = "removed"
)

// NodeInfo is the body of GET /v1/node: what a node says of itself to
// the leader that is asked to add it. A node with raft state (a log or a
// configuration) is never added: its log would be taken for a prefix of
// the cluster's and the two tables would fork.
type NodeInfo struct {
	ID        string `json:"id"`
	ClusterID string `json:"cluster_id"`
	// Membership is as in Status.
	Membership string `json:"membership"`
	// LastIndex is the index of the last entry of its raft log (0: none).
	LastIndex uint64 `json:"last_index"`
	// Servers is the number of servers in its raft configuration.
	Servers int `json:"servers"`
	// State is its raft state, as in Status; Members the ids of its raft
	// configuration. A removed node that missed its removal (it was down,
	// or the leader stopped replicating to it first) asks the members:
	// a leader whose configuration lacks it tells it so.
	State   string   `json:"state"`
	Members []string `json:"members"`
	// Features are what the node's release applies beyond v0.1.0's log
	// entries (FeatureAcquireKeys): a leader writes an entry only every member
	// can apply.
	Features []string `json:"features,omitempty"`
	// RaftAddr is the raft address the node advertises, which a join must
	// name: the leader adds no other.
	RaftAddr string `json:"raft_addr,omitempty"`
	// Limits are the limits its replicated table applies, by name
	// ("max_keys", "max_waiters_per_key", "max_holders_per_key"; -1:
	// none). Every member applies the same log with them, so a leader
	// adds only a node whose limits equal its own.
	Limits map[string]int `json:"limits,omitempty"`
}

// FeatureAcquireKeys: the node applies every acquire as one log entry
// (type 10): semaphores, read/write locks and several keys in one step.
// A leader writes v0.1.0's entry (type 1) for a single key's mutex while a
// member does not list it, and answers any other claim 501.
const FeatureAcquireKeys = "acquire-keys"

// JoinRequest is the body of POST /v1/join. Addr is the raft address of
// the new node, HTTP its HTTP address (host:port): the leader asks the
// node there whether it may be added (GET /v1/node) before it adds it,
// and publishes it in the member map, which followers forward to once
// the node leads.
type JoinRequest struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
	HTTP string `json:"http,omitempty"`
}

// LeaveRequest is the body of POST /v1/leave.
type LeaveRequest struct {
	ID string `json:"id"`
}

// Ready is the body of GET /readyz, 200 and 503 alike.
type Ready struct {
	Ready bool `json:"ready"`
	// State is raft's: follower, candidate, leader or shutdown.
	State string `json:"state"`
	// Reason says why the node is not ready; empty when it is.
	Reason string `json:"reason,omitempty"`
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	// Code is one of the Code* constants.
	Code    string `json:"code"`
	Message string `json:"message"`
	// HolderTTLMillis comes with CodeNotAcquired when the server knows
	// it: the whole milliseconds left of the holder's lease, unless the
	// holder refreshes it. Nil (absent) when unknown, as after a wait that
	// timed out.
	HolderTTLMillis *int64 `json:"holder_ttl_ms,omitempty"`
	// Holder comes with CodeNotAcquired when the holder's owner says who
	// it is ("TOKEN:HOLDER", drivers.HolderOf): the description, never
	// the token.
	Holder string `json:"holder,omitempty"`
	// Key comes with CodeNotAcquired: the key found held (for a
	// set of keys, the one that kept the others from being taken, or
	// the one still waited for).
	Key string `json:"key,omitempty"`
}
