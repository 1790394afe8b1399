package cluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// trickler is a raw TCP client that sends a request's headers and then
// its body (or the rest of its headers) one byte at a time, never
// finishing, as a slowloris attack does.
type trickler struct {
	conn   net.Conn
	closed chan time.Duration // when the server closed the connection, since the start
}

// startTrickler connects to addr, sends head, then one byte every tick
// until stop is closed or the server closes the connection.
func startTrickler(t *testing.T, wg *sync.WaitGroup, addr, head string, tick time.Duration, start time.Time, stop <-chan struct{}) *trickler {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	tr := &trickler{conn: conn, closed: make(chan time.Duration, 1)}
	wg.Add(2)
	go func() { // reads until the server closes: EOF (after a 408) or a reset
		defer wg.Done()
		_, _ = io.Copy(io.Discard, conn)
		tr.closed <- time.Since(start)
	}()
	go func() {
		defer wg.Done()
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return // closed by the server
				}
			}
		}
	}()
	return tr
}

// Fifty unauthenticated clients that send headers with a large
// Content-Length and then trickle the body, and ten that trickle their
// headers, are all cut within the read timeout (plus scheduling slack),
// although each keeps sending; meanwhile requests of legitimate clients
// are served, and an acquire that waits longer than the read timeout is
// granted, not cut.
func TestHTTP_TricklingClientsAreCut(t *testing.T) {
	const (
		readTimeout = time.Second
		slack       = 3 * time.Second // -race on two busy cores
		token       = "slow-client-test-token"
	)
	nodes := startCluster(t, 1, func(c *Config) {
		c.Token = token
		c.HTTPReadTimeout = readTimeout
	})
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	c.token = token

	// The long wait: alice's grant expires after 2.5 read timeouts, and
	// bob, waiting for it since before the tricklers arrive, gets it.
	mustStatus(t, c.acquire(addr, "long", "alice", 5*readTimeout/2, 0), 200, "alice acquires")
	type result struct {
		status int
		body   string
		err    error
	}
	waited := make(chan result, 1)
	waitStart := time.Now()
	go func() {
		body := fmt.Sprintf(`{"key":"long","owner":"bob","ttl_ms":60000,"wait_ms":%d}`, (10 * readTimeout).Milliseconds())
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/acquire", strings.NewReader(body))
		if err != nil {
			waited <- result{err: err}
			return
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.http.Do(req)
		if err != nil {
			waited <- result{err: err}
			return
		}
		raw, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		waited <- result{status: resp.StatusCode, body: string(raw), err: err}
	}()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var trs []*trickler
	defer func() {
		close(stop)
		for _, tr := range trs {
			_ = tr.conn.Close()
		}
		wg.Wait()
	}()
	start := time.Now()
	body := "POST /v1/acquire HTTP/1.1\r\nHost: lock\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"
	for range 50 {
		trs = append(trs, startTrickler(t, &wg, addr, body, 100*time.Millisecond, start, stop))
	}
	for range 10 {
		trs = append(trs, startTrickler(t, &wg, addr, "POST /v1/acquire HTTP/1.1\r\nHost: lock\r\nX-Pad: ", 100*time.Millisecond, start, stop))
	}

	// Legitimate requests go through while the tricklers hold their
	// connections.
	for i := range 10 {
		key := fmt.Sprintf("legit-%d", i)
		mustStatus(t, c.acquire(addr, key, "carol", time.Minute, 0), 200, "acquire while trickled")
		mustStatus(t, c.release(addr, key, "carol"), 200, "release while trickled")
	}
	if d := time.Since(start); d > readTimeout {
		t.Logf("the legitimate requests took %s (longer than the read timeout: not all of them overlapped the tricklers)", d)
	}

	bound := time.NewTimer(readTimeout + slack)
	defer bound.Stop()
	var latest time.Duration
	for i, tr := range trs {
		select {
		case d := <-tr.closed:
			latest = max(latest, d)
		case <-bound.C:
			t.Fatalf("trickler %d of %d still open %s after it connected (read timeout %s)", i, len(trs), readTimeout+slack, readTimeout)
		}
	}
	t.Logf("%d trickling connections closed by the server, the last %s after the start", len(trs), latest.Round(time.Millisecond))

	r := <-waited // bounded by wait_ms and the client's timeout
	if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, `"owner":"bob"`) {
		t.Fatalf("bob's long wait: status %d, body %s, error %v; want bob's grant", r.status, r.body, r.err)
	}
	if took := time.Since(waitStart); took < 2*readTimeout {
		t.Fatalf("bob's wait ended after %s, before alice's grant could expire", took)
	}
}

// On a node: with every connection slot held by clients that send
// nothing, a legitimate request is served only once the read timeout has
// freed a slot, and then it is.
func TestHTTP_NodeHoldsAtMostMaxConns(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	nodes := startCluster(t, 1, func(c *Config) {
		c.HTTPReadTimeout = readTimeout
		c.MaxWaits = 1
		c.MaxConns = 3
	})
	addr := nodes[0].HTTPAddr()
	start := time.Now()
	closed := make(chan time.Duration, 3)
	var conns []net.Conn
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	var wg sync.WaitGroup
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		wg.Wait()
	}()
	for _, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(io.Discard, conn)
			closed <- time.Since(start)
		}()
	}
	// The three silent connections were dialled first and the node
	// accepts in order, so they hold the three slots.
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "k", "o", time.Minute, 0), 200, "acquire once a slot is free")
	served := time.Since(start)
	// A silent connection is closed no sooner than the read timeout
	// after it was accepted, which was after start.
	if served < readTimeout {
		t.Fatalf("the request was served after %s, before the read timeout (%s) could free a slot: more than MaxConns were open", served, readTimeout)
	}
	first := <-closed
	t.Logf("first silent connection closed after %s, the request served after %s", first.Round(time.Millisecond), served.Round(time.Millisecond))
}
