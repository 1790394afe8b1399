package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/tcpproxy"
)

// TestCutMidCommit_OutcomeUnknownAndCleanedUp cuts the connection while
// an acquire's commit is on its way: the server holds it back (another
// session's uncommitted row of the same key and owner), the link is cut,
// and the server commits the grant after the client has gone. The call
// returns by its deadline with ErrOutcomeUnknown, and once the link heals
// the grant nobody was told of is let go, well before its TTL.
func TestCutMidCommit_OutcomeUnknownAndCleanedUp(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	proxy, err := tcpproxy.Start("127.0.0.1:"+itoa(srv.Port()), tcpproxy.Blackhole)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	d := open(t, "postgres://postgres@"+proxy.Addr()+"/postgres?sslmode=disable", func(c *postgres.Config) { c.NoListen = true })
	key, owner := newKey("cut-commit"), newOwner()

	blocker, err := pgx.Connect(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(context.Background())
	tx, err := blocker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `INSERT INTO zerotal_lock.grants VALUES ($1, $2, 0, 0, 0, 0, true)`, key, owner); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := d.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: owner, TTL: time.Hour})
		done <- err
	}()
	// The acquire's commit waits for the blocker's row.
	poll.Until(t, 10*time.Second, "the acquire blocked at the server", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Acquire returned before it blocked: %v", err)
		default:
		}
		var n int
		err := blocker.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n > 0
	})
	proxy.Cut()
	err = <-done
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("Acquire took %v with a deadline of 5s", took)
	}
	if !errors.Is(err, drivers.ErrOutcomeUnknown) {
		t.Fatalf("Acquire cut mid-commit = %v; want ErrOutcomeUnknown", err)
	}
	// The server goes on: the blocker's row goes, the acquire's grant is
	// committed for a client that is gone.
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the cut transaction ended at the server", func() bool {
		var n int
		err := blocker.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n == 0
	})
	proxy.Heal()
	poll.Until(t, 10*time.Second, "the grant nobody was told of let go", func() bool {
		var n int
		err := blocker.QueryRow(t.Context(), `SELECT count(*) FROM zerotal_lock.grants WHERE key = $1`, key).Scan(&n)
		return err == nil && n == 0
	})
}
