package api

import (
	"cmp"
	"slices"
	"strings"
)

// WaitEdge says that From waits for To: From is queued for Key, which
// To holds. From and To are parties: the holder an owner names (the
// description after its token, Lock.Holder), or the owner itself when it
// names none, so that a process holding one key through one lock and
// waiting for another through a second is one party. InCycle marks an
// edge on a cycle: each party on it waits, through the others, for
// itself, and none will be let in while all of them hold on (a semaphore
// whose holder outside the cycle frees a slot makes no cycle).
type WaitEdge struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Key     string `json:"key"`
	InCycle bool   `json:"in_cycle,omitempty"`
}

// MaxWaitEdges is the most wait-for edges WaitsFor gives. A key's edges
// are its holders times its waiters, so a credential that fills a
// semaphore of 1,000 slots and queues 1,000 behind it would make a million
// edges (about 1.7 s of CPU and tens of MB on every listing and every
// render of the lock page). Ten thousand is an answer of about a megabyte
// and a few milliseconds, more rows than an operator reads, and still
// every edge of any table without such a key.
const MaxWaitEdges = 10_000

// WaitsFor is who waits for whom across locks: one edge from each waiter
// of a key to each holder of it (sorted by From, To, Key; a party never
// waits for itself, and a party hidden from the caller, whose owner shows
// no holder and no token, is left out), and the cycles among them, each
// as its parties sorted (the strongly connected components of more than
// one party, sorted by their first party; through a semaphore, only of
// the parties no release lets in, stuckParties). GET /v1/locks and lockcluster
// locks both compute it with this function from the locks they list.
//
// It gives at most MaxWaitEdges edges, and truncated is true when there
// were more: the waiters are taken by their place in their queue, the
// first of every key, then the second of every key, and so on, so one
// long queue does not hide the heads of the others; the cycles are those
// among the edges kept. The same locks give the same edges.
func WaitsFor(locks []Lock) (edges []WaitEdge, cycles [][]string, truncated bool) {
	holders := make([][]string, len(locks))
	var queued []int // the locks with a waiter at the place looked at
	for i, l := range locks {
		holders[i] = holderParties(l)
		if len(l.Queue) > 0 {
			queued = append(queued, i)
		}
	}
	seen := map[WaitEdge]bool{}
places:
	for at := 0; len(queued) > 0; at++ {
		more := queued[:0]
		for _, i := range queued {
			l := &locks[i]
			from := party(l.Queue[at].Owner, l.Queue[at].Holder)
			for _, to := range holders[i] {
				e := WaitEdge{From: from, To: to, Key: l.Key}
				if from == "" || to == "" || from == to || seen[e] {
					continue
				}
				if len(edges) == MaxWaitEdges {
					truncated = true
					break places
				}
				seen[e] = true
				edges = append(edges, e)
			}
			if at+1 < len(l.Queue) {
				more = append(more, i)
			}
		}
		queued = more
	}
	slices.SortFunc(edges, func(a, b WaitEdge) int {
		return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To), strings.Compare(a.Key, b.Key))
	})
	comp := components(edges)
	members := map[int][]string{}
	for p, c := range comp {
		members[c] = append(members[c], p)
	}
	if len(members) < len(comp) && slices.ContainsFunc(locks, func(l Lock) bool { return l.Kind == KindSemaphore }) {
		// A cycle through a semaphore may be no deadlock: keep the
		// cycles among the parties that stay stuck.
		stuck := stuckParties(locks)
		var among []WaitEdge
		for _, e := range edges {
			if stuck[e.From] && stuck[e.To] {
				among = append(among, e)
			}
		}
		comp, members = components(among), map[int][]string{}
		for p, c := range comp {
			members[c] = append(members[c], p)
		}
	}
	for _, ps := range members {
		if len(ps) > 1 {
			slices.Sort(ps)
			cycles = append(cycles, ps)
		}
	}
	slices.SortFunc(cycles, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	for i, e := range edges {
		from, ok1 := comp[e.From]
		to, ok2 := comp[e.To]
		edges[i].InCycle = ok1 && ok2 && from == to
	}
	return edges, cycles, truncated
}

// stuckParties is the parties that no order of releases lets in: a party
// that waits for nothing goes on and releases what it holds; a waiter of
// a mutex or a read/write key needs every other holder of it to go on,
// but a semaphore's waiter needs only a free slot when its turn in the
// queue comes, which any one holder going on frees. Without semaphores
// every party on a cycle of edges is stuck, and WaitsFor does not ask.
// A party that waits for several keys is stuck while any of them stays
// shut, and a party hidden from the caller ("") is taken to go on.
func stuckParties(locks []Lock) map[string]bool {
	shut := map[string]int{}       // a party's waits not let in yet
	involved := map[string][]int{} // the locks a party holds or waits for
	open := make([][]bool, len(locks))
	holders := make([][]string, len(locks))
	for i, l := range locks {
		open[i] = make([]bool, len(l.Queue))
		holders[i] = holderParties(l)
		for _, p := range holders[i] {
			involved[p] = append(involved[p], i)
		}
		for _, q := range l.Queue {
			if p := party(q.Owner, q.Holder); p != "" {
				shut[p]++
				involved[p] = append(involved[p], i)
			}
		}
	}
	goesOn := func(p string) bool { return shut[p] == 0 } // "" included
	var gone []string                                     // parties that go on, whose locks to look at again
	// look lets in the waiters of lock i that can be now; a wait let in
	// stays so, since parties only ever go on.
	look := func(i int) {
		l := &locks[i]
		slots := max(0, int(l.Limit)-len(holders[i]))
		for _, h := range holders[i] {
			if goesOn(h) {
				slots++
			}
		}
		for j, q := range l.Queue {
			p := party(q.Owner, q.Holder)
			in := open[i][j]
			if l.Kind == KindSemaphore {
				if slots == 0 {
					return
				}
				in = true
				if !goesOn(p) {
					slots-- // let in, and holds on to its slot
				}
			} else if !in {
				in = !slices.ContainsFunc(holders[i], func(h string) bool { return h != p && !goesOn(h) })
			}
			if in && !open[i][j] {
				open[i][j] = true
				if p != "" {
					if shut[p]--; shut[p] == 0 {
						gone = append(gone, p)
					}
				}
			}
		}
	}
	for i := range locks {
		look(i)
	}
	for len(gone) > 0 {
		p := gone[len(gone)-1]
		gone = gone[:len(gone)-1]
		for _, i := range involved[p] {
			look(i)
		}
	}
	stuck := map[string]bool{}
	for p, n := range shut {
		if n > 0 {
			stuck[p] = true
		}
	}
	return stuck
}

