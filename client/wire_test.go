package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// TestClient_NotAcquiredTellsHolderTTL: against a real cluster, a second
// owner's acquire fails with a *drivers.NotAcquiredError that carries the
// holder's remaining lease.
func TestClient_NotAcquiredTellsHolderTTL(t *testing.T) {
	addrs, nodes := startCluster(t)
	c, err := client.New(client.Config{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	const ttl = 10 * time.Second
	if _, ok, err := driverstest.Take(t.Context(), c, "held", "a", ttl); err != nil || !ok {
		t.Fatalf("Acquire by a = %v, %v", ok, err)
	}
	err = c.AcquireError(t.Context(), "held", "b", ttl)
	var na *drivers.NotAcquiredError
	if !errors.As(err, &na) || !errors.Is(err, drivers.ErrNotAcquired) {
		t.Fatalf("acquire by b = %v, want a *drivers.NotAcquiredError", err)
	}
	if na.Key != "held" || na.HolderTTL <= 0 || na.HolderTTL > ttl {
		t.Fatalf("NotAcquiredError %+v, want key held and HolderTTL in (0, %v]", na, ttl)
	}

	// Join sends the http field: joining a member again under its own
	// addresses is accepted and changes nothing.
	n := nodes[0]
	if err := c.Join(t.Context(), n.ID(), n.RaftAddr(), n.AdvertisedHTTPAddr()); err != nil {
		t.Fatalf("Join of a member as it is: %v", err)
	}
	if st, err := c.Status(t.Context()); err != nil || len(st.Peers) != 3 {
		t.Fatalf("Status after join = %+v, %v; want 3 peers", st, err)
	}
}
