package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/election"
)

// One process leads at a time: the others wait in Campaign. The leader's
// work runs on Leadership.Context, which ends before the lease could run
// out at the backend; the term goes to anything that must refuse a
// deposed leader's writes.
func Example() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{}) // or lock.ConfigFromEnv(): cluster, Redis, SQLite
	if err != nil {
		panic(err)
	}
	defer m.Close()

	e, err := election.New(m, "scheduler", 15*time.Second)
	if err != nil {
		panic(err)
	}
	l, err := e.Campaign(ctx, "worker-1:8080")
	if err != nil {
		panic(err)
	}
	fmt.Println("leading:", l.Value(), "term above 0:", l.Term() > 0)

	leader, err := e.Leader(ctx)
	fmt.Println("others see:", leader.Value, err)

	// ... work on l.Context() while it lasts, passing l.Term() along ...
	if err := l.Resign(ctx); err != nil {
		panic(err)
	}
	_, err = e.Leader(ctx)
	fmt.Println("after resigning:", err)
	// Output:
	// leading: worker-1:8080 term above 0: true
	// others see: worker-1:8080 <nil>
	// after resigning: election: no leader
}
