package cluster

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// offsetClock is the host's clock moved by offset; it counts its Since
// calls.
type offsetClock struct {
	offset time.Duration
	since  atomic.Int64
}

func (c *offsetClock) Now() time.Time { return time.Now().Add(c.offset) }

func (c *offsetClock) Since(t time.Time) time.Duration {
	c.since.Add(1)
	return time.Since(t)
}

// Config.Clock gives a new cluster its time origin (Now) and advances the
// leader's clock (Since).
func TestConfig_ClockIsTheLeadersClock(t *testing.T) {
	clk := &offsetClock{offset: 100 * time.Hour}
	cfg := testConfig(t, "n1")
	cfg.Clock = clk
	n := startNode(t, cfg)
	waitFor(t, 10*time.Second, "the takeover's tick", func() bool {
		return time.Unix(0, n.fsm.Time()).After(time.Now().Add(99 * time.Hour))
	})
	if clk.since.Load() == 0 {
		t.Fatal("the leader never asked Config.Clock for the elapsed time")
	}
}

// Config.DialAddr rewrites the addresses a node dials: a join sent to a
// name that does not resolve reaches the member it is mapped to, and the
// leader's raft connections to the new member go through it too.
func TestConfig_DialAddrRewritesOutboundConnections(t *testing.T) {
	var (
		mu      sync.Mutex
		dialled = map[string]bool{}
		to      = map[string]string{}
	)
	dialAddr := func(addr string) string {
		mu.Lock()
		defer mu.Unlock()
		dialled[addr] = true
		if a, ok := to[addr]; ok {
			return a
		}
		return addr
	}
	cfg1 := testConfig(t, "n1")
	cfg1.DialAddr = dialAddr
	n1 := startNode(t, cfg1)
	const join = "member.invalid:1"
	mu.Lock()
	to[join] = n1.HTTPAddr()
	mu.Unlock()
	cfg2 := testConfig(t, "n2")
	cfg2.Join, cfg2.BootstrapSelf = join, false
	cfg2.DialAddr = dialAddr
	n2 := startNode(t, cfg2)
	waitFor(t, 10*time.Second, "n1 to dial n2's raft address", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return dialled[n2.RaftAddr()]
	})
	mu.Lock()
	defer mu.Unlock()
	if !dialled[join] {
		t.Fatalf("DialAddr saw %v; want the join address", dialled)
	}
}
