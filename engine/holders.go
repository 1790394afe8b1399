package engine

import "slices"

// holder is one grant: a mutex's, a semaphore's slot, a read or a write.
// Every grant in the table is one, whatever its kind.
type holder struct {
	owner    string
	fence    uint64
	deadline int64
}

func (h *holder) grant(key string) Grant {
	return Grant{Key: key, Owner: h.owner, Fence: h.fence, Deadline: h.deadline}
}

// An entry's grants are a min-heap by (deadline, fence) whose root, the
// grant that ends first, is the entry's own first field, and whose other
// grants are in its queue's rest: a mutex (one grant) needs nothing
// beyond its 64-byte entry, the entry's deadline is its root's, and the
// holder a refused acquire is told of is at hand. Index i is a position
// in that heap (0: first, i: rest[i-1]); a long set keeps an index by
// owner. Finding, adding, ending or refreshing one grant costs O(log n)
// and ending the due ones O(k log n), so an operation on a key never
// scans all of its holders (BenchmarkSharedKeyAtTheCap).

// holders is the number of grants of e.
func (e *entry) holders() int {
	switch {
	case e.first.owner == "":
		return 0
	case e.queue == nil:
		return 1
	}
	return 1 + len(e.queue.rest)
}

// holder is e's i-th grant in heap order, as findHolder returns it.
func (e *entry) holder(i int) *holder {
	if i == 0 {
		return &e.first
	}
	return &e.queue.rest[i-1]
}

// findHolder is owner's index, or -1.
func (e *entry) findHolder(owner string) int {
	if e.first.owner == owner {
		return 0
	}
	q := e.queue
	if q == nil {
		return -1
	}
	if q.at != nil {
		if i, ok := q.at[owner]; ok {
			return i
		}
		return -1
	}
	for i := range q.rest {
		if q.rest[i].owner == owner {
			return i + 1
		}
	}
	return -1
}

// addHolder inserts h; its owner must not hold e already. A second grant
// needs e's queue, which a name that can have several holders has.
func (e *entry) addHolder(h holder) {
	if e.first.owner == "" {
		e.first = h
		return
	}
	q := e.queue
	q.rest = append(q.rest, h)
	i := len(q.rest)
	switch {
	case q.at != nil:
		q.at[h.owner] = i
	case i+1 >= indexAt:
		q.at = make(map[string]int, i+1)
		for j := 0; j <= i; j++ {
			q.at[e.holder(j).owner] = j
		}
	}
	e.upHolder(i)
}

// removeHolder ends the i-th grant.
func (e *entry) removeHolder(i int) {
	last := e.holders() - 1
	if i != last {
		e.swapHolders(i, last)
	}
	q := e.queue
	if q != nil && q.at != nil {
		delete(q.at, e.holder(last).owner)
	}
	if last == 0 {
		e.first = holder{}
	} else {
		q.rest[last-1] = holder{}
		q.rest = q.rest[:last-1]
	}
	if i < last {
		e.fixHolder(i)
	}
	if q != nil && len(q.rest) == 0 {
		q.at = nil
	}
}

// fixHolder restores the order after the i-th grant's deadline changed.
func (e *entry) fixHolder(i int) {
	if !e.downHolder(i) {
		e.upHolder(i)
	}
}

// endDue ends every grant whose deadline is <= now and reports how many.
func (e *entry) endDue(now int64) int {
	n := 0
	for e.first.owner != "" && e.first.deadline <= now {
		e.removeHolder(0)
		n++
	}
	return n
}

// clearHolders ends every grant and reports how many there were.
func (e *entry) clearHolders() int {
	n := e.holders()
	e.first = holder{}
	if q := e.queue; q != nil {
		clear(q.rest)
		q.rest, q.at = q.rest[:0], nil
	}
	return n
}

// dueHolders appends the grants whose deadline is <= now, by deadline
// then fence. It visits only those and their children in the heap.
func (e *entry) dueHolders(now int64, out []Grant) []Grant {
	start, n := len(out), e.holders()
	var walk func(i int)
	walk = func(i int) {
		if i >= n || e.holder(i).deadline > now {
			return
		}
		out = append(out, e.holder(i).grant(e.key))
		walk(2*i + 1)
		walk(2*i + 2)
	}
	walk(0)
	slices.SortFunc(out[start:], func(a, b Grant) int {
		if a.Deadline != b.Deadline {
			if a.Deadline < b.Deadline {
				return -1
			}
			return 1
		}
		return cmpFence(a.Fence, b.Fence)
	})
	return out
}

// byFence returns a copy of the grants in fence order: the order a Get
// lists them and a snapshot writes them.
func (e *entry) byFence() []holder {
	out := make([]holder, e.holders())
	for i := range out {
		out[i] = *e.holder(i)
	}
	slices.SortFunc(out, func(a, b holder) int { return cmpFence(a.fence, b.fence) })
	return out
}

func cmpFence(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lessHolder orders the heap: earliest deadline first, then lowest fence.
func (e *entry) lessHolder(i, j int) bool {
	a, b := e.holder(i), e.holder(j)
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	return a.fence < b.fence
}

func (e *entry) swapHolders(i, j int) {
	a, b := e.holder(i), e.holder(j)
	*a, *b = *b, *a
	if at := e.queue.at; at != nil {
		at[a.owner], at[b.owner] = i, j
	}
}

func (e *entry) upHolder(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !e.lessHolder(i, p) {
			return
		}
		e.swapHolders(i, p)
		i = p
	}
}

// downHolder sifts the i-th grant down and reports whether it moved.
func (e *entry) downHolder(i int) bool {
	start, n := i, e.holders()
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && e.lessHolder(r, l) {
			m = r
		}
		if !e.lessHolder(m, i) {
			break
		}
		e.swapHolders(i, m)
		i = m
	}
	return i > start
}
