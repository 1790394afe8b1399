package integration

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// The checker proves three properties of a recorded history, per key.
// Every operation has a start and an end on the host's monotonic clock;
// a change it makes takes effect at one instant of the server inside
// [start, end] — or, for an operation that ended in an error (unknown),
// at any instant after its start, or never.
//
// Time assumption: a lock's deadline is at least (send time of its last
// successful acquire/refresh) + TTL on the host's clock. That holds while
// no node's monotonic clock runs faster than the host's (nodes share the
// host here; a slower clock only makes locks last longer). A faster clock
// is a documented limit of the design and is not injected.
//
// Grants. An acquire that succeeded with fence f made owner o the holder
// of key with fence f: the grant (key, o, f). It was created at an
// instant in [created.lo, created.hi]: lo is the start of o's first
// acquire of key (an unknown attempt may have created it), hi the
// earliest end of a successful acquire that returned f.
//
// Belief. The holder believes it holds the grant until
// beliefEnd = max(start + ttl) over its successful acquires and extends
// of that grant, cut to the start of the first release it sent (a release
// sent is a lock given up, whatever its answer). An unknown acquire
// creates no belief: its sender does not think it holds the lock.
//
//  1. Fences follow real time. If grant A was surely created before grant
//     B (A.created.hi < B.created.lo), then A.fence < B.fence; and two
//     grants of one key never share a fence. Grants whose creation
//     intervals overlap may come in either order: ordering them by
//     completion alone would flag correct histories (an acquire that
//     completes late may have been granted first).
//  2. Never two holders. For grants A, B of one key with A.fence <
//     B.fence (B came later), B.created.hi must not be before A.beliefEnd:
//     B completed while A's holder still believed, with reason, that it
//     held the lock. (A refresh of A applied after B's grant would be a
//     double grant too; it shows the same way, since its start precedes
//     B's end.)
//     On a shared key the rule counts instead: B must not complete while
//     as many earlier grants as a semaphore's limit are believed held
//     (never more than N believed holders), nor a write grant while any
//     earlier grant is, nor a read grant while an earlier write grant is
//     (never a writer beside anyone).
//  3. Nothing acknowledged is lost. For reads made after a full stop and
//     restart at time r: a grant whose beliefEnd is after r (acknowledged,
//     not released, TTL not run out by the host clock; the cluster's time
//     does not run while it is down, so this bound is conservative) must
//     be what the read returns: same owner, same fence.
//
// slack absorbs the millisecond rounding of TTLs on the wire.
const slack = 5 * time.Millisecond

// violation is one broken property with the operations that show it.
type violation struct {
	rule string // "fence-order", "two-holders", "lost"
	key  string
	msg  string
	ops  []op
}

func (v violation) String() string {
	return fmt.Sprintf("%s on %s: %s\n%s", v.rule, v.key, v.msg, formatOps(v.ops))
}

// grant is one acknowledged grant and what its holder believed.
type grant struct {
	key, owner string
	fence      uint64
	createdLo  time.Duration
	createdHi  time.Duration
	beliefEnd  time.Duration
	ops        []op // the operations of this owner on this key
	// claim is how the grant holds a shared key (zero: a mutex).
	claim drivers.Claim
}

func (g *grant) String() string {
	return fmt.Sprintf("%s/%s fence %d", g.key, g.owner, g.fence)
}

// collectGrants finds every acknowledged grant, per key, sorted by fence.
func collectGrants(ops []op) map[string][]*grant {
	type ko struct{ key, owner string }
	byOwner := map[ko][]op{}
	for _, o := range ops {
		byOwner[ko{o.key, o.owner}] = append(byOwner[ko{o.key, o.owner}], o)
	}
	out := map[string][]*grant{}
	for k, list := range byOwner {
		slices.SortStableFunc(list, func(a, b op) int { return int(a.start - b.start) })
		firstAcquire := time.Duration(math.MaxInt64)
		for _, o := range list {
			if o.kind == opAcquire || o.kind == opWait {
				firstAcquire = min(firstAcquire, o.start)
			}
		}
		grants := map[uint64]*grant{}
		var current *grant // the grant the owner last learnt it holds
		for _, o := range list {
			isAcquire := o.kind == opAcquire || o.kind == opWait
			switch {
			case isAcquire && o.result == resOK:
				g := grants[o.fence]
				if g == nil {
					g = &grant{key: k.key, owner: k.owner, fence: o.fence,
						createdLo: firstAcquire, createdHi: o.end, claim: o.claim}
					grants[o.fence] = g
					out[k.key] = append(out[k.key], g)
				}
				g.createdHi = min(g.createdHi, o.end)
				g.beliefEnd = max(g.beliefEnd, o.start+o.ttl)
				current = g
			case o.kind == opExtend && o.result == resOK && current != nil:
				current.beliefEnd = max(current.beliefEnd, o.start+o.ttl)
			}
		}
		// A release sent gives up the owner's grants.
		for _, o := range list {
			if o.kind != opRelease {
				continue
			}
			// Owners are used for one acquisition each, so every grant
			// of this owner precedes its release.
			for _, g := range grants {
				g.beliefEnd = min(g.beliefEnd, o.start)
			}
			break
		}
		for _, g := range grants {
			g.ops = list
		}
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b *grant) int {
			switch {
			case a.fence < b.fence:
				return -1
			case a.fence > b.fence:
				return 1
			}
			return strings.Compare(a.owner, b.owner)
		})
	}
	return out
}

