package peer

import "fmt"

// MinSecretLen is the shortest raft secret accepted. A node shows a MAC
// of the secret before its peer has proved anything only when it dials
// out, to an impostor at a member's address, say; a short secret could
// then be guessed offline.
const MinSecretLen = 16

// ErrNoRaftAuth is the error of a node whose raft port, at bind, nothing
// would authenticate (no TLS, no secret): whoever reaches that port could
// append entries to the log, grant and release any lock, and depose the
// leader by raising the term. Loopback included: any process of the host
// could.
func ErrNoRaftAuth(bind string) error {
	return fmt.Errorf("cluster: raft on %s would have nothing to authenticate its peers: "+
		"anyone who reaches that port could write the lock table. Set a raft secret, the same on every node and "+
		"at least %d bytes (Config.RaftSecret, --raft-secret-file or LOCKCLUSTER_RAFT_SECRET; a random one: "+
		"openssl rand -hex 32), or TLS (Config.TLS, --tls-cert/--tls-key/--tls-ca); or, where every host and "+
		"process is trusted, set Config.RaftInsecure (--raft-insecure)", bind, MinSecretLen)
}
