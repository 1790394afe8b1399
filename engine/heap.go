package engine

// The deadline heap: a binary min-heap of entries ordered by (deadline,
// key), each entry knowing its index so that a refresh or a release fixes
// or removes it in O(log n) and the heap never holds stale items.

func entryLess(a, b *entry) bool {
	if a.first.deadline != b.first.deadline {
		return a.first.deadline < b.first.deadline
	}
	return a.key < b.key
}

func (t *table) heapPush(e *entry) {
	e.hidx = len(t.heap)
	t.heap = append(t.heap, e)
	t.heapUp(e.hidx)
}

func (t *table) heapRemove(e *entry) {
	i := e.hidx
	last := len(t.heap) - 1
	if i != last {
		t.heapSwap(i, last)
	}
	t.heap[last] = nil
	t.heap = t.heap[:last]
	if i != last {
		if !t.heapDown(i) {
			t.heapUp(i)
		}
	}
	e.hidx = -1
}

func (t *table) heapFix(e *entry) {
	if !t.heapDown(e.hidx) {
		t.heapUp(e.hidx)
	}
}

func (t *table) heapSwap(i, j int) {
	h := t.heap
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}

func (t *table) heapUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !entryLess(t.heap[i], t.heap[p]) {
			return
		}
		t.heapSwap(i, p)
		i = p
	}
}

// heapDown sifts i down and reports whether it moved.
func (t *table) heapDown(i int) bool {
	start := i
	n := len(t.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && entryLess(t.heap[r], t.heap[l]) {
			m = r
		}
		if !entryLess(t.heap[m], t.heap[i]) {
			break
		}
		t.heapSwap(i, m)
		i = m
	}
	return i > start
}

func siftUpInts(h []int, i int, less func(a, b int) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDownInts(h []int, i int, less func(a, b int) bool) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
