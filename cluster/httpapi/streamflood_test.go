package httpapi_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/cluster/httpapi"
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
	streams := &sync.WaitGroup{}
	base, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(httpapi.New(newFakeStore(), httpapi.Options{
		NodeID: "n1", ClusterID: "c1", Credentials: operator(streamToken), ReadTimeout: 5 * time.Second,
		WriteTimeout: writeTimeout, Streams: streams, Metrics: bigMetrics,
	}))
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	defer func() {
		cancel()
		srv.Close()
		streams.Wait()
	}()
	s := &streamServer{srv: srv, streams: streams}
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
	if !c.closed(5 * time.Second) {
		t.Fatal("the node did not close a stream whose answers went unread")
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("flooder sent %d frames; +%d goroutines at the peak; heap in use %d MiB after", sent, peak, ms.HeapInuse>>20)
}
