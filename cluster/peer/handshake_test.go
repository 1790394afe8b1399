package peer

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// The raft handshake refuses connections from another cluster and from
// anything that is not a lockcluster node.
func TestHandshake_OtherClusterAndRawConnectionsAreRefused(t *testing.T) {
	refusals := make(chan error, 8)
	a, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "alpha", OnRefuse: func(err error) { refusals <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "beta"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	same, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()

	// read dials a with dial and returns what a's side of the connection
	// reads (after the handshake) and the dialer's error.
	read := func(dial func() (net.Conn, error)) (acceptErr, dialErr error) {
		t.Helper()
		accepted := acceptOne(a, refusals, 1)
		out, dialErr := dial()
		if dialErr == nil {
			defer out.Close()
			if _, err := out.Write([]byte("hello, world")); err != nil {
				t.Fatal(err)
			}
		}
		return <-accepted, dialErr
	}
	if aErr, dErr := read(func() (net.Conn, error) { return same.Dial(raft.ServerAddress(a.Addr().String()), time.Second) }); aErr != nil || dErr != nil {
		t.Fatalf("same cluster refused: %v / %v", aErr, dErr)
	}
	aErr, dErr := read(func() (net.Conn, error) { return b.Dial(raft.ServerAddress(a.Addr().String()), time.Second) })
	if !errors.Is(aErr, ErrWrongCluster) || !strings.Contains(aErr.Error(), `"beta"`) || !strings.Contains(aErr.Error(), `"alpha"`) {
		t.Fatalf("other cluster: err %v, want ErrWrongCluster naming both IDs", aErr)
	}
	if !errors.Is(dErr, ErrWrongCluster) {
		t.Fatalf("other cluster: the dialer got %v, want ErrWrongCluster", dErr)
	}
	aErr, _ = read(func() (net.Conn, error) { return net.Dial("tcp", a.Addr().String()) })
	if aErr == nil || !strings.Contains(aErr.Error(), "handshake") {
		t.Fatalf("a raw connection: err %v, want a handshake error", aErr)
	}
}

// Every pairing of the two ends' secrets: equal secrets connect, anything
// else is refused at both ends with ErrRaftAuth, and no error holds a
// secret.
func TestHandshake_SecretPairings(t *testing.T) {
	const s1, s2 = "first-raft-secret-0123456789", "second-raft-secret-0123456789"
	for _, tc := range []struct {
		name           string
		acceptor, dial string
		ok             bool
	}{
		{"both without a secret", "", "", true},
		{"same secret", s1, s1, true},
		{"different secrets", s1, s2, false},
		{"dialer without a secret", s1, "", false},
		{"acceptor without a secret", "", s1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := func(s string) []byte {
				if s == "" {
					return nil
				}
				return []byte(s)
			}
			refusals := make(chan error, 8)
			a, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "c", Key: key(tc.acceptor), OnRefuse: func(err error) { refusals <- err }})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			d, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "c", Key: key(tc.dial)})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			accepted := acceptOne(a, refusals, 2)
			out, dialErr := d.Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
			if dialErr == nil {
				defer out.Close()
				if _, err := out.Write([]byte("ok")); err != nil {
					t.Fatal(err)
				}
			}
			acceptErr := <-accepted
			if tc.ok {
				if dialErr != nil || acceptErr != nil {
					t.Fatalf("refused: dialer %v, acceptor %v", dialErr, acceptErr)
				}
				return
			}
			if !errors.Is(dialErr, ErrRaftAuth) || !errors.Is(acceptErr, ErrRaftAuth) {
				t.Fatalf("dialer %v, acceptor %v: want ErrRaftAuth at both ends", dialErr, acceptErr)
			}
			for _, e := range []error{dialErr, acceptErr} {
				if strings.Contains(e.Error(), s1) || strings.Contains(e.Error(), s2) {
					t.Fatalf("an error holds a secret: %v", e)
				}
			}
			t.Logf("dialer: %v\nacceptor: %v", dialErr, acceptErr)
		})
	}
}

// A dialer that answers the challenge with a proof made for the other
// direction (what reflecting a node's own answer back would give) is
// refused: the direction is part of what is signed.
func TestHandshake_ReflectedProofIsRefused(t *testing.T) {
	const secretValue = "reflection-raft-secret-0123456789"
	refusals := make(chan error, 8)
	a, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "c", Key: []byte(secretValue), OnRefuse: func(err error) { refusals <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	accepted := acceptOne(a, refusals, 1)
	c, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nonceD := make([]byte, nonceLen)
	hello := append(append([]byte(handshakeMagic), 1, 'c', modeSecret), nonceD...)
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	answer := make([]byte, 1+nonceLen)
	if _, err := c.Read(answer); err != nil {
		t.Fatal(err)
	}
	// The attacker cannot compute this without the secret; the test can,
	// to show that even a MAC of the secret in the wrong role fails.
	reflected := handshakeMAC([]byte(secretValue), labelAcceptor, "c", nonceD, answer[1:])
	if _, err := c.Write(reflected); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; !errors.Is(err, ErrRaftAuth) {
		t.Fatalf("a proof for the acceptor's direction was accepted from a dialer: %v", err)
	}
}

// acceptOne reports, on the channel it returns, what became of the next
// inbound connection of a: the refusal of its handshake, or, once Accept
// returned it, the error of reading n bytes from it (nil once read). The
// goroutine ends when a is closed.
func acceptOne(a *StreamLayer, refusals <-chan error, n int) <-chan error {
	out := make(chan error, 1)
	served := make(chan error, 1)
	go func() {
		in, err := a.Accept()
		if err != nil {
			served <- err
			return
		}
		defer in.Close()
		_, err = io.ReadFull(in, make([]byte, n))
		served <- err
	}()
	go func() {
		select {
		case err := <-refusals:
			out <- err
		case err := <-served:
			out <- err
		}
	}()
	return out
}
