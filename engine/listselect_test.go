package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// firstKeys gives what sorting every matching key and cutting at limit
// gives, for prefixes that match all, some or none of the keys, and
// limits below, at and above their number.
func TestFirstKeys_IsTheSortedPrefixCutAtLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := r.IntN(300)
		entries := make([]*entry, n)
		for i := range entries {
			entries[i] = &entry{key: fmt.Sprintf("%c/%d", 'a'+r.IntN(3), r.IntN(1000))}
		}
		for _, prefix := range []string{"", "a/", "b/1", "z"} {
			var want []string
			for _, e := range entries {
				if strings.HasPrefix(e.key, prefix) {
					want = append(want, e.key)
				}
			}
			slices.Sort(want)
			for _, limit := range []int{0, 1, 7, len(want), len(want) + 3} {
				got := firstKeys(entries, prefix, limit)
				w := want
				if limit > 0 && limit < len(w) {
					w = w[:limit]
				}
				if !slices.Equal(got, w) {
					t.Fatalf("round %d, prefix %q, limit %d: %v; want %v", round, prefix, limit, got, w)
				}
			}
		}
	}
}
