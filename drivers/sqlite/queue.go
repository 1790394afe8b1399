package sqlite

import "sync"

// keyQueues lines up the waiters of one handle per key, in arrival order.
// Only the first waiter of a key looks at the database; the others wait for
// their turn in memory. That keeps the handle's waiters fair among
// themselves and stops them from competing for the write lock.
type keyQueues struct {
	mu    sync.Mutex
	lines map[string][]*ticket
}

type ticket struct {
	turn chan struct{} // closed when the ticket is first in line
}

// join puts a new ticket at the end of key's line.
func (q *keyQueues) join(key string) *ticket {
	t := &ticket{turn: make(chan struct{})}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lines == nil {
		q.lines = make(map[string][]*ticket)
	}
	line := append(q.lines[key], t)
	q.lines[key] = line
	if len(line) == 1 {
		close(t.turn)
	}
	return t
}

// leave removes t from key's line; when t was first, the next ticket's
// turn begins.
func (q *keyQueues) leave(key string, t *ticket) {
	q.mu.Lock()
	defer q.mu.Unlock()
	line := q.lines[key]
	for i, x := range line {
		if x != t {
			continue
		}
		copy(line[i:], line[i+1:])
		line[len(line)-1] = nil
		line = line[:len(line)-1]
		if len(line) == 0 {
			delete(q.lines, key)
			return
		}
		q.lines[key] = line
		if i == 0 {
			close(line[0].turn)
		}
		return
	}
}

// waiting reports how many waiters of this handle are lined up on key.
func (q *keyQueues) waiting(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.lines[key])
}
