package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// Wait is how an acquire waits: up to For (zero: not at all) for its key,
// and, should that run out, with its place in the queue kept for Keep for
// the owner's next request (api.AcquireRequest.KeepMillis). Tenant is the
// request's credential (its access.Credential.ID; "" on a node without
// credentials): a Store bounds the places kept per tenant, so that one
// credential cannot take every place another would keep.
type Wait struct {
	For, Keep time.Duration
	Tenant    string
}

// Request is one acquire as the handler has checked it: 1 to
// api.MaxAcquireKeys distinct valid keys, the owner to record (see Store),
// a TTL in range, a valid claim (the zero Claim: a mutex), the cap on each
// grant's total hold time (zero: none; else at most
// api.MaxHoldLimitMillis) and its wait.
type Request struct {
	Keys    []string
	Owner   string
	TTL     time.Duration
	Claim   drivers.Claim
	MaxHold time.Duration
	Wait    Wait
}

// waitOf is the Wait the wait_ms and keep_ms of r's acquire ask for.
func waitOf(r *http.Request, waitMillis, keepMillis int64) Wait {
	return Wait{For: api.Duration(waitMillis), Keep: api.Duration(min(keepMillis, api.MaxKeepMillis)), Tenant: caller(r).ID()}
}

// Store is what the API serves: the lock operations of one node, with
// plain arguments the handler has already decoded and checked (a valid
// key and owner, a TTL in range, a non-negative wait, a member id without
// white space and host:port addresses).
//
// The owner a lock operation is given is the one to record: on a node
// with credentials, the request's owner behind its credential's id
// (access.Credential.Owner), so that a credential's releases and extends
// reach its own grants only. Get and List return the owners as recorded;
// the handler shows each caller what it may see of them (owners.go), the
// holder included.
//
// The lock operations, Get, List, Join and Leave are called only when
// Leader reported that this node serves them. Their errors are mapped to
// statuses by kind: drivers.ErrInvalid 400, drivers.ErrNotAcquired 409
// (a *drivers.NotAcquiredError with HolderTTL sends holder_ttl_ms),
// drivers.ErrFull 429, drivers.ErrUnavailable or drivers.ErrClosed 503
// (so a Store turns "not the leader any more" into an unavailable error),
// ErrUnknownMember 404, anything else 500.
type Store interface {
	// Leader says where requests that need the leader are served: "" and
	// no error when this node serves them, else the leader's HTTP address
	// (host:port) to forward them to. An error (no leader known, a leader
	// still taking over) is answered as it is, typically 503.
	Leader(ctx context.Context) (addr string, err error)

	// Acquire takes every key of req for its owner for its TTL, as its
	// claim says, in one step, or none: a key held by another owner is a
	// *drivers.NotAcquiredError naming it. A key the owner holds already
	// is refreshed. With req.Wait.For > 0 it waits up to that (the Store
	// may cap it), first come first served for the whole set: the free
	// keys are taken and the busy ones queued for in one step; should the
	// wait run out, it keeps the places req.Wait.Keep. Each grant lasts
	// at most req.MaxHold from when it is made, however it is refreshed
	// (drivers.Request.MaxHold). It returns the fences in the order of
	// req.Keys. A cluster that cannot apply the claim or the cap yet (a
	// member of an older release) answers an error matching
	// drivers.ErrUnsupported (501).
	Acquire(ctx context.Context, req Request) (fences []uint64, err error)
	// Release frees key if owner holds it; released reports whether it did.
	Release(ctx context.Context, key, owner string) (released bool, err error)
	// Extend sets owner's grant of key to end ttl from now.
	Extend(ctx context.Context, key, owner string, ttl time.Duration) (extended bool, err error)
	// ForceRelease frees key whoever holds it.
	ForceRelease(ctx context.Context, key string) (released bool, err error)

	// Get reads key linearizably; ok is false when it is free (an expired
	// grant counts as free).
	Get(ctx context.Context, key string) (l api.Lock, ok bool, err error)
	// List reads up to limit held keys under prefix, in key order;
	// truncated reports that more were held.
	List(ctx context.Context, prefix string, limit int) (locks []api.Lock, truncated bool, err error)

	// Status describes this node and its view of the cluster.
	Status(ctx context.Context) api.Status
	// Ready tells whether this node can serve requests now, and why not.
	Ready(ctx context.Context) api.Ready
	// Node is what this node says of itself to a leader asked to add it.
	Node(ctx context.Context) api.NodeInfo

	// Join adds (or re-adds under a new address) the member id, reached
	// by its peers at raftAddr and serving its API at httpAddr. It is
	// idempotent. A node it may not add is an error wrapping
	// ErrJoinRefused.
	Join(ctx context.Context, id, raftAddr, httpAddr string) error
	// Leave removes the member id; an id the cluster does not have is an
	// error wrapping ErrUnknownMember.
	Leave(ctx context.Context, id string) error
}
