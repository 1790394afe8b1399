package peer

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// A stranger without the raft secret that opens twice MaxHandshakes
// silent connections, from one address, from the peer's own address or
// spread over many, never makes a peer's dial fail: its connections give
// way to newer ones (the peer's) instead of refusing them, and one address
// holds at most MaxHandshakesPerSource of the slots. Before, the first
// MaxHandshakes silent connections held every slot for HandshakeTimeout
// and the peer's dial was refused.
func TestStreamLayer_SilentStrangerCannotRefuseAPeer(t *testing.T) {
	const secret = "stranger-raft-secret-0123456789"
	spread := make([]string, 16)
	for i := range spread {
		spread[i] = fmt.Sprintf("127.0.0.%d", i+2)
	}
	for _, tc := range []struct {
		name string
		from []string // the stranger's source addresses
		// most is the most of its connections that may be in their
		// handshake at once.
		most int
	}{
		{"one other address", []string{"127.0.0.2"}, MaxHandshakesPerSource},
		{"the peer's own address", []string{"127.0.0.1"}, MaxHandshakesPerSource},
		{"16 addresses", spread, MaxHandshakes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refused atomic.Int64
			a, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "c", Key: []byte(secret),
				OnRefuse: func(error) { refused.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			d, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "c", Key: []byte(secret)})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()

			const n = 2 * MaxHandshakes
			conns := make([]net.Conn, 0, n)
			defer func() {
				for _, c := range conns {
					_ = c.Close()
				}
			}()
			for i := range n {
				dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.from[i%len(tc.from)])}}
				c, err := dialer.Dial("tcp", a.Addr().String())
				if err != nil {
					t.Fatalf("the stranger's dial %d: %v", i, err)
				}
				conns = append(conns, c)
			}
			// Every one of them has been taken in or turned away.
			poll.Until(t, 10*time.Second, "the stranger's connections taken in or turned away", func() bool {
				handshaking, _ := a.Open()
				return int64(handshaking)+refused.Load() >= n
			})
			held, _ := a.Open()

			served := make(chan error, 1)
			go func() {
				in, err := a.Accept()
				if err == nil {
					_, err = in.Read(make([]byte, 2))
					_ = in.Close()
				}
				served <- err
			}()
			out, err := d.Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
			if err != nil {
				t.Fatalf("a peer's dial while the stranger holds its connections: %v", err)
			}
			defer out.Close()
			if _, err := out.Write([]byte("ok")); err != nil {
				t.Fatal(err)
			}
			if err := <-served; err != nil {
				t.Fatalf("the peer's connection, served: %v", err)
			}
			if held > tc.most {
				t.Fatalf("%d of the stranger's connections in their handshake, want at most %d", held, tc.most)
			}
			if handshaking, _ := a.Open(); handshaking > MaxHandshakes {
				t.Fatalf("%d connections in their handshake, the bound is %d", handshaking, MaxHandshakes)
			}
		})
	}
}
