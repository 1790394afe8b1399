package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zerotal/lock"
)

// Try takes the lock once: a second caller finds it held and gets a
// *NotAcquiredError at once.
func ExampleManager_Try() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{}) // the in-process memory driver
	if err != nil {
		panic(err)
	}
	defer m.Close()

	err = m.Try(ctx, "invoice:123", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
		fmt.Println("processing", l.Key())

		// Meanwhile, another worker tries the same invoice.
		err := m.Try(ctx, "invoice:123", 10*time.Second, func(context.Context, *lock.Lock) error { return nil })
		var busy *lock.NotAcquiredError
		if errors.As(err, &busy) {
			fmt.Println("other worker:", busy.Key, "is busy")
		}
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// processing invoice:123
	// other worker: invoice:123 is busy
	// done: <nil>
}

// Block waits for the lock; with WithRefresh the lock stays held for as long
// as the callback runs, however long that is compared with the TTL.
func ExampleManager_Block() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	holder := m.Make("report:monthly", time.Minute)
	if ok, err := holder.Acquire(ctx); !ok || err != nil {
		panic("not acquired")
	}
	// The current holder finishes its work a little later.
	time.AfterFunc(20*time.Millisecond, func() { _ = holder.Release(ctx) })

	err = m.Block(ctx, "report:monthly", time.Second, func(ctx context.Context, l *lock.Lock) error {
		// This job runs longer than its TTL; the refresher keeps it held.
		select {
		case <-time.After(1300 * time.Millisecond):
			fmt.Println("report built, still held:", l.IsAcquired())
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, lock.WithTimeout(5*time.Second), lock.WithRefresh())
	fmt.Println("done:", err)
	// Output:
	// report built, still held: true
	// done: <nil>
}

// Shutdown lets the running callbacks stop and release their locks before
// the Manager closes; new work is refused meanwhile.
func ExampleManager_Shutdown() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}

	working := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- m.Try(ctx, "import:daily", time.Minute, func(ctx context.Context, _ *lock.Lock) error {
			close(working)
			<-ctx.Done() // a long job that checks its context
			fmt.Println("job stopping:", errors.Is(context.Cause(ctx), lock.ErrClosed))
			return ctx.Err()
		})
	}()
	<-working

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", m.Shutdown(sctx))
	fmt.Println("job:", errors.Is(<-done, lock.ErrLostClosed))
	fmt.Println("new work:", m.Try(ctx, "import:daily", time.Minute, func(context.Context, *lock.Lock) error { return nil }))
	// Output:
	// job stopping: true
	// shutdown: <nil>
	// job: true
	// new work: lock: closed
}

// Make returns a handle for flows that acquire and release by hand.
func ExampleManager_Make() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	l := m.Make("payment:456", 15*time.Second)
	fmt.Println("acquired before Acquire:", l.IsAcquired())
	ok, err := l.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	if ok {
		fmt.Println("paying")
		if err := l.Release(ctx); err != nil {
			panic(err)
		}
	}
	fmt.Println("acquired after Release:", l.IsAcquired())
	// Output:
	// acquired before Acquire: false
	// paying
	// acquired after Release: false
}

// storage refuses writes carrying a fence older than the newest it has
// seen, the way a database row with a version column would.
type storage struct{ highest uint64 }

func (s *storage) write(fence uint64, what string) error {
	if fence < s.highest {
		return fmt.Errorf("refused %q: fence %d is stale (seen %d)", what, fence, s.highest)
	}
	s.highest = fence
	return nil
}

// Fences let the protected resource refuse a holder whose lock expired and
// was granted to someone else since.
func ExampleLock_Fence() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	db := &storage{}

	slow := m.Make("ledger", 20*time.Millisecond)
	if ok, _ := slow.Acquire(ctx); !ok {
		panic("not acquired")
	}
	oldFence := slow.Fence()

	// The slow holder stalls past its TTL; another process takes over.
	fast := m.Make("ledger", time.Minute)
	if err := fast.Block(ctx, time.Second); err != nil {
		panic(err)
	}
	fmt.Println("newer grant has a higher fence:", fast.Fence() > oldFence)
	fmt.Println(db.write(fast.Fence(), "new balance"))
	fmt.Println(db.write(oldFence, "stale balance") != nil)
	// Output:
	// newer grant has a higher fence: true
	// <nil>
	// true
}

