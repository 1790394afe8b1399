package client

import (
	"testing"
)

// A node without the stream (an older version: fakeNode serves only the
// plain routes) is spoken to in plain HTTP, and not asked again for a
// while.
func TestStream_NodeWithoutTheStreamGetsPlainHTTP(t *testing.T) {
	n, c := fakeClient(t, Config{})
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
