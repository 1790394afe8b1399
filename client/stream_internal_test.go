package client

import (
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// A node without the stream (an older version: fakeNode serves only the
// plain routes) is spoken to in plain HTTP, and not asked again for a
// while.
func TestStream_NodeWithoutTheStreamGetsPlainHTTP(t *testing.T) {
	n := newFakeNode(t, "")
	c := newTestClient(t, Config{Addrs: []string{n.addr()}})
	for i := 0; i < 20; i++ {
		if _, _, err := c.Get(t.Context(), "k"); err != nil {
			t.Fatal(err)
		}
	}
	if got := n.hitCount("/v1/lock"); got != 20 {
		t.Fatalf("the node got %d plain requests, want 20", got)
	}
	if s := c.Streams(); s != 0 {
		t.Fatalf("%d streams to a node that does not serve them", s)
	}
	if got := n.hitCount("/v1/stream"); got != 1 {
		t.Fatalf("the upgrade was asked %d times, want once (then plain HTTP for noStreamFor)", got)
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
	c := newTestClient(t, Config{Addrs: cl.Addrs()})
	ctx := t.Context()
	poll.Until(t, 5*time.Second, "a stream to the node", func() bool {
		_, _, _ = c.Get(ctx, "k")
		return c.Streams() == 1
	})
	c.stream.mu.Lock()
	var sc *streamConn
	for _, s := range c.stream.conns {
		sc = s
	}
	c.stream.mu.Unlock()
	sc.fail(errors.New("closed under the request"))
	c.stream.mu.Lock()
	c.stream.conns[sc.key] = sc // as if the request had found it just before
	c.stream.mu.Unlock()

	f, ok, err := c.Acquire(ctx, "k", "o", time.Minute)
	if err != nil || !ok || f == 0 {
		t.Fatalf("Acquire on a stream that just ended = %d, %v, %v; want granted through plain HTTP", f, ok, err)
	}
	if c.isSuspect(c.bases[0]) {
		t.Fatal("the node was marked silent for a stream the client closed")
	}
}
