package cluster

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/internal/buildinfo"
)

// readIndex makes the leader's next local read linearizable (the ReadIndex
// of the Raft thesis): note the commit index, confirm leadership with a
// heartbeat round, then wait until the FSM has applied that index. The
// takeover barrier already committed an entry of this term.
func (n *Node) readIndex(ctx context.Context) error {
	ci := n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return unavailable("verify leader", err)
	}
	if err := n.fsm.WaitApplied(ctx, ci); err != nil {
		return unavailable("read", err)
	}
	return nil
}

// getLock reads key on the leader l, linearizably. A grant past its
// deadline is free to acquire even before the expiry entry commits, so it
// is reported as free (ok false).
func (n *Node) getLock(ctx context.Context, l *leadership, key string) (api.Lock, bool, error) {
	if err := n.readIndex(ctx); err != nil {
		return api.Lock{}, false, err
	}
	return n.tableLock(ctx, "get", key, l.clock.Now())
}

// tableLock reads key from this node's table as it stands at now (engine
// time); op names the read in an error.
func (n *Node) tableLock(ctx context.Context, op, key string, now int64) (api.Lock, bool, error) {
	info, ok, err := n.fsm.Get(ctx, key)
	if err != nil {
		return api.Lock{}, false, unavailable(op, err)
	}
	if !ok {
		return api.Lock{}, false, nil
	}
	lock, held := heldLock(info, now)
	n.watches.ages.fill(&lock, now)
	return lock, held, nil
}

// listLocks reads up to limit keys under prefix on the leader l,
// linearizably, leaving out grants past their deadline, and as many as
// fit in maxListAnswer bytes.
func (n *Node) listLocks(ctx context.Context, l *leadership, prefix string, limit int) ([]api.Lock, bool, error) {
	if err := n.readIndex(ctx); err != nil {
		return nil, false, err
	}
	infos, err := n.fsm.List(ctx, prefix, limit+1)
	if err != nil {
		return nil, false, unavailable("list", err)
	}
	truncated := len(infos) > limit
	if truncated {
		infos = infos[:limit]
	}
	now := l.clock.Now()
	locks := make([]api.Lock, 0, len(infos))
	for _, in := range infos {
		if lock, held := heldLock(in, now); held {
			n.watches.ages.fill(&lock, now)
			locks = append(locks, lock)
		}
	}
	locks, cut := fitList(locks, maxListAnswer)
	return locks, truncated || cut, nil
}

// heldLock is the engine's record of a key at now (the FSM's clock,
// nanoseconds) as the API reports it, leaving out grants past their
// deadline; held is false when none is left.
func heldLock(in engine.Info, now int64) (lock api.Lock, held bool) {
	s := in.Shared
	if s == nil {
		return api.Lock{Key: in.Key, Owner: in.Owner, Holder: drivers.HolderOf(in.Owner), Fence: in.Fence,
			Remaining: time.Duration(in.Deadline - now), Waiters: in.Waiters, Queue: apiQueue(in.Queue, false)}, in.Deadline > now
	}
	lock = api.Lock{Key: in.Key, Waiters: in.Waiters, Limit: s.Limit, Kind: api.KindSemaphore}
	mode := ""
	if s.Kind == engine.RWLock {
		lock.Kind, mode = api.KindRWLock, api.ModeRead
		if s.Writer {
			mode = api.ModeWrite
		}
	}
	first := int64(math.MaxInt64)
	for _, g := range s.Holders {
		if g.Deadline <= now {
			continue
		}
		lock.Holders = append(lock.Holders, api.Holder{Owner: g.Owner, Holder: drivers.HolderOf(g.Owner), Fence: g.Fence, Remaining: time.Duration(g.Deadline - now), Mode: mode})
		if g.Deadline < first {
			first = g.Deadline
			lock.Owner, lock.Holder, lock.Fence, lock.Remaining = g.Owner, drivers.HolderOf(g.Owner), g.Fence, time.Duration(g.Deadline-now)
		}
	}
	lock.Queue = apiQueue(s.Queue, s.Kind == engine.RWLock)
	return lock, len(lock.Holders) > 0
}

// apiQueue is a key's waiters as the API reports them, each with its mode
// when the key is a read/write lock (rw).
func apiQueue(ws []engine.QueuedWaiter, rw bool) []api.Waiting {
	var out []api.Waiting
	for _, w := range ws {
		q := api.Waiting{Owner: w.Owner, Holder: api.WaiterHolder(w.Owner, drivers.HolderOf(w.Owner))}
		if rw {
			q.Mode = api.ModeRead
			if w.Write {
				q.Mode = api.ModeWrite
			}
		}
		out = append(out, q)
	}
	return out
}

// status describes this node and its view of the cluster, leader or not.
func (n *Node) status() api.Status {
	leaderAddr, leaderID := n.raft.LeaderWithID()
	st := api.Status{
		ID:           n.cfg.ID,
		State:        strings.ToLower(n.raft.State().String()),
		LeaderID:     string(leaderID),
		LeaderAddr:   string(leaderAddr),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.fsm.AppliedIndex(),
		LastIndex:    n.raft.LastIndex(),
		Peers:        []api.Peer{},
		Keys:         n.fsm.Keys(),
		Membership:   n.member.get(),
		Version:      buildinfo.Version(),
	}
	if leaderID != "" {
		st.LeaderHTTP, _ = n.fsm.Member(string(leaderID))
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			httpAddr, _ := n.fsm.Member(string(s.ID))
			st.Peers = append(st.Peers, api.Peer{ID: string(s.ID), Addr: string(s.Address), HTTPAddr: httpAddr, Suffrage: strings.ToLower(s.Suffrage.String())})
		}
	}
	return st
}

// nodeInfo is what this node tells a leader asked to add it.
func (n *Node) nodeInfo() api.NodeInfo {
	info := api.NodeInfo{ID: n.cfg.ID, ClusterID: n.cfg.ClusterID, Membership: n.member.get(), LastIndex: n.raft.LastIndex(),
		State: strings.ToLower(n.raft.State().String()), Members: []string{}, Features: []string{acquireKeysFeature.name},
		RaftAddr: n.RaftAddr(), Limits: tableLimitsOf(n.cfg)}
	if n.olderRelease.Load() {
		info.Features = nil
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			info.Members = append(info.Members, string(s.ID))
		}
		info.Servers = len(info.Members)
	}
	return info
}
