// Package loopback hands out loopback TCP addresses for servers that must
// know their port before they bind it (a Raft peer list, a child process's
// flags).
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The kernel gives outbound connections source ports from the ephemeral
// range (32768-60999 on Linux by default), and a port that ":0" just
// returned is in that range too: between closing the probe and the server's
// bind, any client on the host could take it as a source port. Ports below
// the range are only ever taken by an explicit bind, so a port that binds
// now stays free unless another server picks the same one at random.
const (
	lowPort  = 20000
	highPort = 32000 // exclusive
	attempts = 200
)

// handed is the ports FreeAddr has returned in this process. A caller
// usually asks for several before it binds any (a cluster's peer list), and
// a port free at each probe could otherwise come back twice. It forgets
// them all once it holds half the range, so it never runs the range dry.
var handed struct {
	sync.Mutex
	ports map[int]bool
}

// FreeAddr returns "127.0.0.1:PORT" for a port that nothing listens on at
// this instant, chosen at random below the ephemeral range, and not
// returned before by this process.
func FreeAddr() (string, error) {
	handed.Lock()
	defer handed.Unlock()
	if handed.ports == nil || len(handed.ports) >= (highPort-lowPort)/2 {
		handed.ports = map[int]bool{}
	}
	for range attempts {
		port := lowPort + rand.IntN(highPort-lowPort)
		if handed.ports[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use: try another
		}
		if err := ln.Close(); err != nil {
			return "", err
		}
		handed.ports[port] = true
		return addr, nil
	}
	return "", fmt.Errorf("loopback: no free port in %d-%d after %d attempts", lowPort, highPort-1, attempts)
}

// FreePort is FreeAddr's port number.
func FreePort() (int, error) {
	addr, err := FreeAddr()
	if err != nil {
		return 0, err
	}
	_, p, _ := net.SplitHostPort(addr)
	return strconv.Atoi(p)
}

// Fataler is the part of testing.TB that MustFreeAddr needs (this package
// is also linked into the lockcluster binary, which must not import
// testing).
type Fataler interface {
	Helper()
	Fatal(args ...any)
}

// MustFreeAddr is FreeAddr for tests: it fails t when no port is free.
func MustFreeAddr(t Fataler) string {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
