package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkList is the engine loop's time for one list of a table of
// 100,000 held keys, all under the prefix asked, at the API's default
// limit (1,000) and its largest (10,000): the loop serves nothing else
// meanwhile.
//
//	go test -run '^$' -bench BenchmarkList -benchtime 200x ./engine/
func BenchmarkList(b *testing.B) {
	e, err := New(Config{MaxKeys: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	const keys = 100_000
	for i := range keys {
		if _, ok, err := e.acquireOne(b.Context(), fmt.Sprintf("jobs/%08d", (i*7919)%keys), "o", time.Hour); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	for _, limit := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				infos, err := e.List(b.Context(), "jobs/", limit)
				if err != nil || len(infos) != limit || infos[0].Key != "jobs/00000000" {
					b.Fatalf("List = %d infos, %v", len(infos), err)
				}
			}
		})
	}
}

// BenchmarkListSelect compares, in one run, the choice of a list's keys
// out of 100,000 matching ones: firstKeys (a bounded heap of the limit
// smallest) beside the sort of every matching key it replaced.
//
//	go test -run '^$' -bench BenchmarkListSelect -benchtime 50x ./engine/
func BenchmarkListSelect(b *testing.B) {
	const keys = 100_000
	entries := make([]*entry, keys)
	for i := range entries {
		entries[i] = &entry{key: fmt.Sprintf("jobs/%08d", (i*7919)%keys)}
	}
	sortAll := func(prefix string, limit int) []string {
		var ks []string
		for _, e := range entries {
			if strings.HasPrefix(e.key, prefix) {
				ks = append(ks, e.key)
			}
		}
		slices.Sort(ks)
		return ks[:min(limit, len(ks))]
	}
	for _, limit := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("firstKeys/limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				if ks := firstKeys(entries, "jobs/", limit); len(ks) != limit || ks[0] != "jobs/00000000" {
					b.Fatal(len(ks))
				}
			}
		})
		b.Run(fmt.Sprintf("sortAll/limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				if ks := sortAll("jobs/", limit); len(ks) != limit || ks[0] != "jobs/00000000" {
					b.Fatal(len(ks))
				}
			}
		})
	}
}