// checkHistory checks properties 1 and 2 on every key of ops.
func checkHistory(ops []op) []violation {
	var out []violation
	grants := collectGrants(ops)
	keys := make([]string, 0, len(grants))
	for k := range grants {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		out = append(out, checkFences(key, grants[key])...)
		out = append(out, checkExclusion(key, grants[key])...)
	}
	return out
}

// checkFences is property 1 for one key's grants.
func checkFences(key string, gs []*grant) []violation {
	var out []violation
	for i, a := range gs {
		for _, b := range gs[i+1:] {
			if a.fence == b.fence {
				out = append(out, violation{rule: "fence-order", key: key,
					msg: fmt.Sprintf("fence %d granted to %s and to %s", a.fence, a.owner, b.owner),
					ops: slices.Concat(a.ops, b.ops)})
				continue
			}
			// a.fence < b.fence here: b must not surely precede a.
			if b.createdHi < a.createdLo {
				out = append(out, violation{rule: "fence-order", key: key,
					msg: fmt.Sprintf("%v was created before %v (by %.3fs) but has the lower fence",
						b, a, (a.createdLo - b.createdHi).Seconds()),
					ops: slices.Concat(b.ops, a.ops)})
			}
		}
	}
	return out
}

// checkExclusion is property 2 for one key's grants.
func checkExclusion(key string, gs []*grant) []violation {
	if len(gs) > 0 && gs[0].claim.Kind != drivers.Mutex {
		return checkShared(key, gs)
	}
	var out []violation
	for i, a := range gs {
		for _, b := range gs[i+1:] {
			if b.fence == a.fence {
				continue // reported by checkFences
			}
			if b.createdHi+slack < a.beliefEnd {
				out = append(out, violation{rule: "two-holders", key: key,
					msg: fmt.Sprintf("%v was granted by %.3fs while %v was believed held until %.3fs",
						b, b.createdHi.Seconds(), a, a.beliefEnd.Seconds()),
					ops: slices.Concat(a.ops, b.ops)})
			}
		}
	}
	return out
}

// sharedGrants counts the acknowledged grants of shared keys in ops, by
// claim.
func sharedGrants(ops []op) map[string]int {
	out := map[string]int{}
	for _, gs := range collectGrants(ops) {
		for _, g := range gs {
			if g.claim.Kind != drivers.Mutex {
				out[g.claim.String()]++
			}
		}
	}
	return out
}

// checkShared is property 2 for a shared key's grants: for each grant B,
// the earlier grants still believed held when B completed must leave room
// for it.
func checkShared(key string, gs []*grant) []violation {
	var out []violation
	for j, b := range gs {
		var believed []*grant
		writer := false
		for _, a := range gs[:j] {
			if a.fence != b.fence && b.createdHi+slack < a.beliefEnd {
				believed = append(believed, a)
				writer = writer || a.claim.Write
			}
		}
		var why string
		switch {
		case b.claim.Kind == drivers.Semaphore && uint32(len(believed)) >= b.claim.Limit:
			why = fmt.Sprintf("%d holders believed beside it, limit %d", len(believed), b.claim.Limit)
		case b.claim.Kind == drivers.RWLock && b.claim.Write && len(believed) > 0:
			why = fmt.Sprintf("a writer beside %d believed holders", len(believed))
		case b.claim.Kind == drivers.RWLock && writer:
			why = "a reader beside a believed writer"
		default:
			continue
		}
		ops := slices.Clone(b.ops)
		for _, a := range believed {
			ops = append(ops, a.ops...)
		}
		out = append(out, violation{rule: "too-many-holders", key: key,
			msg: fmt.Sprintf("%v (%v) was granted by %.3fs: %s", b, b.claim, b.createdHi.Seconds(), why), ops: ops})
	}
	return out
}

// checkDurable is property 3: reads are gets made after a full restart;
// every grant of history believed held past a read's start must be what
// that read found. checked counts the grants that had to be found.
func checkDurable(history, reads []op) (out []violation, checked int) {
	grants := collectGrants(history)
	for _, r := range reads {
		if r.kind != opGet || r.result == resUnknown {
			continue
		}
		for _, g := range grants[r.key] {
			if g.beliefEnd <= r.start+slack {
				continue
			}
			checked++
			if r.result != resOK || r.holder != g.owner || r.fence != g.fence {
				out = append(out, violation{rule: "lost", key: r.key,
					msg: fmt.Sprintf("%v was held until at least %.3fs but the read at %.3fs after the restart found %s",
						g, g.beliefEnd.Seconds(), r.start.Seconds(), describeRead(r)),
					ops: append(slices.Clone(g.ops), r)})
			}
		}
	}
	return out, checked
}

func describeRead(r op) string {
	if r.result != resOK {
		return "the key free"
	}
	return fmt.Sprintf("holder %s fence %d", r.holder, r.fence)
}

// formatViolations renders violations for a test failure.
func formatViolations(vs []violation) string {
	var b strings.Builder
	for i, v := range vs {
		if i == 20 {
			fmt.Fprintf(&b, "... and %d more\n", len(vs)-i)
			break
		}
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	return b.String()
}
