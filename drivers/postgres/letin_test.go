package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// TestLetIn_TheWaiterLetInIsToldItsFence: a release in one handle lets
// the head of the key's queue in, a waiter of another handle, and tells
// it so on the channel zerotal_lock_in: "FENCE SEQ N OWNER KEY", the
// grant's fence, the place's seq and the owner (of N bytes, spaces and
// all), so that only that waiter takes the grant, from the notice; the
// waiter behind it is left waiting.
func TestLetIn_TheWaiterLetInIsToldItsFence(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	a, b := open(t, srv.URL()), open(t, srv.URL())
	conn, err := pgx.Connect(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "LISTEN zerotal_lock_in"); err != nil {
		t.Fatal(err)
	}
	key, holder, first, second := newKey("let in"), newOwner(), "first waiter "+newOwner(), newOwner()
	if g, err := a.Acquire(t.Context(), drivers.Request{Keys: []string{key}, Owner: holder, TTL: time.Hour}); err != nil || !g.Acquired {
		t.Fatalf("Acquire = %v, %v", g, err)
	}
	firstDone := startWait(t.Context(), b, key, first)
	poll.Until(t, 10*time.Second, "the first waiter queued", func() bool {
		h, _, err := a.Inspect(t.Context(), key)
		return err == nil && h.WaiterCount == 1
	})
	secondDone := startWait(t.Context(), b, key, second)
	poll.Until(t, 10*time.Second, "the second waiter queued", func() bool {
		h, _, err := a.Inspect(t.Context(), key)
		return err == nil && h.WaiterCount == 2
	})
	if ok, err := a.Release(t.Context(), key, holder); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no notice on zerotal_lock_in within 10s of the release: %v", err)
	}
	r := <-firstDone
	if r.err != nil || !r.g.Acquired {
		t.Fatalf("the first waiter got %+v, %v", r.g, r.err)
	}
	var fence, seq uint64
	var size int
	if _, err := fmt.Sscanf(n.Payload, "%d %d %d ", &fence, &seq, &size); err != nil || fence != r.g.Fence() ||
		n.Payload != fmt.Sprintf("%d %d %d %s %s", fence, seq, len(first), first, key) {
		t.Fatalf("notice %q; want \"FENCE SEQ N OWNER KEY\" of the first waiter (%q), fence %d", n.Payload, first, r.g.Fence())
	}
	select {
	case r := <-secondDone:
		t.Fatalf("the second waiter returned %+v, %v while the first holds the key", r.g, r.err)
	default:
	}
	if ok, err := b.Release(t.Context(), key, first); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if r := <-secondDone; r.err != nil || !r.g.Acquired || r.g.Fence() <= fence {
		t.Fatalf("the second waiter got %+v, %v; want the key with a fence above %d", r.g, r.err, fence)
	}
}
