package httpapi_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
)

// fakeStore is an in-memory httpapi.Store: one leader, grants that never
// expire on their own, and a fixed member list. It keeps the fuzz targets
// fast (no raft round per input) while they exercise every line of the
// handler.
type fakeStore struct {
	mu      sync.Mutex
	locks   map[string]*api.Lock
	ttls    map[string]time.Duration
	fence   uint64
	members map[string]bool
	// leader is what Leader answers: "" (this node serves), an address
	// to forward to, or leaderErr.
	leader    string
	leaderErr error
	// acquired, when set, is called by Acquire before it answers (a test
	// holds a request there).
	acquired func()
	// fail, when set, is what Release answers.
	fail error
	// claim is the last claim Acquire was given; unsupported, when set,
	// is what it answers a shared claim or a set.
	claim       drivers.Claim
	unsupported error
	// wait is the last Wait Acquire was given.
	wait httpapi.Wait
	// maxHold is the last cap on total hold time Acquire was given.
	maxHold time.Duration
}

func newFakeStore(members ...string) *fakeStore {
	s := &fakeStore{locks: map[string]*api.Lock{}, ttls: map[string]time.Duration{}, members: map[string]bool{}}
	for _, m := range members {
		s.members[m] = true
	}
	return s
}

var _ httpapi.Store = (*fakeStore)(nil)

// setLeader sets what Leader answers.
func (s *fakeStore) setLeader(addr string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leader, s.leaderErr = addr, err
}

func (s *fakeStore) Leader(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leader, s.leaderErr
}

func (s *fakeStore) Acquire(_ context.Context, req httpapi.Request) ([]uint64, error) {
	if s.acquired != nil {
		s.acquired()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wait, s.claim, s.maxHold = req.Wait, req.Claim, req.MaxHold
	if s.unsupported != nil && (req.Claim != (drivers.Claim{}) || len(req.Keys) > 1) {
		return nil, s.unsupported
	}
	for _, k := range req.Keys {
		if l, ok := s.locks[k]; ok && l.Owner != req.Owner {
			return nil, &drivers.NotAcquiredError{Key: k, HolderTTL: l.Remaining}
		}
	}
	fences := make([]uint64, len(req.Keys))
	for i, k := range req.Keys {
		if l, ok := s.locks[k]; ok {
			l.Remaining, fences[i] = req.TTL, l.Fence
			continue
		}
		s.fence++
		s.locks[k] = &api.Lock{Key: k, Owner: req.Owner, Fence: s.fence, Remaining: req.TTL}
		fences[i] = s.fence
	}
	return fences, nil
}

func (s *fakeStore) Release(_ context.Context, key, owner string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return false, s.fail
	}
	if l, ok := s.locks[key]; ok && l.Owner == owner {
		delete(s.locks, key)
		return true, nil
	}
	return false, nil
}

func (s *fakeStore) Extend(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.locks[key]; ok && l.Owner == owner {
		l.Remaining = ttl
		return true, nil
	}
	return false, nil
}

func (s *fakeStore) ForceRelease(_ context.Context, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.locks[key]
	delete(s.locks, key)
	return ok, nil
}

func (s *fakeStore) Get(_ context.Context, key string) (api.Lock, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.locks[key]; ok {
		return *l, true, nil
	}
	return api.Lock{}, false, nil
}

func (s *fakeStore) List(_ context.Context, prefix string, limit int) ([]api.Lock, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.locks {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	truncated := len(keys) > limit
	if truncated {
		keys = keys[:limit]
	}
	locks := make([]api.Lock, 0, len(keys))
	for _, k := range keys {
		locks = append(locks, *s.locks[k])
	}
	return locks, truncated, nil
}

func (s *fakeStore) Status(context.Context) api.Status {
	return api.Status{ID: "n1", State: "leader", LeaderID: "n1", Peers: []api.Peer{}, Keys: s.keys()}
}

func (s *fakeStore) Node(context.Context) api.NodeInfo {
	return api.NodeInfo{ID: "n1", ClusterID: "lockcluster", Membership: api.MemberWaiting}
}

func (s *fakeStore) Ready(context.Context) api.Ready {
	return api.Ready{Ready: true, State: "leader"}
}

func (s *fakeStore) Join(_ context.Context, id, _, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[id] = true
	return nil
}

func (s *fakeStore) Leave(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.members[id] {
		return fmt.Errorf("%w %q", httpapi.ErrUnknownMember, id)
	}
	delete(s.members, id)
	return nil
}

// keys is the number of keys held.
func (s *fakeStore) keys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.locks)
}
