package engine

import "slices"

// holderSet is a shared name's grants: a min-heap by (deadline, fence), so
// the grant that ends first — the name's deadline, and the holder a
// refused acquire is told of — is at the root, with an index by owner
// once the set is long. Finding, adding, ending or refreshing one holder
// costs O(log n) and ending the due ones O(k log n), so an operation on a
// key never scans all of its holders (BenchmarkSharedKeyAtTheCap).
type holderSet struct {
	h  []holder
	at map[string]int // owner → index in h; nil while the set is short
}

// less orders the heap: earliest deadline first, then lowest fence.
func (s *holderSet) less(i, j int) bool {
	a, b := &s.h[i], &s.h[j]
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	return a.fence < b.fence
}

func (s *holderSet) len() int { return len(s.h) }

// first is the holder whose grant ends first; the set must not be empty.
func (s *holderSet) first() *holder { return &s.h[0] }

// item is the i-th holder in heap order, as find returns it.
func (s *holderSet) item(i int) *holder { return &s.h[i] }

// find is owner's index, or -1.
func (s *holderSet) find(owner string) int {
	if s.at != nil {
		if i, ok := s.at[owner]; ok {
			return i
		}
		return -1
	}
	for i := range s.h {
		if s.h[i].owner == owner {
			return i
		}
	}
	return -1
}

// add inserts h; its owner must not hold already.
func (s *holderSet) add(h holder) {
	s.h = append(s.h, h)
	i := len(s.h) - 1
	switch {
	case s.at != nil:
		s.at[h.owner] = i
	case len(s.h) >= indexAt:
		s.at = make(map[string]int, len(s.h))
		for j := range s.h {
			s.at[s.h[j].owner] = j
		}
	}
	s.up(i)
}

// removeAt ends the i-th holder.
func (s *holderSet) removeAt(i int) holder {
	gone := s.h[i]
	last := len(s.h) - 1
	if i != last {
		s.swap(i, last)
	}
	s.h[last] = holder{}
	s.h = s.h[:last]
	if s.at != nil {
		delete(s.at, gone.owner)
	}
	if i < len(s.h) {
		s.fix(i)
	}
	if len(s.h) == 0 {
		s.h, s.at = s.h[:0], nil
	}
	return gone
}

// fix restores the order after the i-th holder's deadline changed.
func (s *holderSet) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}

// endDue ends every holder whose deadline is <= now and reports how many.
func (s *holderSet) endDue(now int64) int {
	n := 0
	for len(s.h) > 0 && s.h[0].deadline <= now {
		s.removeAt(0)
		n++
	}
	return n
}

// clear ends every holder.
func (s *holderSet) clear() {
	clear(s.h)
	s.h, s.at = s.h[:0], nil
}

// due appends the holders whose deadline is <= now, by deadline then
// fence. It visits only those and their children in the heap.
func (s *holderSet) due(now int64, key string, out []Grant) []Grant {
	start := len(out)
	var walk func(i int)
	walk = func(i int) {
		if i >= len(s.h) || s.h[i].deadline > now {
			return
		}
		out = append(out, s.h[i].grant(key))
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

// byFence returns a copy of the holders in fence order: the order a Get
// lists them and a snapshot writes them.
func (s *holderSet) byFence() []holder {
	out := slices.Clone(s.h)
	slices.SortFunc(out, func(a, b holder) int { return cmpFence(a.fence, b.fence) })
	return out
}

func (s *holderSet) swap(i, j int) {
	s.h[i], s.h[j] = s.h[j], s.h[i]
	if s.at != nil {
		s.at[s.h[i].owner] = i
		s.at[s.h[j].owner] = j
	}
}

func (s *holderSet) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

// down sifts the i-th holder down and reports whether it moved.
func (s *holderSet) down(i int) bool {
	start := i
	for {
		l := 2*i + 1
		if l >= len(s.h) {
			break
		}
		m := l
		if r := l + 1; r < len(s.h) && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s.swap(i, m)
		i = m
	}
	return i > start
}
