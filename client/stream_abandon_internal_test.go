package client

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/api/stream"
)

// gatedConn holds every write until open is closed, and says when the
// first write is under way.
type gatedConn struct {
	net.Conn
	open    chan struct{}
	writing chan struct{}
	once    atomic.Bool
}

func (g *gatedConn) Write(b []byte) (int, error) {
	if !g.once.Swap(true) {
		close(g.writing)
	}
	<-g.open
	return g.Conn.Write(b)
}

// A request given up while its frame still waits behind another write is
// never sent: it must not reach the node later while its caller was told
// that it never left (the trace's WroteRequest was not called), which the
// client reads as "cannot have taken effect".
func TestStream_RequestAbandonedBeforeItsFrameWasWrittenIsNeverSent(t *testing.T) {
	client, node := net.Pipe()
	g := &gatedConn{Conn: client, open: make(chan struct{}), writing: make(chan struct{})}
	sc := &streamConn{conn: g, br: bufio.NewReader(client), pending: map[uint64]*streamCall{},
		kick: make(chan struct{}, 1), dead: make(chan struct{}), lastRead: time.Now(),
		t: &streamTransport{silent: time.Hour}}
	sc.idle = time.AfterFunc(time.Hour, func() {})
	go sc.write()
	t.Cleanup(func() { sc.fail(net.ErrClosed); _ = node.Close() })

	// The node reads frames and reports the targets of the requests.
	targets := make(chan string, 8)
	go func() {
		br := bufio.NewReader(node)
		for {
			frame, err := stream.ReadFrame(br, nil, stream.MaxFrame, nil)
			if err != nil {
				close(targets)
				return
			}
			if r, err := stream.ParseRequest(frame); err == nil && !r.Cancel {
				targets <- r.Target
			}
		}
	}()

	send := func(ctx context.Context, target string, wrote *atomic.Bool) error {
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, "http://node"+target, nil)
		_, err := sc.roundTrip(req, []byte("{}"))
		return err
	}

	// The first request's frame is being written, and the write is held.
	var firstWrote, abandonedWrote, lastWrote atomic.Bool
	go func() { _ = send(context.Background(), "/first", &firstWrote) }()
	<-g.writing

	// The second waits behind it, and its caller gives up.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- send(ctx, "/abandoned", &abandonedWrote) }()
	for {
		sc.mu.Lock()
		n := len(sc.pending)
		sc.mu.Unlock()
		if n == 2 {
			break
		}
		select {
		case <-time.After(time.Millisecond):
		case <-t.Context().Done():
			t.Fatal("the second request never queued")
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the abandoned request returned no error")
	}
	// What the caller was told when the call returned.
	toldWritten := abandonedWrote.Load()

	// The writes go on; a third request marks the end.
	close(g.open)
	go func() { _ = send(context.Background(), "/last", &lastWrote) }()
	var seen []string
	for target := range targets {
		seen = append(seen, target)
		if target == "/last" {
			break
		}
	}
	sentAnyway := false
	for _, s := range seen {
		sentAnyway = sentAnyway || s == "/abandoned"
	}
	if sentAnyway && !toldWritten {
		t.Fatalf("the node got %v: the abandoned request was sent after its caller was told it never was", seen)
	}
	t.Logf("the node got %v; the abandoned request reported written: %v", seen, toldWritten)
}
