package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// handshakeMagic opens every raft connection, followed by one length byte
// and the cluster ID. A version bump changes the magic.
const handshakeMagic = "ZLR1"

// maxClusterIDLen fits the handshake's length byte.
const maxClusterIDLen = 128

// errWrongCluster marks a peer that belongs to another cluster.
var errWrongCluster = errors.New("cluster: peer belongs to another cluster")

// writeHandshake sends the handshake on a new outbound connection.
func writeHandshake(c net.Conn, clusterID string, timeout time.Duration) error {
	if timeout > 0 {
		if err := c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}
		defer func() { _ = c.SetWriteDeadline(time.Time{}) }()
	}
	msg := make([]byte, 0, len(handshakeMagic)+1+len(clusterID))
	msg = append(msg, handshakeMagic...)
	msg = append(msg, byte(len(clusterID)))
	msg = append(msg, clusterID...)
	_, err := c.Write(msg)
	return err
}

// readHandshake reads and checks the handshake of an inbound connection.
func readHandshake(r io.Reader, clusterID string) error {
	head := make([]byte, len(handshakeMagic)+1)
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("cluster: raft handshake: %w", err)
	}
	if string(head[:len(handshakeMagic)]) != handshakeMagic {
		return errors.New("cluster: raft connection without the lockcluster handshake (not a lockcluster node, or another version)")
	}
	id := make([]byte, head[len(handshakeMagic)])
	if _, err := io.ReadFull(r, id); err != nil {
		return fmt.Errorf("cluster: raft handshake: %w", err)
	}
	if string(id) != clusterID {
		return fmt.Errorf("%w: it is in cluster %q, this node in %q", errWrongCluster, id, clusterID)
	}
	return nil
}

// handshakeConn checks the peer's handshake before its first byte reaches
// raft; on a mismatch every Read fails and raft drops the connection,
// logging the error.
type handshakeConn struct {
	net.Conn
	clusterID string
	once      sync.Once
	err       error
}

// handshakeTimeout bounds the TLS handshake and the cluster handshake of
// an inbound raft connection: a peer that connects and stays silent must
// not hold a goroutine and a socket for ever.
const handshakeTimeout = 10 * time.Second

func (c *handshakeConn) Read(p []byte) (int, error) {
	c.once.Do(func() {
		err := c.SetReadDeadline(time.Now().Add(handshakeTimeout))
		if err == nil {
			err = readHandshake(c.Conn, c.clusterID)
		}
		if err == nil {
			err = c.SetReadDeadline(time.Time{}) // raft sets its own from here on
		}
		if err != nil {
			c.err = fmt.Errorf("raft connection from %s refused: %w", c.RemoteAddr(), err)
		}
	})
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}