// A lock lost while the callback runs cancels the callback's context with a
// *LostError as its cause, and Try returns that error. Its Reason says why.
func ExampleLostError() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	err = m.Try(ctx, "import:batch", time.Second, func(ctx context.Context, l *lock.Lock) error {
		// An operator clears the lock while the import runs.
		if err := m.Make("import:batch", time.Second).ForceRelease(ctx); err != nil {
			return err
		}
		<-ctx.Done() // the next refresh notices
		fmt.Println("cause is ErrLost:", errors.Is(context.Cause(ctx), lock.ErrLost))
		return ctx.Err()
	}, lock.WithRefreshEvery(10*time.Millisecond))

	var lost *lock.LostError
	if errors.As(err, &lost) {
		fmt.Println("lost:", lost.Key)
		fmt.Println("taken or force-released:", lost.Reason == lock.ErrLostTaken)
	}
	switch {
	case errors.Is(err, lock.ErrLostTaken):
		fmt.Println("someone else may hold it now")
	case errors.Is(err, lock.ErrLostUnreachable):
		fmt.Println("the backend could not be reached:", lost.Cause)
	}
	// Output:
	// cause is ErrLost: true
	// lost: import:batch
	// taken or force-released: true
	// someone else may hold it now
}

// Without refresh, a callback that outlives its TTL is told that the lock
// can no longer be trusted, a safety margin before the TTL runs out, so
// that it has time to stop before someone else may take the lock.
func ExampleWithSafetyMargin() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	err = m.Try(ctx, "quick-job", 100*time.Millisecond, func(ctx context.Context, l *lock.Lock) error {
		expires := l.ExpiresAt()
		<-ctx.Done() // the job takes longer than the TTL
		fmt.Println("told before the estimated expiry:", time.Now().Before(expires))
		return ctx.Err()
	}, lock.WithSafetyMargin(40*time.Millisecond))
	fmt.Println(errors.Is(err, lock.ErrLost), errors.Is(err, lock.ErrLostExpired))
	// Output:
	// told before the estimated expiry: true
	// true true
}

// ConfigFromEnv reads LOCKCLUSTER_DRIVER and friends; Config prints without
// secrets.
func ExampleConfig_String() {
	cfg := lock.Config{
		Driver: "redis",
		Redis:  lock.RedisConfig{URL: "redis://app:hunter2@127.0.0.1:6379/0"},
	}
	fmt.Println(cfg)
	// Output:
	// {Driver:"redis" Prefix:"" SQLite:{Path:"" Durable:false} Redis:{URL:redis://app:xxxxx@127.0.0.1:6379/0} Postgres:{URL:""} Cluster:{Addrs:[] Token:""}}
}

// A refused acquire says who holds the key, as the holder's Manager
// describes itself (WithHolder, Config.Holder; the process id and host by
// default), and for how long.
func ExampleWithHolder() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{Holder: "deploy@host-3"})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	train := m.Make("release-train", time.Minute)
	if _, err := train.Acquire(ctx); err != nil {
		panic(err)
	}
	err = m.Try(ctx, "release-train", time.Minute, func(context.Context, *lock.Lock) error { return nil })
	var busy *lock.NotAcquiredError
	if errors.As(err, &busy) {
		fmt.Printf("held by %s for up to %s more\n", busy.Holder, busy.HolderTTL.Round(time.Minute))
	}
	_ = train.Release(ctx)
	// Output:
	// held by deploy@host-3 for up to 1m0s more
}

// TryAll takes several keys, all or none, with a fence for each.
func ExampleManager_TryAll() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	err = m.TryAll(ctx, []string{"account:9", "account:7"}, 10*time.Second, func(ctx context.Context, locks []*lock.Lock) error {
		fmt.Println("moving money from", locks[0].Key(), "to", locks[1].Key())
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// moving money from account:9 to account:7
	// done: <nil>
}
