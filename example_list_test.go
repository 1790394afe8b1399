package lock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// List shows the held keys under a prefix, with every holder: the keys
// come back as the program writes them, without the Manager's prefix.
func ExampleManager_List() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{Holder: "worker-1"})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	for _, l := range []*lock.Lock{
		m.Make("jobs/nightly", time.Minute),
		m.Make("jobs/exports", time.Minute, lock.Semaphore(4)),
		m.Make("jobs/exports", time.Minute, lock.Semaphore(4)),
		m.Make("cache/warm", time.Minute),
	} {
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			panic("not acquired")
		}
	}
	locks, truncated, err := m.List(ctx, "jobs/", 10)
	if err != nil {
		panic(err)
	}
	for _, l := range locks {
		fmt.Printf("%s: %s, %d holder(s), the first %s\n", l.Key, l.Claim.Kind, len(l.Holders), drivers.HolderOf(l.Holders[0].Owner))
	}
	fmt.Println("truncated:", truncated)
	// Output:
	// jobs/exports: semaphore, 2 holder(s), the first worker-1
	// jobs/nightly: mutex, 1 holder(s), the first worker-1
	// truncated: false
}
