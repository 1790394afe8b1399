package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/sqlite"
)

// Two handles on one file stand for two processes on one host.
func Example() {
	dir, err := os.MkdirTemp("", "zerotal-lock-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "locks.db")

	worker1, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		log.Fatal(err)
	}
	defer worker1.Close()
	worker2, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		log.Fatal(err)
	}
	defer worker2.Close()

	g, err := worker1.Acquire(ctx, drivers.Request{Keys: []string{"invoice:123"}, Owner: "token-1", TTL: 10 * time.Second})
	fmt.Println("worker 1 acquired:", g.Acquired, "fence:", g.Fence(), "err:", err)
	g, err = worker2.Acquire(ctx, drivers.Request{Keys: []string{"invoice:123"}, Owner: "token-2", TTL: 10 * time.Second})
	fmt.Println("worker 2 acquired:", g.Acquired, "err:", err)
	released, err := worker1.Release(ctx, "invoice:123", "token-1")
	fmt.Println("worker 1 released:", released, "err:", err)
	g, err = worker2.Acquire(ctx, drivers.Request{Keys: []string{"invoice:123"}, Owner: "token-2", TTL: 10 * time.Second})
	fmt.Println("worker 2 acquired:", g.Acquired, "fence:", g.Fence(), "err:", err)
	// Output:
	// worker 1 acquired: true fence: 1 err: <nil>
	// worker 2 acquired: false err: <nil>
	// worker 1 released: true err: <nil>
	// worker 2 acquired: true fence: 2 err: <nil>
}

// A waiter (drivers.Request.Wait) is handed the key as soon as its holder
// releases it.
func ExampleDriver_Acquire_wait() {
	dir, err := os.MkdirTemp("", "zerotal-lock-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "locks.db")
	holder, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		log.Fatal(err)
	}
	defer holder.Close()
	waiter, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		log.Fatal(err)
	}
	defer waiter.Close()

	if _, err := holder.Acquire(ctx, drivers.Request{Keys: []string{"report:export"}, Owner: "token-1", TTL: time.Minute}); err != nil {
		log.Fatal(err)
	}
	granted := make(chan uint64)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		g, err := waiter.Acquire(ctx, drivers.Request{Keys: []string{"report:export"}, Owner: "token-2", TTL: time.Minute,
			Wait: true, WaitOptions: drivers.WaitOptions{RetryDelay: 100 * time.Millisecond}})
		if err != nil {
			log.Fatal(err)
		}
		granted <- g.Fence()
	}()
	if _, err := holder.Release(ctx, "report:export", "token-1"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("waiter granted, fence:", <-granted)
	// Output:
	// waiter granted, fence: 2
}
