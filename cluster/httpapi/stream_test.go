package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/internal/testkit/poll"
)

const streamToken = "stream-token-0123456789"

// blockingStore holds an acquire of the key "block" until its context
// ends, and reports that it ended.
type blockingStore struct {
	*fakeStore
	ended chan string // the owner of each held acquire whose context ended, as its request named it
}

func (s *blockingStore) Acquire(ctx context.Context, req httpapi.Request) ([]uint64, error) {
	key, owner := req.Keys[0], req.Owner
	if key == "block" {
		<-ctx.Done()
		_, named, _ := access.SplitOwner(owner) // the Store is given the owner recorded for the credential
		s.ended <- named
		return nil, ctx.Err()
	}
	return s.fakeStore.Acquire(ctx, req)
}

// streamServer serves the API with a stream-counting WaitGroup on a real
// listener; cancel ends every request's base context (node shutdown).
type streamServer struct {
	srv     *httptest.Server
	store   *blockingStore
	streams *sync.WaitGroup
	cancel  context.CancelFunc
}

// bigMetrics stands for a node's /metrics: an answer far larger than any
// request frame.
var bigMetrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	_, _ = w.Write(bytes.Repeat([]byte("metric 1\n"), 50_000))
})

func newStreamServer(t *testing.T, readTimeout time.Duration) *streamServer {
	t.Helper()
	return newStreamServerWith(t, httpapi.Options{
		NodeID: "n1", ClusterID: "c1", Credentials: operator(streamToken), ReadTimeout: readTimeout, Metrics: bigMetrics,
	})
}

// newStreamServerWith is newStreamServer with opts (Streams is set here).
func newStreamServerWith(t *testing.T, opts httpapi.Options) *streamServer {
	t.Helper()
	store := &blockingStore{fakeStore: newFakeStore(), ended: make(chan string, 16)}
	s := newStreamServerOn(t, store, opts)
	s.store = store
	return s
}

// newStreamServerOn serves store with opts (Streams is set here); the
// test's end, or cancel, ends every request's base context.
func newStreamServerOn(t *testing.T, store httpapi.Store, opts httpapi.Options) *streamServer {
	t.Helper()
	s := &streamServer{streams: &sync.WaitGroup{}}
	base, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	opts.Streams = s.streams
	s.srv = httptest.NewUnstartedServer(httpapi.New(store, opts))
	s.srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	s.srv.Start()
	t.Cleanup(func() {
		cancel()
		s.srv.Close()
		s.streams.Wait()
	})
	return s
}

// streamsEnded reports whether every stream the node serves ended within
// d.
func (s *streamServer) streamsEnded(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.streams.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false // the goroutine above ends with the test's cleanup
	}
}

// ended waits for a held acquire's context to end and returns its owner.
func (s *streamServer) ended(t *testing.T) string {
	t.Helper()
	select {
	case o := <-s.store.ended:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no held acquire's context ended within 10s")
		return ""
	}
}

// streamClient is the client end of one stream, written by hand.
type streamClient struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// open upgrades a connection with the given headers and returns the
// upgrade's answer; the stream when it is 101.
func (s *streamServer) open(t *testing.T, header ...string) (*http.Response, *streamClient) {
	t.Helper()
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.srv.Listener.Addr().String()+stream.Path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return resp, nil
	}
	return resp, &streamClient{t: t, conn: conn, br: br}
}

