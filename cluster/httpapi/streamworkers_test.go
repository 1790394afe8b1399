package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
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

// A stream client that sends frames and never reads the answers: the
// node stops reading it once MaxStreamRequests answers wait, closes it
// when a write of answers outlasts WriteTimeout, and holds at most
// MaxStreamRequests workers meanwhile; a well-behaved client on another
// connection keeps being answered. Before the bound, a request left the
// in-flight count before its answer was queued, and one such connection
// grew the node by more than 14,000 goroutines and 500 MiB.
func TestStream_ClientThatNeverReadsIsBounded(t *testing.T) {
	const writeTimeout = 500 * time.Millisecond
	s := newStreamServerOn(t, newFakeStore(), httpapi.Options{
		NodeID: "n1", ClusterID: "c1", Credentials: operator(streamToken), ReadTimeout: 5 * time.Second,
		WriteTimeout: writeTimeout, Metrics: bigMetrics,
	})
	before := runtime.NumGoroutine()

	// The flooder: frames asking for the status, written until the node
	// stops reading them or cuts the stream.
	c := s.mustOpen(t)
	flooded := make(chan int)
	go func() {
		sent := 0
		for id := uint64(1); id < 200_000; id++ {
			f, _ := stream.AppendRequest(nil, stream.Request{ID: id, Method: http.MethodGet, Target: api.PathStatus})
			_ = c.conn.SetWriteDeadline(time.Now().Add(3 * time.Second))
			if _, err := c.conn.Write(f); err != nil {
				break // the node stopped reading, or closed the stream
			}
			sent++
		}
		flooded <- sent
	}()

	// Meanwhile a client that reads is answered, and the node stays small.
	good := s.mustOpen(t)
	peak := 0
	deadline := time.Now().Add(3 * time.Second)
	for i := uint64(1); time.Now().Before(deadline); i++ {
		good.send(stream.Request{ID: i, Method: http.MethodGet, Target: api.PathStatus})
		if a := good.answer(); a.ID != i || a.Status != http.StatusOK {
			t.Fatalf("the reading client's request %d: %d %s", i, a.Status, a.Body)
		}
		peak = max(peak, runtime.NumGoroutine()-before)
	}
	sent := <-flooded
	if limit := httpapi.MaxStreamRequests + 64; peak > limit {
		t.Fatalf("a stream that is never read grew the node by %d goroutines, want at most %d", peak, limit)
	}
	// Judged on the node's side, without reading the flooder's answers:
	// reading them would unblock the node's writer, which is what ends
	// the stream. On a loaded machine the node may still be answering
	// frames it read; once their answers fill the connection's buffers,
	// its write outlasts WriteTimeout and it closes the stream.
	_ = good.conn.Close()
	if !s.streamsEnded(30 * time.Second) {
		t.Fatal("the node did not close a stream whose answers went unread")
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("flooder sent %d frames; +%d goroutines at the peak; heap in use %d MiB after", sent, peak, ms.HeapInuse>>20)
}

// countingStore holds every acquire of "block" until its context ends
// and counts how many it holds at once.
type countingStore struct {
	*fakeStore
	mu        sync.Mutex
	now, peak int
}

func (s *countingStore) Acquire(ctx context.Context, req httpapi.Request) ([]uint64, error) {
	if req.Keys[0] != "block" {
		return s.fakeStore.Acquire(ctx, req)
	}
	s.mu.Lock()
	s.now++
	s.peak = max(s.peak, s.now)
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.now--
	s.mu.Unlock()
	return nil, ctx.Err()
}

func (s *countingStore) held() (now, peak int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now, s.peak
}

// At most MaxStreamRunning handlers of one stream run at once: past them
// the stream is not read until one ends. A waiting acquire gives its slot
// back as it starts to wait, so waits do not count.
func TestStream_HandlersRunningAtOnceAreCapped(t *testing.T) {
	store := &countingStore{fakeStore: newFakeStore()}
	s := newStreamServerOn(t, store, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: operator(streamToken)})
	c := s.mustOpen(t)
	var buf []byte
	const held = httpapi.MaxStreamRunning + 44
	for i := 1; i <= held; i++ {
		buf, _ = stream.AppendRequest(buf, stream.Request{ID: uint64(i), Method: http.MethodPost, Target: api.PathAcquire,
			Body: []byte(`{"key":"block","owner":"o","ttl_ms":1000}`)})
	}
	if _, err := c.conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the stream's slots to fill", func() bool {
		now, _ := store.held()
		return now == httpapi.MaxStreamRunning
	})
	// The reader waits for a slot before it reads the next frame, so
	// nothing more starts until one ends.
	time.Sleep(100 * time.Millisecond) // a negative check: give extra handlers the chance to start
	if now, peak := store.held(); now != httpapi.MaxStreamRunning || peak != httpapi.MaxStreamRunning {
		t.Fatalf("%d handlers at once (peak %d), want %d", now, peak, httpapi.MaxStreamRunning)
	}
	// While the reader waits for a slot it reads nothing, so a client's
	// close is seen once a slot frees; the node's shutdown ends it at once.
	s.cancel()
	poll.Until(t, 10*time.Second, "the held acquires to end", func() bool {
		now, _ := store.held()
		return now == 0
	})
	if _, peak := store.held(); peak != httpapi.MaxStreamRunning {
		t.Fatalf("peak %d, want %d", peak, httpapi.MaxStreamRunning)
	}
}

// Waiting acquires give their slot back: more of them than
// MaxStreamRunning wait on one stream at once.
func TestStream_WaitsDoNotHoldRunSlots(t *testing.T) {
	s := newStreamServer(t, time.Second)
	c := s.mustOpen(t)
	var buf []byte
	const waits = httpapi.MaxStreamRunning + 44
	for i := 1; i <= waits; i++ {
		buf, _ = stream.AppendRequest(buf, stream.Request{ID: uint64(i), Method: http.MethodPost, Target: api.PathAcquire,
			Body: []byte(`{"key":"block","owner":"o","ttl_ms":1000,"wait_ms":60000}`)})
	}
	if _, err := c.conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	c.send(stream.Request{ID: 1 << 20, Method: http.MethodGet, Target: api.PathStatus})
	if a := c.answer(); a.ID != 1<<20 || a.Status != http.StatusOK {
		t.Fatalf("a status behind %d waits: %d %d %s", waits, a.ID, a.Status, a.Body)
	}
	_ = c.conn.Close()
	for range waits {
		s.ended(t)
	}
}
