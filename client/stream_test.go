package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/tcpproxy"
)

// TestConformance_PlainHTTP runs the conformance suite with the stream
// turned off: every request its own HTTP/1.1 request.
func TestConformance_PlainHTTP(t *testing.T) {
	addrs, _ := startCluster(t)
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return plainHarness{addrs: addrs} })
}

type plainHarness struct{ addrs []string }

func (h plainHarness) NewDriver(context.Context) (drivers.Driver, error) {
	return client.New(client.Config{Addrs: h.addrs, NoStream: true, AttemptTimeout: conformanceAttemptTimeout})
}

// By default the client carries its calls over one stream per node once
// the stream is open (the first calls go in plain HTTP meanwhile), and
// Close closes it.
func TestStream_ClientCarriesCallsOverOneStreamPerNode(t *testing.T) {
	addrs, _ := startCluster(t)
	c, err := client.New(client.Config{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	poll.Until(t, 5*time.Second, "a stream to the leader", func() bool {
		if _, _, err := c.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		return c.Streams() > 0
	})
	for i := 0; i < 50; i++ {
		f, ok, err := driverstest.Take(ctx, c, "k", "o", time.Minute)
		if err != nil || !ok || f == 0 {
			t.Fatalf("Acquire = %d, %v, %v", f, ok, err)
		}
		if ok, err := c.Release(ctx, "k", "o"); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
	}
	if n := c.Streams(); n < 1 || n > len(addrs) {
		t.Fatalf("%d streams for %d nodes", n, len(addrs))
	}
	nodeStatus, err := c.Status(ctx)
	if err != nil || nodeStatus.LeaderID == "" {
		t.Fatalf("Status = %+v, %v", nodeStatus, err)
	}
	_ = c.Close()
	if n := c.Streams(); n != 0 {
		t.Fatalf("%d streams left open after Close", n)
	}
}

// A waiting acquire given up by its caller is cancelled on the node
// through the stream: its queue entry goes at once (long before the
// request's own wait_ms, DefaultWaitChunk, would end it), the key is never
// handed to the owner who left, so the holder's release frees it.
func TestStream_AbandonedWaitIsCancelledOnTheNode(t *testing.T) {
	addrs, _ := startCluster(t)
	c, err := client.New(client.Config{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	poll.Until(t, 5*time.Second, "a stream to the leader", func() bool {
		_, _, _ = c.Get(ctx, "k")
		return c.Streams() > 0
	})
	if _, ok, err := driverstest.Take(ctx, c, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	opened := c.StreamsOpened()
	waiters := func() int {
		info, _, err := c.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return info.Waiters
	}
	for i := 0; i < 3; i++ {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := driverstest.TakeWait(wctx, c, "k", "leaver", time.Minute, drivers.WaitOptions{})
			done <- err
		}()
		poll.Until(t, 5*time.Second, "the wait queued on the node", func() bool { return waiters() == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("abandoned wait = %v", err)
		}
		poll.Until(t, client.DefaultWaitChunk/2, "the queue entry of the abandoned wait to go", func() bool { return waiters() == 0 })
	}
	if ok, err := c.Release(ctx, "k", "holder"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	poll.Until(t, 5*time.Second, "the key to be free, not handed to the owner who left", func() bool {
		info, found, err := c.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if found && info.Owner == "leaver" {
			t.Fatalf("the key went to the owner who gave up waiting: %+v", info)
		}
		return !found
	})
	if got := c.StreamsOpened(); got != opened {
		t.Fatalf("%d streams opened during the abandoned waits: a wait given up closed the stream of a node that answers", got-opened)
	}
}

// A request that finds its stream just ended (closed while idle, or
// broken by another request) before it went on it is carried by plain
// HTTP instead of failing: nothing of it was sent.
func TestStream_RequestOnAStreamThatJustEndedGoesPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	cl := clustertest.Start(t, 1, nil)
	c := newClient(t, client.Config{Addrs: cl.Addrs()})
	ctx := t.Context()
	poll.Until(t, 5*time.Second, "a stream to the node", func() bool {
		_, _, _ = c.Get(ctx, "k")
		return c.Streams() == 1
	})
	c.EndStreamUnderARequest(errors.New("closed under the request"))

	f, ok, err := driverstest.Take(ctx, c, "k", "o", time.Minute)
	if err != nil || !ok || f == 0 {
		t.Fatalf("Acquire on a stream that just ended = %d, %v, %v; want granted through plain HTTP", f, ok, err)
	}
	if c.IsSuspect() {
		t.Fatal("the node was marked silent for a stream the client closed")
	}
}

// The first calls go in plain HTTP while the stream is dialled; once the
// stream is up, the plain connection is closed rather than kept idle
// beside it, so a client costs its node one connection, not two (with ten
// thousand clients a node ran out of descriptors at 9,566).
func TestStream_OneConnectionPerNodeOnceTheStreamIsUp(t *testing.T) {
	addrs, _ := startCluster(t)
	p, err := tcpproxy.Start(addrs[0], tcpproxy.Refuse)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := client.New(client.Config{Addrs: []string{p.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, c, "k", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	poll.Until(t, 5*time.Second, "a stream to the node", func() bool {
		if _, err := c.Extend(ctx, "k", "o", time.Minute); err != nil {
			t.Fatal(err)
		}
		return c.Streams() > 0
	})
	poll.Until(t, 5*time.Second, "one connection to the node", func() bool {
		if ok, err := c.Extend(ctx, "k", "o", time.Minute); err != nil || !ok {
			t.Fatalf("Extend = %v, %v", ok, err)
		}
		return p.Live() == 1
	})
	if n := p.Carried(); n < 2 {
		t.Fatalf("%d connections carried: the first call did not go in plain HTTP, the test proves nothing", n)
	}
}
