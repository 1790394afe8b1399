package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// check reports a broken invariant of q.
func (q *fifo) check() error {
	holes := 0
	for i := range q.items {
		if q.items[i].owner == "" {
			holes++
		}
	}
	switch {
	case holes != q.holes:
		return fmt.Errorf("%d holes counted as %d", holes, q.holes)
	case len(q.items) > 0 && q.items[0].owner == "":
		return fmt.Errorf("a hole at the head")
	case len(q.items) > 0 && q.items[len(q.items)-1].owner == "":
		return fmt.Errorf("a hole at the tail")
	case q.at == nil && len(q.items) >= indexAt:
		return fmt.Errorf("%d items and no index", len(q.items))
	}
	if q.at != nil {
		if len(q.at) != q.len() {
			return fmt.Errorf("index of %d owners for %d waiters", len(q.at), q.len())
		}
		for o, seq := range q.at {
			if i := seq - q.first; i < 0 || i >= int64(len(q.items)) || q.items[i].owner != o {
				return fmt.Errorf("index puts %q at %d", o, seq-q.first)
			}
		}
	}
	return nil
}

// The queue against a plain slice: random pushes, pops and removals from
// anywhere, through the index threshold and compactions both ways.
func TestFifo_AgainstASlice(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var q fifo
		var model []string
		next := 0
		for step := range 3000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(model) == 0:
				o := fmt.Sprintf("o%d", next)
				next++
				q.push(waiter{owner: o})
				model = append(model, o)
			case r < 7:
				if w := q.pop(); w.owner != model[0] {
					t.Fatalf("seed %d step %d: pop %q, want %q", seed, step, w.owner, model[0])
				}
				model = model[1:]
			default:
				i := rng.IntN(len(model))
				at := q.find(model[i])
				if at < 0 || q.item(at).owner != model[i] {
					t.Fatalf("seed %d step %d: find %q = %d", seed, step, model[i], at)
				}
				q.removeAt(at)
				model = slices.Delete(model, i, i+1)
			}
			if err := q.check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			var got []string
			for w := range q.all() {
				got = append(got, w.owner)
			}
			if !slices.Equal(got, model) || q.len() != len(model) {
				t.Fatalf("seed %d step %d: queue %v (len %d), want %v", seed, step, got, q.len(), model)
			}
			if len(model) > 0 && q.head().owner != model[0] {
				t.Fatalf("seed %d step %d: head %q, want %q", seed, step, q.head().owner, model[0])
			}
			if q.find(fmt.Sprintf("o%d", next)) >= 0 || q.find("") >= 0 {
				t.Fatalf("seed %d step %d: found an owner that never queued", seed, step)
			}
		}
	}
}
