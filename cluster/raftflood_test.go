package cluster

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/peer"
)

// 3,000 idle connections to a leader's raft port (a stranger that
// connects and says nothing) cost at most peer.MaxHandshakes goroutines
// and sockets, each for at most peer.HandshakeTimeout; the cluster keeps
// committing meanwhile, over the connections its peers hold. Before the
// bound, each one held a goroutine and two descriptors for 10 s.
func TestRaftFlood_IdleConnectionsAreBounded(t *testing.T) {
	_, leader, c := startLedCluster(t, 3)
	mustStatus(t, c.acquire(leader.HTTPAddr(), "warm", "o", time.Minute, 0), 200, "acquire before the flood")
	before := runtime.NumGoroutine()

	const flood = 3000
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range flood {
		conn, err := net.Dial("tcp", leader.RaftAddr())
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, conn)
	}
	// Every one was accepted (or closed at once) by now: the peak is in.
	peak := 0
	for i := range 20 {
		mustStatus(t, c.acquire(leader.HTTPAddr(), "during", "o", time.Minute, 0), 200, "acquire during the flood")
		mustStatus(t, c.release(leader.HTTPAddr(), "during", "o"), 200, "release during the flood")
		peak = max(peak, runtime.NumGoroutine()-before)
		if handshaking, _ := leader.stores.layer.Open(); handshaking > peer.MaxHandshakes {
			t.Fatalf("round %d: %d connections in their handshake, the bound is %d", i, handshaking, peer.MaxHandshakes)
		}
	}
	// The goroutines of the connections in their handshake, and a
	// margin for the HTTP requests of this test.
	if limit := peer.MaxHandshakes + 64; peak > limit {
		t.Fatalf("%d idle raft connections grew the process by %d goroutines, want at most %d", flood, peak, limit)
	}
	t.Logf("%d idle raft connections: +%d goroutines at the peak", flood, peak)
}
