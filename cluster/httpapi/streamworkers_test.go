package httpapi_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
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

// At the cap of MaxStreamRequests workers, every one but one held by a
// long wait, the last one may leave (its idle time over) just as a request
// is to be handed to it: the request then gets a new worker. Before, the
// stream's reader waited for a worker to take the request, none ever did,
// and the stream stopped reading. The hooks order it: the last worker is
// held after its job until the reader finds every worker busy, then
// leaves before the reader waits.
func TestStream_AtTheWorkerCapAWorkerThatLeavesMakesRoom(t *testing.T) {
	defer httpapi.SetStreamWorkerIdle(httpapi.SetStreamWorkerIdle(0))
	store := &countingStore{fakeStore: newFakeStore()}
	s := newStreamServerOn(t, store, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: operator(streamToken), ReadTimeout: time.Second})
	c := s.mustOpen(t)
	const held = httpapi.MaxStreamRequests - 1
	for i := range held {
		c.send(stream.Request{ID: uint64(i + 1), Method: http.MethodPost, Target: api.PathAcquire,
			Body: fmt.Appendf(nil, `{"key":"block","owner":"w%d","ttl_ms":1000,"wait_ms":60000}`, i)})
	}
	poll.Until(t, 30*time.Second, "every wait to hold a worker", func() bool { now, _ := store.held(); return now == held })

	var armed atomic.Bool
	gate := make(chan struct{})
	httpapi.SetStreamHooks(func() { // the reader, every worker busy
		if armed.CompareAndSwap(true, false) {
			close(gate)
			poll.Until(t, 5*time.Second, "the last worker to leave", func() bool { return httpapi.StreamWorkers() == held })
		}
	}, func() { // a worker, its job done
		if armed.Load() {
			<-gate
		}
	})
	defer httpapi.SetStreamHooks(nil, nil)
	armed.Store(true)
	for id := uint64(held + 1); id <= held+2; id++ {
		c.send(stream.Request{ID: id, Method: http.MethodGet, Target: api.PathLock + "?key=k"})
		if a := c.answer(); a.ID != id || a.Status != http.StatusNotFound {
			t.Fatalf("request %d: answer %d %d %s", id, a.ID, a.Status, a.Body)
		}
	}
}
