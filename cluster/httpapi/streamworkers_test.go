package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// A stream's workers keep their (grown) stacks only while requests come:
// a client that refreshes its lock every few seconds must not pin a
// worker's stack on the node between refreshes (10 k such clients held
// 18 KB of stack each). Under load the workers stay and are reused.
func TestStream_IdleWorkersLeave(t *testing.T) {
	defer httpapi.SetStreamWorkerIdle(httpapi.SetStreamWorkerIdle(20 * time.Millisecond))
	s := newStreamServer(t, time.Second)
	c := s.mustOpen(t)
	// Other tests' streams end as their servers close.
	poll.Until(t, 5*time.Second, "no stream worker before the first request", func() bool { return httpapi.StreamWorkers() == 0 })
	for round := 1; round <= 3; round++ {
		id := uint64(round)
		c.send(stream.Request{ID: id, Method: http.MethodPost, Target: api.PathAcquire,
			Body: []byte(`{"key":"k","owner":"o","ttl_ms":60000}`)})
		if a := c.answer(); a.ID != id || a.Status != http.StatusOK {
			t.Fatalf("round %d: answer %d %s", round, a.Status, a.Body)
		}
		poll.Until(t, 5*time.Second, "the idle worker to leave", func() bool { return httpapi.StreamWorkers() == 0 })
	}
	// The stream itself carries on.
	c.send(stream.Request{ID: 9, Method: http.MethodGet, Target: api.PathLock + "?key=k"})
	if a := c.answer(); a.ID != 9 || a.Status != http.StatusOK {
		t.Fatalf("after the workers left: answer %d %s", a.Status, a.Body)
	}
}
