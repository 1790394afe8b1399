package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/cluster/peer"
	"github.com/zerotal/lock/internal/logbridge"
)

// probeTimeout bounds the leader's question at a raft address.
const probeTimeout = 5 * time.Second

// raftAnswer is what the node at a raft address said of itself.
type raftAnswer struct {
	id    raft.ServerID
	empty bool // it has no log, snapshot or configuration and follows no leader
}

// askAtRaftAddr asks whatever listens at addr, over raft's own transport,
// who it is and whether it has raft state. The connection opens with the
// raft handshake, so the answer comes from a node of this cluster ID that
// knows the raft secret (or has a certificate of the cluster's CA). The
// question is a pre-vote, which raft answers without changing any state:
// the answer names the node (its id in the RPC header), and a pre-vote
// for an empty log is granted only by a node whose own log, snapshot and
// configuration are empty and that follows no leader.
func (n *Node) askAtRaftAddr(ctx context.Context, addr raft.ServerAddress) (raftAnswer, error) {
	timeout := probeTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	trans, done := n.probeTransport(timeout)
	defer done()
	if trans == nil {
		return raftAnswer{}, errors.New("this node's raft transport cannot ask a node who it is")
	}
	req := &raft.RequestPreVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(n.cfg.ID), Addr: []byte(n.RaftAddr())},
		// Our term, so that a node that merely saw a term pass by is not
		// told apart from one that is empty; the empty log is the question.
		Term:         n.raft.CurrentTerm(),
		LastLogIndex: 0,
		LastLogTerm:  0,
	}
	var resp raft.RequestPreVoteResponse
	errc := make(chan error, 1)
	go func() { errc <- trans.RequestPreVote("", addr, req, &resp) }()
	select {
	case err := <-errc:
		if err != nil {
			return raftAnswer{}, err
		}
	case <-ctx.Done():
		return raftAnswer{}, ctx.Err()
	}
	return raftAnswer{id: raft.ServerID(resp.ID), empty: resp.Granted}, nil
}

// probeTransport is a transport to ask one question with, and the func
// that closes it. On TCP it is a transport of its own that only dials,
// through this node's stream layer (its handshake, secret and TLS), so
// that its connection is closed after the question rather than pooled
// for a node that may never be added. A custom Transport (tests) is used
// as it is.
func (n *Node) probeTransport(timeout time.Duration) (raft.WithPreVote, func()) {
	if n.stores.layer == nil {
		t, _ := n.stores.transport.(raft.WithPreVote)
		return t, func() {}
	}
	d := &dialOnly{StreamLayer: n.stores.layer, closed: make(chan struct{})}
	nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  d,
		MaxPool: 1,
		Timeout: timeout,
		Logger:  logbridge.HCLog(n.cfg.Logger, "transport"),
	})
	return nt, func() {
		nt.CloseStreams()
		_ = nt.Close()
	}
}

// dialOnly is the node's stream layer for a transport that only dials:
// it accepts nothing (the node's own transport accepts), and closing it
// leaves the node's listener open.
type dialOnly struct {
	*peer.StreamLayer
	once   sync.Once
	closed chan struct{}
}

func (d *dialOnly) Accept() (net.Conn, error) {
	<-d.closed
	return nil, net.ErrClosed
}

func (d *dialOnly) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

// checkAtRaftAddr refuses unless the node at addr is id and empty.
func (n *Node) checkAtRaftAddr(ctx context.Context, id string, addr raft.ServerAddress) error {
	ans, err := n.askAtRaftAddr(ctx, addr)
	switch {
	case err != nil:
		return fmt.Errorf("%w: cannot ask the node at raft address %s who it is (is it running there, with this cluster's raft secret or TLS?): %v",
			ErrJoinRefused, addr, err)
	case string(ans.id) != id:
		return fmt.Errorf("%w: the node at raft address %s is %q, not %q: the leader adds only the node it asked",
			ErrJoinRefused, addr, ans.id, id)
	case !ans.empty:
		return fmt.Errorf("%w: node %s at raft address %s has raft state of its own, or follows another leader: adding it would fork the lock table. "+
			"Stop it, empty its data dir, start it with neither --bootstrap nor --join, and join it again", ErrJoinRefused, id, addr)
	}
	return nil
}
