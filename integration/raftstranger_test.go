package integration

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// A stranger without the raft secret holds silent connections to every
// node's raft port, more than the handshake slots, and redials each one
// as soon as the node cuts it. With the leader killed, the two other
// voters still elect a leader within the usual election time: first with
// the stranger on one address (127.0.0.2, the nodes on 127.0.0.1), then
// spread over 16. Before, the stranger held every handshake slot, every
// dial between the survivors failed, and no leader was elected.
func TestCluster_StrangerOnTheRaftPortsDoesNotStopFailover(t *testing.T) {
	c := newCluster(t)
	targets := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		targets[i] = n.raftAddr
	}
	spread := make([]string, 16)
	for i := range spread {
		spread[i] = fmt.Sprintf("127.0.0.%d", i+2)
	}
	cl := c.client()
	for _, tc := range []struct {
		name string
		from []string
	}{
		{"one address", []string{"127.0.0.2"}},
		{"16 addresses", spread},
	} {
		leader := c.waitLeader(30 * time.Second)
		s := startStranger(targets, tc.from, 48)
		t.Cleanup(s.stop)
		// The stranger is at every node's bound: each has cut many of
		// its connections already.
		poll.Until(t, 30*time.Second, tc.name+": the stranger at every node's handshake bound", func() bool {
			return s.minCuts() >= 100
		})
		leader.kill()
		killed := time.Now()
		poll.Until(t, 10*time.Second, tc.name+": a new leader while the stranger holds the raft ports", func() bool {
			return c.agreedLeader(cl) != nil
		})
		t.Logf("%s: a new leader %v after the kill (the stranger's connections cut: %v)",
			tc.name, time.Since(killed).Round(time.Millisecond), s.cutCounts())
		s.stop()
		c.start(leader)
		c.waitLeader(30 * time.Second)
	}
}

// stranger dials raft ports from given source addresses, says nothing,
// and dials again once a connection is cut: at once after a connection
// the node held (its handshake timed out), a moment later after one it
// cut early (so that the stranger does not spin).
type stranger struct {
	quit chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
	done bool
	cuts []atomic.Int64 // per target
}

// startStranger starts perTarget dialling goroutines for each target.
func startStranger(targets, from []string, perTarget int) *stranger {
	s := &stranger{quit: make(chan struct{}), open: map[net.Conn]struct{}{}, cuts: make([]atomic.Int64, len(targets))}
	for ti, target := range targets {
		for g := range perTarget {
			ip := net.ParseIP(from[g%len(from)])
			s.wg.Go(func() { s.hold(target, ip, &s.cuts[ti]) })
		}
	}
	return s
}

// hold is one of the stranger's goroutines: at most 100,000 connections,
// until stop.
func (s *stranger) hold(target string, ip net.IP, cuts *atomic.Int64) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: time.Second}
	for range 100_000 {
		c, err := d.Dial("tcp", target)
		if err == nil && !s.track(c) {
			return
		}
		if err == nil {
			opened := time.Now()
			_, _ = c.Read(make([]byte, 64)) // silent: returns once the node cuts it
			s.untrack(c)
			cuts.Add(1)
			if time.Since(opened) >= time.Second {
				continue
			}
		}
		select {
		case <-s.quit:
			return
		case <-time.After(200 * time.Millisecond): // pacing, not synchronisation
		}
	}
}

func (s *stranger) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		_ = c.Close()
		return false
	}
	s.open[c] = struct{}{}
	return true
}

func (s *stranger) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
	_ = c.Close()
}

// stop closes the stranger's connections and waits for its goroutines.
func (s *stranger) stop() {
	s.mu.Lock()
	if !s.done {
		s.done = true
		close(s.quit)
		for c := range s.open {
			_ = c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// minCuts is the fewest connections any target has cut.
func (s *stranger) minCuts() int64 {
	least := s.cuts[0].Load()
	for i := range s.cuts {
		least = min(least, s.cuts[i].Load())
	}
	return least
}

func (s *stranger) cutCounts() []int64 {
	out := make([]int64, len(s.cuts))
	for i := range s.cuts {
		out[i] = s.cuts[i].Load()
	}
	return out
}