func (s *streamServer) mustOpen(t *testing.T) *streamClient {
	t.Helper()
	resp, c := s.open(t, "Connection", "Upgrade", "Upgrade", stream.Protocol, api.HeaderAuthorization, api.Bearer(streamToken))
	if c == nil {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	return c
}

func (c *streamClient) send(r stream.Request) {
	c.t.Helper()
	b, err := stream.AppendRequest(nil, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *streamClient) answer() stream.Answer {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := stream.ReadFrame(c.br, nil, stream.MaxAnswer, nil)
	if err != nil {
		c.t.Fatalf("read an answer: %v", err)
	}
	a, err := stream.ParseAnswer(f)
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

// closed reports whether the node closed the stream with no more than d
// between two frames. Whole answers read on the way are skipped: a request
// that shutdown ends may be answered before the stream closes, or not, as
// the race falls; and a node that queued many answers takes a while to
// send them on a loaded machine, which is not keeping the stream open.
func (c *streamClient) closed(d time.Duration) bool {
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(d))
		_, err := stream.ReadFrame(c.br, nil, stream.MaxAnswer, nil)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		if err != nil {
			return true
		}
	}
}

// Each frame is answered as the same plain request is: status and body.
func TestStream_AnswersAsPlainHTTP(t *testing.T) {
	s := newStreamServer(t, time.Second)
	c := s.mustOpen(t)
	plain := newHandler(newFakeStore(), httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: operator(streamToken), Metrics: bigMetrics})
	auth := []string{api.HeaderAuthorization, api.Bearer(streamToken)}
	cases := []struct{ method, target, body string }{
		{http.MethodPost, api.PathAcquire, `{"key":"k","owner":"o","ttl_ms":1000}`},
		{http.MethodPost, api.PathAcquire, `{"key":"k","owner":"p","ttl_ms":1000}`},
		{http.MethodPost, api.PathAcquire, `{"key":"k",`},
		{http.MethodGet, api.PathLock + "?key=k", ""},
		{http.MethodGet, "/v1/nowhere", ""},
		{http.MethodGet, api.PathRelease, ""},
		{http.MethodPost, api.PathRelease, `{"key":"k","owner":"o"}`},
		{http.MethodGet, "/metrics", ""}, // 450 kB: an answer is not bounded by MaxFrame
	}
	for i, tc := range cases {
		c.send(stream.Request{ID: uint64(i + 1), Method: tc.method, Target: tc.target, Body: []byte(tc.body)})
		got := c.answer()
		want := do(plain, tc.method, tc.target, tc.body, auth...)
		if got.ID != uint64(i+1) || got.Status != want.status || string(got.Body) != string(want.raw) {
			t.Fatalf("%s %s %s: stream answered %d %s, plain %d %s", tc.method, tc.target, tc.body, got.Status, got.Body, want.status, want.raw)
		}
	}
}

// The upgrade goes through the token and cluster checks, and needs the
// upgrade headers; a frame cannot open a stream inside the stream.
func TestStream_UpgradeIsCheckedLikeAnyRequest(t *testing.T) {
	s := newStreamServer(t, time.Second)
	up := []string{"Connection", "Upgrade", "Upgrade", stream.Protocol}
	if resp, _ := s.open(t, up...); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %s", resp.Status)
	}
	if resp, _ := s.open(t, append(up, api.HeaderAuthorization, api.Bearer(streamToken), api.HeaderClusterID, "other")...); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another cluster: %s", resp.Status)
	}
	if resp, _ := s.open(t, api.HeaderAuthorization, api.Bearer(streamToken)); resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("no upgrade headers: %s", resp.Status)
	}
	c := s.mustOpen(t)
	c.send(stream.Request{ID: 1, Method: http.MethodGet, Target: stream.Path})
	if a := c.answer(); a.Status != http.StatusUpgradeRequired {
		t.Fatalf("a stream frame for %s: %d %s", stream.Path, a.Status, a.Body)
	}
}

