package httpapi_test

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/internal/testkit/poll"
)

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
