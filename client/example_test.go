package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
)

// The cluster is one more backend for package lock: build the client and
// hand it to lock.New (or use lock.Open with Driver "cluster").
func Example() {
	c, err := client.New(client.Config{
		Addrs: []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"},
		Token: "", // the cluster's bearer token, if it has one
	})
	if err != nil {
		log.Fatal(err)
	}
	m := lock.New(c)
	defer m.Close() // closes the client too

	ctx := context.Background()
	err = m.Try(ctx, "invoice:123", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
		fmt.Println("holding", l.Key(), "with fence", l.Fence())
		return nil
	})
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		fmt.Println("someone else holds it")
	case errors.Is(err, lock.ErrUnavailable):
		fmt.Println("the cluster cannot be reached or has no quorum")
	}
}

// Status, List and Get serve the admin side (lockcluster status, locks).
func ExampleClient_List() {
	c, err := client.New(client.Config{Addrs: []string{"127.0.0.1:7001"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	locks, truncated, err := c.List(context.Background(), "jobs/", 100)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range locks {
		fmt.Printf("%s owner=%s fence=%d expires in %s, %d waiting\n", l.Key, l.Owner, l.Fence, l.Remaining, l.Waiters)
	}
	if truncated {
		fmt.Println("...")
	}
}
