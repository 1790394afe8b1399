package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zerotal/lock"
)

// WithMaxHold caps how long a grant is held, however well it is
// refreshed: a job that hangs cannot keep the key. The callback is told
// a safety margin before the cap, with ErrLostMaxHold as the reason, and
// the backend itself ends the grant at the cap.
func ExampleWithMaxHold() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{}) // the in-process memory driver
	if err != nil {
		panic(err)
	}
	defer m.Close()

	err = m.Try(ctx, "nightly-export", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
		// The TTL is longer than the cap: the grant ends at the cap.
		fmt.Println("lease ends at the cap:", l.ExpiresAt().Equal(l.MaxHoldAt()))
		<-ctx.Done() // a job that would never finish on its own
		return ctx.Err()
	}, lock.WithRefresh(), lock.WithMaxHold(300*time.Millisecond), lock.WithSafetyMargin(100*time.Millisecond))

	fmt.Println("stopped by the cap:", errors.Is(err, lock.ErrLostMaxHold))
	// Output:
	// lease ends at the cap: true
	// stopped by the cap: true
}
