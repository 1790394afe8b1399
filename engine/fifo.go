package engine

import "iter"

// indexAt is the queue length from which a queue keeps an index of its
// owners. A shorter queue is scanned, which costs less than the map.
const indexAt = 16

// fifo is a key's waiters in arrival order. Adding at the tail, taking
// the head, finding an owner and removing a waiter from anywhere are all
// O(1) (amortised), so a hand-off or a cancel costs the same behind ten
// thousand waiters as behind eight (BenchmarkScaleWaiters).
//
// A waiter removed from the middle leaves a hole (owner "", which no
// owner is) until holes make up half the slice, when the slice is
// compacted. The head and the tail are never holes.
type fifo struct {
	items []waiter
	holes int
	first int64            // sequence number of items[0]; items[i] is first+i
	at    map[string]int64 // owner → sequence number; nil while the queue is short
}

// len is the number of waiters.
func (q *fifo) len() int { return len(q.items) - q.holes }

// head is the first waiter, nil when none waits. It stays valid until the
// queue changes.
func (q *fifo) head() *waiter {
	if len(q.items) == 0 {
		return nil
	}
	return &q.items[0]
}

// push adds w at the tail.
func (q *fifo) push(w waiter) {
	q.items = append(q.items, w)
	switch {
	case q.at != nil:
		q.at[w.owner] = q.first + int64(len(q.items)-1)
	case len(q.items) >= indexAt:
		q.index()
	}
}

// pop takes the head; the queue must not be empty.
func (q *fifo) pop() waiter {
	w := q.items[0]
	q.removeAt(0)
	return w
}

// find is owner's index in items, or -1.
func (q *fifo) find(owner string) int {
	if owner == "" {
		return -1
	}
	if q.at != nil {
		seq, ok := q.at[owner]
		if !ok {
			return -1
		}
		return int(seq - q.first)
	}
	for i := range q.items {
		if q.items[i].owner == owner {
			return i
		}
	}
	return -1
}

// item is the waiter at index i, as find returns it.
func (q *fifo) item(i int) *waiter { return &q.items[i] }

// removeAt removes the waiter at index i.
func (q *fifo) removeAt(i int) {
	if q.at != nil {
		delete(q.at, q.items[i].owner)
	}
	q.items[i] = waiter{}
	q.holes++
	// The ends never stay holes: the head is read as the next waiter, and
	// a hole at the tail would only wait for compaction.
	for len(q.items) > 0 && q.items[0].owner == "" {
		q.dropHead()
		q.holes--
	}
	for n := len(q.items); n > 0 && q.items[n-1].owner == ""; n-- {
		q.items = q.items[:n-1]
		q.holes--
	}
	if len(q.items) == 0 {
		q.items, q.first, q.at = nil, 0, nil
		return
	}
	if q.holes > indexAt && 2*q.holes > len(q.items) {
		q.compact()
	}
}

// dropHead removes items[0]. A short queue (no index) moves the rest
// down, at most indexAt items, and keeps its slice's room; a long one
// steps past it, so a hand-off never moves the whole queue.
func (q *fifo) dropHead() {
	if q.at == nil {
		n := copy(q.items, q.items[1:])
		q.items[n] = waiter{}
		q.items = q.items[:n]
		return
	}
	q.items[0] = waiter{}
	q.items = q.items[1:]
	q.first++
}

// compact drops the holes and numbers the waiters from 0 again.
func (q *fifo) compact() {
	live := make([]waiter, 0, q.len())
	for i := range q.items {
		if q.items[i].owner != "" {
			live = append(live, q.items[i])
		}
	}
	q.items, q.holes, q.first, q.at = live, 0, 0, nil
	if len(live) >= indexAt {
		q.index()
	}
}

// index builds the owner index from items.
func (q *fifo) index() {
	q.at = make(map[string]int64, len(q.items))
	for i := range q.items {
		if o := q.items[i].owner; o != "" {
			q.at[o] = q.first + int64(i)
		}
	}
}

// all yields every waiter in order; the caller may change a waiter's tag
// but not the queue.
func (q *fifo) all() iter.Seq[*waiter] {
	return func(yield func(*waiter) bool) {
		for i := range q.items {
			if q.items[i].owner != "" && !yield(&q.items[i]) {
				return
			}
		}
	}
}
