package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// On an instant driver Block tries Acquire first; that must never take a
// key from an owner already queued for it. Released, the key goes to the
// queued Block, and a Block that comes later finds it held.
func TestBlock_InstantDriverNeverOvertakesAQueuedWaiter(t *testing.T) {
	d, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := lock.New(d)
	defer m.Close()
	ctx := t.Context()
	holder := m.Make("k", time.Minute)
	if ok, err := holder.Acquire(ctx); !ok || err != nil {
		t.Fatalf("holder: %v %v", ok, err)
	}
	queued := m.Make("k", time.Minute)
	got := make(chan error, 1)
	go func() { got <- queued.Block(ctx, 10*time.Second) }()
	poll.Until(t, 5*time.Second, "the waiter to queue", func() bool {
		info, ok, err := d.Engine().Get(ctx, lock.DefaultPrefix+"k")
		return err == nil && ok && info.Waiters == 1
	})
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	late := m.Make("k", time.Minute)
	err = late.Block(ctx, 20*time.Millisecond)
	var na *lock.NotAcquiredError
	if !errors.As(err, &na) {
		t.Fatalf("a later Block = %v, want a *NotAcquiredError (the key went to the queued waiter)", err)
	}
	if err := <-got; err != nil || !queued.IsAcquired() {
		t.Fatalf("the queued Block = %v (held %v)", err, queued.IsAcquired())
	}
	_ = queued.Release(context.Background())
}