// A cancel frame ends the request's context on the node, as closing a
// plain connection does; the others go on. Closing the stream ends all.
func TestStream_CancelAndCloseEndTheRequests(t *testing.T) {
	s := newStreamServer(t, time.Second)
	c := s.mustOpen(t)
	hold := func(id uint64, owner string) {
		c.send(stream.Request{ID: id, Method: http.MethodPost, Target: api.PathAcquire,
			Body: []byte(`{"key":"block","owner":"` + owner + `","ttl_ms":1000,"wait_ms":60000}`)})
	}
	hold(1, "a")
	hold(2, "b")
	c.send(stream.Request{ID: 2, Cancel: true})
	if got := s.ended(t); got != "b" {
		t.Fatalf("the context of %q ended, want b's", got)
	}
	a := c.answer() // the cancelled request is still answered; the client ignores it
	if a.ID != 2 {
		t.Fatalf("answer for %d first", a.ID)
	}
	c.send(stream.Request{ID: 3, Method: http.MethodGet, Target: api.PathStatus})
	if a := c.answer(); a.ID != 3 || a.Status != http.StatusOK {
		t.Fatalf("status while a is held: %d %d", a.ID, a.Status)
	}
	select {
	case got := <-s.store.ended:
		t.Fatalf("%s's context ended before the stream closed", got)
	default:
	}
	_ = c.conn.Close()
	if got := s.ended(t); got != "a" {
		t.Fatalf("the context of %q ended, want a's", got)
	}
	waitStreams(t, s.streams)
}

// A frame that trickles is cut at the read timeout from its first byte;
// a malformed one closes the stream; so does the node's shutdown.
func TestStream_SlowMalformedAndShutdownCloseTheStream(t *testing.T) {
	s := newStreamServer(t, 200*time.Millisecond)
	slow := s.mustOpen(t)
	if _, err := slow.conn.Write([]byte{10, 1}); err != nil { // 2 of 11 bytes
		t.Fatal(err)
	}
	start := time.Now()
	if !slow.closed(5 * time.Second) {
		t.Fatal("a trickled frame was not cut")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cut after %v, want about the 200ms read timeout", d)
	}

	bad := s.mustOpen(t)
	if _, err := bad.conn.Write([]byte{2, 1, 9}); err != nil { // kind 9
		t.Fatal(err)
	}
	if !bad.closed(5 * time.Second) {
		t.Fatal("a malformed frame did not close the stream")
	}

	idle := s.mustOpen(t)
	idle.send(stream.Request{ID: 1, Method: http.MethodPost, Target: api.PathAcquire,
		Body: []byte(`{"key":"block","owner":"w","ttl_ms":1000,"wait_ms":60000}`)})
	if idle.closed(400 * time.Millisecond) {
		t.Fatal("a stream with a request in progress was closed (the read timeout applies to frames only)")
	}
	s.cancel()
	if got := s.ended(t); got != "w" {
		t.Fatalf("the context of %q ended, want w's", got)
	}
	if !idle.closed(5 * time.Second) {
		t.Fatal("shutdown did not close the stream")
	}
	waitStreams(t, s.streams)
}

// Requests in progress on one stream are capped: one more is answered
// 429 at once, and the stream goes on.
func TestStream_RequestsInProgressAreCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("holds MaxStreamRequests requests")
	}
	s := newStreamServer(t, time.Second)
	c := s.mustOpen(t)
	var buf []byte
	for i := 1; i <= httpapi.MaxStreamRequests; i++ {
		buf, _ = stream.AppendRequest(buf, stream.Request{ID: uint64(i), Method: http.MethodPost, Target: api.PathAcquire,
			Body: []byte(`{"key":"block","owner":"o","ttl_ms":1000,"wait_ms":60000}`)})
	}
	if _, err := c.conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	c.send(stream.Request{ID: 1 << 20, Method: http.MethodGet, Target: api.PathStatus})
	a := c.answer()
	var body api.ErrorBody
	_ = json.Unmarshal(a.Body, &body)
	if a.ID != 1<<20 || a.Status != http.StatusTooManyRequests || body.Code != api.CodeFull {
		t.Fatalf("one request over the cap: %d %d %s", a.ID, a.Status, a.Body)
	}
	_ = c.conn.Close()
	for i := 0; i < httpapi.MaxStreamRequests; i++ {
		s.ended(t)
	}
	waitStreams(t, s.streams)
}

func waitStreams(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	poll.Until(t, 5*time.Second, "every stream to end", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}
