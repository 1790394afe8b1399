package sqlite

import (
	"sync"

	"github.com/zerotal/lock/drivers/internal/rules"
)

// lines keeps the waiters of one handle for one key in their order of
// arrival, so that only the first of them reads the key at every change:
// the others would read the same rows, many times over, on a hot key. The
// queue itself is in the file (each waiter has its place there). A
// transaction of this handle that lets one of them in hands it its fence
// once committed (deliver), so that a hand-off within the process costs
// no read; when the first one's read shows another of the line let in by
// another process, or due a step, it pokes that one, which then looks for
// itself.
type lines struct {
	mu sync.Mutex
	m  map[string][]*ticket
}

type ticket struct {
	owner   string
	turn    chan struct{} // closed when the ticket is first in line
	poke    chan struct{} // capacity 1: look at the key now
	granted chan uint64   // capacity 1: the fence of a grant this handle committed
}

// join puts a ticket of owner at the end of key's line.
func (l *lines) join(key, owner string) *ticket {
	t := &ticket{owner: owner, turn: make(chan struct{}), poke: make(chan struct{}, 1), granted: make(chan uint64, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string][]*ticket{}
	}
	l.m[key] = append(l.m[key], t)
	if len(l.m[key]) == 1 {
		close(t.turn)
	}
	return t
}

// first reports whether t is first in its line.
func (t *ticket) first() bool {
	select {
	case <-t.turn:
		return true
	default:
		return false
	}
}

// leave takes t out of key's line; when t was first, the next one's turn
// begins.
func (l *lines) leave(key string, t *ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := l.m[key]
	for i, x := range line {
		if x != t {
			continue
		}
		line = append(line[:i:i], line[i+1:]...)
		if len(line) == 0 {
			delete(l.m, key)
			return
		}
		l.m[key] = line
		if i == 0 {
			close(line[0].turn)
		}
		return
	}
}

// deliver hands fence to the tickets of owner in key's line, after the
// transaction that granted it has committed. A ticket's read of the key
// would find the same grant; it takes whichever comes first.
func (l *lines) deliver(key, owner string, fence uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.m[key] {
		if t.owner == owner {
			select {
			case t.granted <- fence:
			default:
			}
		}
	}
}

// pokeOthers pokes the tickets of key's line, other than self, that s
// shows holding the key or let in once someone writes. s is a read of the
// head of the queue (readHead): a ticket whose place is not in it is not
// due, and visits its place on its own timer.
func (l *lines) pokeOthers(key string, self *ticket, s rules.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	admitted := s.Admitted()
	for _, t := range l.m[key] {
		if t == self {
			continue
		}
		if p := rules.Find(s.Places, t.owner); rules.Find(s.Grants, t.owner) >= 0 || p >= 0 && p < admitted {
			select {
			case t.poke <- struct{}{}:
			default:
			}
		}
	}
}

// hotKeys are the keys this handle last saw with a queue, at most
// maxHotKeys of them: their release lets the next waiter in within its
// own transaction (one commit, not two), and a wait for one of them
// queues at once rather than try the uncontended statement first, which
// would find the queue.
type hotKeys struct {
	mu sync.Mutex
	m  map[string]bool
}

const maxHotKeys = 1024

func (h *hotKeys) has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[key]
}

// set records whether key has a queue.
func (h *hotKeys) set(key string, queued bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !queued:
		delete(h.m, key)
	case h.m == nil || len(h.m) >= maxHotKeys:
		h.m = map[string]bool{key: true}
	default:
		h.m[key] = true
	}
}
