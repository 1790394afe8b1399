package lock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock"
)

// Semaphore(n) lets up to n holders share a key: here at most two exports
// run at once, and a third caller waits for a slot. Each grant has its own
// fence.
func ExampleSemaphore() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	first := m.Make("exports", time.Minute, lock.Semaphore(2))
	second := m.Make("exports", time.Minute, lock.Semaphore(2))
	third := m.Make("exports", time.Minute, lock.Semaphore(2))
	for _, l := range []*lock.Lock{first, second} {
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			panic("no slot")
		}
	}
	ok, _ := third.Acquire(ctx)
	fmt.Println("third gets a slot at once:", ok)

	_ = first.Release(ctx)
	if err := third.Block(ctx, time.Second); err != nil {
		panic(err)
	}
	fmt.Println("third's fence is above second's:", third.Fence() > second.Fence())
	// Output:
	// third gets a slot at once: false
	// third's fence is above second's: true
}

// Read and Write are the two sides of a read/write lock: readers share the
// key, a writer holds it alone, and a waiting writer stops new readers, so
// writers are never starved.
func ExampleRead() {
	ctx := context.Background()
	// Holder names this process in the grants it makes, so that a refused
	// writer is told who is in its way.
	m, err := lock.Open(ctx, lock.Config{Holder: "indexer-1"})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	reader := m.Make("catalog", time.Minute, lock.Read())
	if ok, err := reader.Acquire(ctx); !ok || err != nil {
		panic("not acquired")
	}
	err = m.Try(ctx, "catalog", time.Minute, func(ctx context.Context, l *lock.Lock) error {
		fmt.Println("a second reader shares it, fence above the first:", l.Fence() > reader.Fence())
		return nil
	}, lock.Read())
	fmt.Println("read:", err)

	err = m.Try(ctx, "catalog", time.Minute, func(context.Context, *lock.Lock) error { return nil }, lock.Write())
	fmt.Println("a writer beside a reader:", err)

	_ = reader.Release(ctx)
	err = m.Try(ctx, "catalog", time.Minute, func(ctx context.Context, l *lock.Lock) error {
		fmt.Println("the writer has it alone")
		return nil
	}, lock.Write())
	fmt.Println("write:", err)
	// Output:
	// a second reader shares it, fence above the first: true
	// read: <nil>
	// a writer beside a reader: lock: not acquired: "catalog" is held by another owner (indexer-1)
	// the writer has it alone
	// write: <nil>
}
