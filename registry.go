package lock

import (
	"sync"
	"sync/atomic"
)

// registryShards spreads the running callbacks over independent locks:
// with one lock, every Try of every goroutine would queue on it, and on a
// fast backend that lock, not the backend, would set the pace.
const registryShards = 32

// registry is the set of callbacks running under a Manager, so that Close
// can cancel them.
type registry struct {
	next   atomic.Uint32 // round-robin shard choice
	shards [registryShards]registryShard
}

type registryShard struct {
	mu   sync.Mutex
	runs map[*run]struct{}
	_    [40]byte // keep shards on separate cache lines
}

// add records r unless closed is set, running started under the shard
// lock when it does. Close sets closed before it drains, so a run is either
// drained or refused, never missed.
func (g *registry) add(r *run, closed *atomic.Bool, started func()) bool {
	r.shard = int(g.next.Add(1) % registryShards)
	s := &g.shards[r.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	if closed.Load() {
		return false
	}
	if s.runs == nil {
		s.runs = make(map[*run]struct{})
	}
	s.runs[r] = struct{}{}
	started()
	return true
}

func (g *registry) remove(r *run) {
	s := &g.shards[r.shard]
	s.mu.Lock()
	delete(s.runs, r)
	s.mu.Unlock()
}

// drain empties the registry and returns what it held.
func (g *registry) drain() []*run {
	var all []*run
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		for r := range s.runs {
			all = append(all, r)
		}
		clear(s.runs)
		s.mu.Unlock()
	}
	return all
}
