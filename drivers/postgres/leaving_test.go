package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// TestLeave_ReleaseAfterAnAbandonedWaitFreesTheKey: a set's wait that
// ends leaves its places in the background, so that it returns by its
// deadline; here that clean-up is held up at the server behind another
// session's lock of the set's other key, which it takes first. A release
// of the busy key made right after by the same process comes after the
// clean-up, however late it runs: it must not leave the key to the place
// of a waiter that is gone, which the next transaction on the key would
// let in for the waiter's TTL, and a new owner's try then gets the key.
func TestLeave_ReleaseAfterAnAbandonedWaitFreesTheKey(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	d := open(t, srv.URL())
	conn, err := pgx.Connect(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// busy and other: other's lock comes first in a transaction's order
	// (the keys' hashes, ascending).
	busy, other := newKey("leave-busy"), newKey("leave-other")
	for {
		var first bool
		if err := conn.QueryRow(t.Context(), `SELECT hashtext($1) < hashtext($2)`, other, busy).Scan(&first); err != nil {
			t.Fatal(err)
		}
		if first {
			break
		}
		other = newKey("leave-other")
	}
	holder, waiter := newOwner(), newOwner()
	g, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{busy}, Owner: holder, TTL: time.Hour})
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire = %v, %v", g, err)
	}
	wctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := d.Acquire(wctx, drivers.Request{Keys: []string{other, busy}, Owner: waiter, TTL: time.Hour, Wait: true})
		done <- err
	}()
	poll.Until(t, 10*time.Second, "the set queued for the busy key", func() bool {
		h, _, err := d.Inspect(t.Context(), busy)
		return err == nil && h.WaiterCount == 1
	})

	// Another session holds the other key's lock: the clean-up waits
	// for it at the server before it can reach the busy key.
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock(2052410443, hashtext($1))`, other); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned wait: %v; want context.Canceled", err)
	}
	poll.Until(t, 10*time.Second, "the clean-up held up at the server", func() bool {
		var n int
		err := tx.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n > 0
	})

	released := make(chan error, 1)
	go func() {
		ok, err := d.Release(t.Context(), busy, holder)
		if err == nil && !ok {
			err = errors.New("the holder's grant was gone")
		}
		released <- err
	}()
	// The release waits for the clean-up, which waits for the other
	// session: end that after a while. A release that did not wait has
	// answered by then, and the try below runs before the clean-up.
	select {
	case err = <-released:
	case <-time.After(time.Second):
		if err := tx.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		err = <-released
	}
	if err != nil {
		t.Fatalf("the holder's Release: %v", err)
	}
	g2, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{busy}, Owner: newOwner(), TTL: time.Hour})
	if err != nil || !g2.Acquired {
		t.Fatalf("the next owner's try after the release: %+v, %v; want the key at once", g2, err)
	}
	if g2.Fence() <= g.Fence() {
		t.Fatalf("fence %d after %d", g2.Fence(), g.Fence())
	}
}
