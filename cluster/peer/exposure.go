package peer

import (
	"fmt"
	"net"
	"strings"
)

// MinSecretLen is the shortest raft secret accepted. A node shows a MAC
// of the secret before its peer has proved anything only when it dials
// out, to an impostor at a member's address, say; a short secret could
// then be guessed offline.
const MinSecretLen = 16

// CheckExposure refuses raft listening on bind, an address other hosts
// can reach, when nothing authenticates its peers (no TLS, no secret):
// whoever reaches that port could append entries to the log, grant and
// release any lock, and depose the leader by raising the term. It looks
// at the address raft listens on, not the advertised one: who can
// connect depends on the former; a forwarder that makes a loopback
// listener reachable from elsewhere is set up, and secured, on purpose.
func CheckExposure(bind string) error {
	host, _, err := net.SplitHostPort(bind)
	if err != nil || isLoopbackHost(host) {
		return nil // a malformed address is reported on its own
	}
	return fmt.Errorf("cluster: raft would listen on %s, which is not a loopback address, with nothing to authenticate its peers: "+
		"anyone who reaches that port could write the lock table. Set a raft secret (Config.RaftSecret, --raft-secret or "+
		"LOCKCLUSTER_RAFT_SECRET; the same on every node), or a token (Config.Token, --token or LOCKCLUSTER_TOKEN; "+
		"used as the raft secret when none is given), or TLS (Config.TLS, --tls-cert/--tls-key/--tls-ca); "+
		"or, on a network where every host is trusted, set Config.RaftInsecure (--raft-insecure)", bind)
}

// isLoopbackHost reports whether host names this machine only: a
// loopback IP or "localhost". Any other name may resolve to an address
// others can reach.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
