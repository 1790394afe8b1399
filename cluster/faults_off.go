//go:build !faults

package cluster

import "time"

// Fault-injection points. The default build compiles them to the plain
// calls; the `faults` build tag (faults_on.go) lets a test skew this
// node's clock and redirect its outbound connections through proxies.

// faultNow is the node's wall clock.
func faultNow() time.Time { return time.Now() }

// faultSince is the node's monotonic time elapsed since t.
func faultSince(t time.Time) time.Duration { return time.Since(t) }

// faultDialAddr is the address actually dialled to reach addr (a raft
// peer or a member's HTTP API).
func faultDialAddr(addr string) string { return addr }