// holderParties is the parties that hold l: a shared key's holders, or
// its one holder.
func holderParties(l Lock) []string {
	if len(l.Holders) == 0 {
		return []string{party(l.Owner, l.Holder)}
	}
	out := make([]string, len(l.Holders))
	for i, h := range l.Holders {
		out[i] = party(h.Owner, h.Holder)
	}
	return out
}

// party is who an owner is in the wait-for graph: its holder, else the
// owner itself; "" when the caller sees neither.
func party(owner, holder string) string {
	if holder != "" {
		return holder
	}
	if strings.Trim(owner, "0:") == "" {
		return "" // a hidden token with no holder after it
	}
	return owner
}

// components numbers the strongly connected components of the graph of
// edges (sorted by From), by Tarjan's algorithm: two parties have the
// same number exactly when each reaches the other.
func components(edges []WaitEdge) map[string]int {
	next := map[string][]string{}
	var nodes []string
	for _, e := range edges {
		if _, ok := next[e.From]; !ok {
			nodes = append(nodes, e.From)
		}
		next[e.From] = append(next[e.From], e.To)
	}
	for _, e := range edges {
		if _, ok := next[e.To]; !ok {
			next[e.To] = nil
			nodes = append(nodes, e.To)
		}
	}
	t := tarjan{next: next, index: map[string]int{}, low: map[string]int{}, onStack: map[string]bool{}, comp: map[string]int{}}
	for _, n := range nodes {
		if _, done := t.index[n]; !done {
			t.visit(n)
		}
	}
	return t.comp
}

type tarjan struct {
	next            map[string][]string
	index, low      map[string]int
	onStack         map[string]bool
	stack           []string
	counter, ncomps int
	comp            map[string]int
}

// visit is Tarjan's strongconnect. Its recursion is as deep as the
// longest path of waits, at most the parties of one listing.
func (t *tarjan) visit(v string) {
	t.index[v], t.low[v] = t.counter, t.counter
	t.counter++
	t.stack = append(t.stack, v)
	t.onStack[v] = true
	for _, w := range t.next[v] {
		if _, done := t.index[w]; !done {
			t.visit(w)
			t.low[v] = min(t.low[v], t.low[w])
		} else if t.onStack[w] {
			t.low[v] = min(t.low[v], t.index[w])
		}
	}
	if t.low[v] != t.index[v] {
		return
	}
	for {
		w := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.onStack[w] = false
		t.comp[w] = t.ncomps
		if w == v {
			break
		}
	}
	t.ncomps++
}

// ListOf is the answer of GET /v1/locks for locks: with holder set, only
// the locks that party holds or waits for (a substring of its holder or
// owner), and the wait-for edges and cycles of every lock of locks, with
// holder set only the edges of the locks kept and the cycles they are on.
func ListOf(locks []Lock, truncated bool, holder string) LockList {
	edges, cycles, cut := WaitsFor(locks)
	if holder == "" {
		return LockList{Locks: locks, Truncated: truncated, Edges: edges, EdgesTruncated: cut, Cycles: cycles}
	}
	kept := map[string]bool{}
	var out []Lock
	for _, l := range locks {
		if involves(l, holder) {
			out = append(out, l)
			kept[l.Key] = true
		}
	}
	var es []WaitEdge
	onKept := map[string]bool{}
	for _, e := range edges {
		if kept[e.Key] {
			es = append(es, e)
			if e.InCycle {
				onKept[e.From], onKept[e.To] = true, true
			}
		}
	}
	var cs [][]string
	for _, c := range cycles {
		if slices.ContainsFunc(c, func(p string) bool { return onKept[p] }) {
			cs = append(cs, c)
		}
	}
	return LockList{Locks: out, Truncated: truncated, Edges: es, EdgesTruncated: cut, Cycles: cs}
}

// involves reports whether a holder or waiter of l names holder.
func involves(l Lock, holder string) bool {
	has := func(owner, h string) bool { return strings.Contains(h, holder) || strings.Contains(owner, holder) }
	if has(l.Owner, l.Holder) {
		return true
	}
	for _, h := range l.Holders {
		if has(h.Owner, h.Holder) {
			return true
		}
	}
	for _, q := range l.Queue {
		if has(q.Owner, q.Holder) {
			return true
		}
	}
	return false
}
