//go:build unix

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// locks shows who waits for whom, as GET /v1/locks does: A holds k1 and
// waits for k2, B holds k2 and waits for k1, on one SQLite file; the
// table, the JSON and --holder all show the two waits and flag their
// cycle.
func TestLocks_ShowsTheWaitForEdges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	cfg := lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: path}}
	open := func(holder string) *lock.Manager {
		c := cfg
		c.Holder = holder
		m, err := lock.Open(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	mA, mB := open("A"), open("B")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// A wait that ends before the test does is an answer to report, not
	// a waiter that silently is no longer there.
	var ended sync.Map // holder → the error its Block returned
	parties := []struct {
		m          *lock.Manager
		held, want string
	}{{mA, "k1", "k2"}, {mB, "k2", "k1"}}
	// Both keys are held before either wait starts: a wait started
	// earlier could find the other key still free, take it and end.
	for _, h := range parties {
		l := h.m.Make(h.held, time.Minute)
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			t.Fatalf("Acquire %s: %v %v", h.held, ok, err)
		}
		t.Cleanup(func() { _ = l.Release(context.Background()) })
	}
	for _, h := range parties {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := h.m.Block(ctx, h.want, time.Minute, func(context.Context, *lock.Lock) error { return nil }, lock.WithTimeout(time.Minute))
			if ctx.Err() == nil {
				ended.Store(h.held, err)
			}
		}()
	}
	args := []string{"locks", "--driver", "sqlite", "--sqlite-path", path}
	var out string
	if !poll.Wait(20*time.Second, func() bool {
		_, out, _ = runCLI(t, nil, args...)
		return strings.Contains(out, "wait cycle:")
	}) {
		ended.Range(func(held, err any) bool {
			t.Logf("the holder of %v stopped waiting: %v", held, err)
			return true
		})
		t.Fatalf("locks never showed the wait cycle:\n%s", out)
	}
	for _, want := range []string{"WAITER", `A       B          "k2"  cycle`, `B       A          "k1"  cycle`, "wait cycle: A <-> B"} {
		if !strings.Contains(out, want) {
			t.Errorf("locks lacks %q:\n%s", want, out)
		}
	}
	code, js, stderr := runCLI(t, nil, append(args, "-o", "json", "--holder", "A")...)
	var list api.LockList
	if err := json.Unmarshal([]byte(js), &list); code != 0 || err != nil {
		t.Fatalf("locks -o json: %d %v %s", code, err, stderr)
	}
	want := []api.WaitEdge{{From: "A", To: "B", Key: "k2", InCycle: true}, {From: "B", To: "A", Key: "k1", InCycle: true}}
	if len(list.Locks) != 2 || len(list.Edges) != 2 || list.Edges[0] != want[0] || list.Edges[1] != want[1] ||
		len(list.Cycles) != 1 || strings.Join(list.Cycles[0], ",") != "A,B" {
		t.Errorf("locks -o json --holder A = %s, want k1 and k2, the edges %+v and the cycle [A B]", js, want)
	}
}
