package engine

import (
	"slices"
	"strings"
)

// firstKeys returns, sorted, the limit smallest keys of entries that start
// with prefix (every such key when limit <= 0).
//
// A list runs on the loop, which serves nothing else meanwhile, and the
// API always names a limit (at most 10,000). Sorting every matching key
// made a list of a 100,000-key prefix hold the loop for tens of
// milliseconds; keeping only the limit smallest in a bounded max-heap
// costs one comparison for most keys, and a sort of limit keys.
func firstKeys(entries []*entry, prefix string, limit int) []string {
	if limit <= 0 {
		var keys []string
		for _, e := range entries {
			if strings.HasPrefix(e.key, prefix) {
				keys = append(keys, e.key)
			}
		}
		slices.Sort(keys)
		return keys
	}
	top := make([]string, 0, min(limit, len(entries))) // a max-heap: top[0] is the largest kept
	for _, e := range entries {
		k := e.key
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		switch {
		case len(top) < limit:
			top = append(top, k)
			siftUp(top, len(top)-1)
		case k < top[0]:
			top[0] = k
			siftDown(top, 0)
		}
	}
	slices.Sort(top)
	return top
}

func siftUp(h []string, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p] >= h[i] {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []string, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		big := l
		if r := l + 1; r < len(h) && h[r] > h[l] {
			big = r
		}
		if h[i] >= h[big] {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}
