package peer

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Every raft connection opens with a handshake, before raft reads or
// writes a byte of it. It names the cluster, and when the nodes have a
// secret (Config.Key: the node's raft secret, never the API token) both ends
// prove they know it without sending it: each sends a fresh random
// nonce, then each sends
// HMAC-SHA256(secret, role | cluster ID | dialer's nonce | acceptor's
// nonce). The role differs per direction, so an answer reflected back to
// the node that made it does not verify; the nonces are fresh per
// connection, so a recorded answer cannot be replayed. The dialer proves
// itself first: a node shows a MAC of the secret only to a peer that has
// shown one, so an outsider that connects learns nothing to guess the
// secret from offline.
//
//	dialer -> acceptor  magic "ZLR2", len(id), id, mode, nonce_d (32 bytes)
//	acceptor -> dialer  status, nonce_a (32 bytes)
//	mode secret only:
//	dialer -> acceptor  mac_d (32 bytes)
//	acceptor -> dialer  status, mac_a (32 bytes)
//
// The handshake authenticates who opened the connection, not the bytes
// that follow: it neither encrypts raft's traffic nor protects it from a
// machine on the network path that can rewrite it. TLS does both.

// handshakeMagic opens every raft connection. A version bump changes the
// magic (ZLR1 had no response and no secret).
const handshakeMagic = "ZLR2"

// MaxClusterIDLen is the longest cluster ID: it fits the handshake's
// length byte.
const MaxClusterIDLen = 128

const (
	nonceLen = 32
	macLen   = sha256.Size
)

// Handshake modes: whether the dialer has a secret to prove.
const (
	modeNone   byte = 0
	modeSecret byte = 1
)

// Acceptor answers. Anything but statusOK is followed by the acceptor
// closing the connection.
const (
	statusOK           byte = 0
	statusWrongCluster byte = 1
	statusModeMismatch byte = 2
	statusBadProof     byte = 3
)

// MAC labels, one per direction.
const (
	labelDialer   = "zerotal-lock raft handshake v2: dialer"
	labelAcceptor = "zerotal-lock raft handshake v2: acceptor"
)

var (
	// ErrWrongCluster marks a peer that belongs to another cluster.
	ErrWrongCluster = errors.New("cluster: peer belongs to another cluster")
	// ErrRaftAuth marks a peer that did not prove it knows the raft
	// secret, or that refused this node's proof.
	ErrRaftAuth = errors.New("cluster: raft peer authentication failed")
)

// handshakeTimeout bounds the handshake of an outbound connection
// dialled without a timeout (inbound ones: HandshakeTimeout).
const handshakeTimeout = 10 * time.Second

// handshakeMAC is the proof of the side labelled label.
func handshakeMAC(key []byte, label, clusterID string, nonceD, nonceA []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	m.Write([]byte{byte(len(clusterID))})
	m.Write([]byte(clusterID))
	m.Write(nonceD)
	m.Write(nonceA)
	return m.Sum(nil)
}

func newNonce() ([]byte, error) {
	b := make([]byte, nonceLen)
	_, err := rand.Read(b)
	return b, err
}

func modeOf(key []byte) byte {
	if len(key) > 0 {
		return modeSecret
	}
	return modeNone
}

// withDeadline runs f with c's deadline set timeout ahead, then clears it
// (raft sets its own from there on).
func withDeadline(c net.Conn, timeout time.Duration, f func() error) error {
	if timeout <= 0 {
		timeout = handshakeTimeout
	}
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	return c.SetDeadline(time.Time{})
}

// dialHandshake runs the dialer's side on a new outbound connection.
func dialHandshake(c net.Conn, clusterID string, key []byte, timeout time.Duration) error {
	return withDeadline(c, timeout, func() error {
		nonceD, err := newNonce()
		if err != nil {
			return err
		}
		mode := modeOf(key)
		msg := make([]byte, 0, len(handshakeMagic)+2+len(clusterID)+nonceLen)
		msg = append(msg, handshakeMagic...)
		msg = append(msg, byte(len(clusterID)))
		msg = append(msg, clusterID...)
		msg = append(msg, mode)
		msg = append(msg, nonceD...)
		if _, err := c.Write(msg); err != nil {
			return err
		}
		answer := make([]byte, 1+nonceLen)
		if _, err := io.ReadFull(c, answer); err != nil {
			return fmt.Errorf("no answer to the handshake (a node of an older version, or not a lockcluster node?): %w", err)
		}
		if err := refusal(answer[0], clusterID, mode); err != nil {
			return err
		}
		if mode == modeNone {
			return nil
		}
		nonceA := answer[1:]
		if _, err := c.Write(handshakeMAC(key, labelDialer, clusterID, nonceD, nonceA)); err != nil {
			return err
		}
		proof := make([]byte, 1+macLen)
		if _, err := io.ReadFull(c, proof); err != nil {
			return fmt.Errorf("no answer to this node's proof: %w", err)
		}
		if err := refusal(proof[0], clusterID, mode); err != nil {
			return err
		}
		if !hmac.Equal(proof[1:], handshakeMAC(key, labelAcceptor, clusterID, nonceD, nonceA)) {
			return fmt.Errorf("%w: the peer did not prove it knows the raft secret (the nodes have different raft secrets)", ErrRaftAuth)
		}
		return nil
	})
}

