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
// itself, and none will be let in while all of them hold on.
type WaitEdge struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Key     string `json:"key"`
	InCycle bool   `json:"in_cycle,omitempty"`
}

// WaitsFor is who waits for whom across locks: one edge from each waiter
// of a key to each holder of it (sorted by From, To, Key; a party never
// waits for itself, and a party hidden from the caller, whose owner shows
// no holder and no token, is left out), and the cycles among them, each
// as its parties sorted (the strongly connected components of more than
// one party, sorted by their first party). GET /v1/locks and lockcluster
// locks both compute it with this function from the locks they list.
func WaitsFor(locks []Lock) (edges []WaitEdge, cycles [][]string) {
	seen := map[WaitEdge]bool{}
	for _, l := range locks {
		holders := []string{party(l.Owner, l.Holder)}
		if len(l.Holders) > 0 {
			holders = holders[:0]
			for _, h := range l.Holders {
				holders = append(holders, party(h.Owner, h.Holder))
			}
		}
		for _, q := range l.Queue {
			from := party(q.Owner, q.Holder)
			for _, to := range holders {
				e := WaitEdge{From: from, To: to, Key: l.Key}
				if from == "" || to == "" || from == to || seen[e] {
					continue
				}
				seen[e] = true
				edges = append(edges, e)
			}
		}
	}
	slices.SortFunc(edges, func(a, b WaitEdge) int {
		return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To), strings.Compare(a.Key, b.Key))
	})
	comp := components(edges)
	members := map[int][]string{}
	for p, c := range comp {
		members[c] = append(members[c], p)
	}
	for _, ps := range members {
		if len(ps) > 1 {
			slices.Sort(ps)
			cycles = append(cycles, ps)
		}
	}
	slices.SortFunc(cycles, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	for i, e := range edges {
		edges[i].InCycle = comp[e.From] == comp[e.To]
	}
	return edges, cycles
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
	edges, cycles := WaitsFor(locks)
	if holder == "" {
		return LockList{Locks: locks, Truncated: truncated, Edges: edges, Cycles: cycles}
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
	return LockList{Locks: out, Truncated: truncated, Edges: es, Cycles: cs}
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
