package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/cluster/rounds"
	"github.com/zerotal/lock/drivers"
)

// apiStore is the node as the HTTP API (package httpapi) sees it. It
// resolves the leadership each operation runs under and makes sure that
// no raft error reaches the API as itself: httpapi does not know raft,
// and answers drivers.ErrUnavailable with 503.
type apiStore struct{ n *Node }

var _ httpapi.Store = apiStore{}

// Leader serves requests here when this node leads and has taken over;
// otherwise it names the leader's HTTP address to forward them to.
func (s apiStore) Leader(context.Context) (string, error) {
	n := s.n
	if err := n.servingErr(); err != nil {
		return "", err
	}
	if n.leading() != nil {
		return "", nil
	}
	if n.raft.State() == raft.Leader {
		return "", unavailable("serve", errors.New("leader is still taking over; retry"))
	}
	return n.leaderHTTP()
}

// leaderHTTP returns the leader's HTTP address from the replicated member
// map.
func (n *Node) leaderHTTP() (string, error) {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return "", unavailable("forward", errors.New("no leader known (election in progress or no quorum)"))
	}
	if id == raft.ServerID(n.cfg.ID) {
		// Raft has stepped down and not yet cleared its leader: forwarding
		// would only come back here.
		return "", unavailable("forward", errors.New("this node's leadership has just ended; no new leader known yet"))
	}
	addr, ok := n.fsm.Member(string(id))
	if !ok || addr == "" {
		return "", unavailable("forward", errors.New("leader "+string(id)+" has not published its HTTP address yet"))
	}
	return addr, nil
}

// leading is the leadership an operation runs under. The API asked Leader
// just before; a leadership that ended since is a retryable 503, as it is
// when it ends while the operation runs.
func (s apiStore) leading(op string) (*leadership, error) {
	if l := s.n.leading(); l != nil {
		return l, nil
	}
	return nil, unavailable(op, errLeadershipChanged)
}

func (s apiStore) Acquire(ctx context.Context, req httpapi.Request) ([]uint64, error) {
	l, err := s.leading("acquire")
	if err != nil {
		return nil, err
	}
	e, err := s.n.acquireEntry(ctx, req)
	if err != nil {
		return nil, err
	}
	fences, err := s.n.acquire(ctx, l, e, req.Wait)
	return fences, apiErr("acquire", err)
}

func (s apiStore) Release(_ context.Context, key, owner string) (bool, error) {
	l, err := s.leading("release")
	if err != nil {
		return false, err
	}
	ok, err := s.n.release(l, key, owner)
	return ok, apiErr("release", err)
}

func (s apiStore) Extend(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	l, err := s.leading("extend")
	if err != nil {
		return false, err
	}
	ok, err := s.n.extend(l, key, owner, ttl)
	return ok, apiErr("extend", err)
}

func (s apiStore) ForceRelease(_ context.Context, key string) (bool, error) {
	l, err := s.leading("force-release")
	if err != nil {
		return false, err
	}
	ok, err := s.n.forceRelease(l, key)
	return ok, apiErr("force-release", err)
}

func (s apiStore) Get(ctx context.Context, key string) (api.Lock, bool, error) {
	l, err := s.leading("get")
	if err != nil {
		return api.Lock{}, false, err
	}
	lock, ok, err := s.n.getLock(ctx, l, key)
	return lock, ok, apiErr("get", err)
}

func (s apiStore) List(ctx context.Context, prefix string, limit int) ([]api.Lock, bool, error) {
	l, err := s.leading("list")
	if err != nil {
		return nil, false, err
	}
	locks, truncated, err := s.n.listLocks(ctx, l, prefix, limit)
	return locks, truncated, apiErr("list", err)
}

func (s apiStore) Status(context.Context) api.Status { return s.n.status() }

func (s apiStore) Ready(context.Context) api.Ready { return s.n.readiness(s.n.raft) }

func (s apiStore) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	return apiErr("join", s.n.addMember(ctx, id, raftAddr, httpAddr))
}

func (s apiStore) Node(context.Context) api.NodeInfo { return s.n.nodeInfo() }

func (s apiStore) Leave(_ context.Context, id string) error {
	return apiErr("leave", s.n.removeMember(id))
}

// apiErr makes a raft error that escaped unwrapped, or the end of a
// leadership, an unavailable error; every other error is the API's
// already (drivers-typed, or a 500).
func apiErr(op string, err error) error {
	if err == nil || errors.Is(err, drivers.ErrUnavailable) {
		return err
	}
	if rounds.Unavailable(err) || errors.Is(err, errLeadershipChanged) {
		return unavailable(op, err)
	}
	return err
}
