package lock

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// registryShards spreads the running callbacks over independent locks, so
// that concurrent Try calls rarely wait for one another.
const registryShards = 16

// registry is the set of callbacks running under a Manager. Close cancels
// them all; and for those without refresh, each shard keeps their TTL
// deadlines in a min-heap watched by one timer.
//
// One timer per shard rather than per callback: almost every callback
// returns long before its TTL, and arming and stopping a runtime timer for
// each would cost more than the rest of a Try on a fast backend. The shard
// timer is re-armed only when a deadline earlier than the one it waits for
// arrives; when it fires early (the runs it was armed for have returned),
// it re-arms for the earliest deadline left.
type registry struct {
	shards [registryShards]registryShard
	firing sync.WaitGroup // expiry callbacks in flight, awaited by drain
}

type registryShard struct {
	mu      sync.Mutex
	runs    map[*run]struct{}
	due     []*run // min-heap on run.deadline
	timer   *time.Timer
	timerAt monotime // when timer fires; 0 when disarmed
	stopped bool     // drained by Close: refuses everything
}

// monotime is a point in time as the monotonic clock's offset from the
// package's start: smaller than a time.Time, and compared as an integer.
type monotime int64

var epoch = time.Now()

func monotimeOf(t time.Time) monotime { return monotime(max(t.Sub(epoch), 1)) }

func monoNow() monotime { return monotime(time.Since(epoch)) }

// add records r unless closed is set, running started under the shard
// lock when it does. Close sets closed before it drains, so a run is either
// drained or refused, never missed. When watch is set, r.checkExpiry is
// called once its deadline (r.deadline) has passed.
func (g *registry) add(r *run, closed *atomic.Bool, watch bool, started func()) bool {
	// Spread by address: free, and no counter shared by every core.
	r.shard = int(uintptr(unsafe.Pointer(r)) >> 9 % registryShards)
	s := &g.shards[r.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	if closed.Load() || s.stopped {
		return false
	}
	if s.runs == nil {
		s.runs = make(map[*run]struct{})
	}
	s.runs[r] = struct{}{}
	if watch {
		s.push(g, r)
	}
	started()
	return true
}

// rewatch puts r back on the heap with a new deadline, if it is still
// registered.
func (g *registry) rewatch(r *run, deadline monotime) {
	s := &g.shards[r.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[r]; !ok || r.heapIdx >= 0 {
		return
	}
	r.deadline = deadline
	s.push(g, r)
}

func (g *registry) remove(r *run) {
	s := &g.shards[r.shard]
	s.mu.Lock()
	delete(s.runs, r)
	if r.heapIdx >= 0 {
		s.removeAt(r.heapIdx)
	}
	s.mu.Unlock() // the timer stays armed: it fires early at worst
}

// drain empties the registry, stops its timers and waits for expiry
// callbacks in flight; it returns the runs it held.
func (g *registry) drain() []*run {
	var all []*run
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		s.stopped = true
		for r := range s.runs {
			all = append(all, r)
		}
		clear(s.runs)
		for _, r := range s.due {
			r.heapIdx = -1
		}
		s.due = nil
		if s.timer != nil {
			s.timer.Stop()
		}
		s.mu.Unlock()
	}
	g.firing.Wait()
	return all
}

// push adds r to the heap and makes sure the timer fires by its deadline.
// s.mu must be held.
func (s *registryShard) push(g *registry, r *run) {
	r.heapIdx = len(s.due)
	s.due = append(s.due, r)
	s.up(r.heapIdx)
	if s.timerAt == 0 || r.deadline < s.timerAt {
		s.arm(g, r.deadline)
	}
}

// arm sets the timer for deadline. s.mu must be held.
func (s *registryShard) arm(g *registry, deadline monotime) {
	s.timerAt = deadline
	d := time.Duration(deadline - monoNow())
	if s.timer == nil {
		s.timer = time.AfterFunc(d, func() { s.fire(g) })
		return
	}
	s.timer.Reset(d)
}

// fire hands every run whose deadline has passed to checkExpiry, and
// re-arms the timer for the earliest deadline left.
func (s *registryShard) fire(g *registry) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	g.firing.Add(1) // under s.mu, before drain can wait
	defer g.firing.Done()
	s.timerAt = 0
	now := monoNow()
	var due []*run
	for len(s.due) > 0 && s.due[0].deadline <= now {
		due = append(due, s.due[0])
		s.removeAt(0)
	}
	if len(s.due) > 0 {
		s.arm(g, s.due[0].deadline)
	}
	s.mu.Unlock()
	for _, r := range due {
		r.checkExpiry()
	}
}

// removeAt takes the run at heap index i off the heap. s.mu must be held.
func (s *registryShard) removeAt(i int) {
	last := len(s.due) - 1
	r := s.due[i]
	if i != last {
		s.swap(i, last)
	}
	s.due[last] = nil
	s.due = s.due[:last]
	r.heapIdx = -1
	if i != last {
		s.down(i)
		s.up(i)
	}
}

func (s *registryShard) less(i, j int) bool { return s.due[i].deadline < s.due[j].deadline }

func (s *registryShard) swap(i, j int) {
	s.due[i], s.due[j] = s.due[j], s.due[i]
	s.due[i].heapIdx, s.due[j].heapIdx = i, j
}

func (s *registryShard) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			return
		}
		s.swap(i, parent)
		i = parent
	}
}

func (s *registryShard) down(i int) {
	n := len(s.due)
	for {
		small := i
		if l := 2*i + 1; l < n && s.less(l, small) {
			small = l
		}
		if r := 2*i + 2; r < n && s.less(r, small) {
			small = r
		}
		if small == i {
			return
		}
		s.swap(i, small)
		i = small
	}
}