// refusal turns an acceptor's status into the dialer's error.
func refusal(status byte, clusterID string, mode byte) error {
	switch status {
	case statusOK:
		return nil
	case statusWrongCluster:
		return fmt.Errorf("%w: the peer is not in cluster %q", ErrWrongCluster, clusterID)
	case statusModeMismatch:
		if mode == modeSecret {
			return fmt.Errorf("%w: this node has a raft secret and the peer has none", ErrRaftAuth)
		}
		return fmt.Errorf("%w: the peer requires a raft secret and this node has none", ErrRaftAuth)
	case statusBadProof:
		return fmt.Errorf("%w: the peer refused this node's proof (the nodes have different raft secrets)", ErrRaftAuth)
	}
	return fmt.Errorf("cluster: raft handshake: unknown answer %d from the peer", status)
}

// acceptHandshake runs the acceptor's side on an inbound connection.
func acceptHandshake(c net.Conn, clusterID string, key []byte) error {
	return withDeadline(c, HandshakeTimeout, func() error {
		head := make([]byte, len(handshakeMagic)+1)
		if _, err := io.ReadFull(c, head); err != nil {
			return fmt.Errorf("cluster: raft handshake: %w", err)
		}
		if string(head[:len(handshakeMagic)]) != handshakeMagic {
			return errors.New("cluster: raft connection without the lockcluster handshake (not a lockcluster node, or another version)")
		}
		rest := make([]byte, int(head[len(handshakeMagic)])+1+nonceLen)
		if _, err := io.ReadFull(c, rest); err != nil {
			return fmt.Errorf("cluster: raft handshake: %w", err)
		}
		id, mode, nonceD := rest[:len(rest)-1-nonceLen], rest[len(rest)-1-nonceLen], rest[len(rest)-nonceLen:]
		if string(id) != clusterID {
			writeStatus(c, statusWrongCluster)
			return fmt.Errorf("%w: it is in cluster %q, this node in %q", ErrWrongCluster, id, clusterID)
		}
		if mine := modeOf(key); mode != mine {
			writeStatus(c, statusModeMismatch)
			if mine == modeSecret {
				return fmt.Errorf("%w: the peer sent no proof of the raft secret (it has no raft secret)", ErrRaftAuth)
			}
			return fmt.Errorf("%w: the peer has a raft secret and this node has none", ErrRaftAuth)
		}
		nonceA, err := newNonce()
		if err != nil {
			return err
		}
		if _, err := c.Write(append([]byte{statusOK}, nonceA...)); err != nil {
			return err
		}
		if mode == modeNone {
			return nil
		}
		macD := make([]byte, macLen)
		if _, err := io.ReadFull(c, macD); err != nil {
			return fmt.Errorf("cluster: raft handshake: %w", err)
		}
		if !hmac.Equal(macD, handshakeMAC(key, labelDialer, clusterID, nonceD, nonceA)) {
			writeStatus(c, statusBadProof)
			return fmt.Errorf("%w: the peer did not prove it knows the raft secret (a different raft secret, or not a member)", ErrRaftAuth)
		}
		_, err = c.Write(append([]byte{statusOK}, handshakeMAC(key, labelAcceptor, clusterID, nonceD, nonceA)...))
		return err
	})
}

// writeStatus sends a refusal, padded to the length the dialer reads.
func writeStatus(c net.Conn, status byte) {
	msg := make([]byte, 1+max(nonceLen, macLen))
	msg[0] = status
	_, _ = c.Write(msg)
}

// handshakeConn is an inbound connection that passed its handshake, as
// raft serves it; its Close tells the StreamLayer.
type handshakeConn struct {
	net.Conn
	release   func() // tells the StreamLayer, once, that its server closed it
	closeOnce sync.Once
}

// Close closes the connection and tells the StreamLayer its server is done
// with it.
func (c *handshakeConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		if c.release != nil {
			c.release()
		}
	})
	return err
}
