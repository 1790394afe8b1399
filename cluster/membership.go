package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/fsm"
)

// addMember adds a voter, checked by the API (a non-empty id, host:port
// addresses). It adds exactly the node it checked: a server not yet in
// the configuration at addr is asked at httpAddr (askJoiner), then at
// addr itself over raft (checkAtRaftAddr), and refused unless both
// answers are the new, empty node id of this cluster, with this
// cluster's table limits, advertising addr. It is idempotent: id at addr
// already changes nothing. It never removes a member by address: addr
// held by another id is refused. A known id at a new address (a node
// moved, its data dir emptied) replaces the old entry, once the node at
// the new address passed the checks and none answers as id at the old.
func (n *Node) addMember(ctx context.Context, id, addr, httpAddr string) error {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return unavailable("join", err)
	}
	known := false
	var moved *raft.Server // id's entry at another address
	for _, s := range f.Configuration().Servers {
		switch {
		case string(s.ID) == id && string(s.Address) == addr:
			known = true
		case string(s.Address) == addr:
			return fmt.Errorf("%w: raft address %s is member %q's, not a new node's: a join never removes a member to make room "+
				"(check --raft-addr; to replace %s, run lockcluster leave --id %s first)", ErrJoinRefused, addr, s.ID, s.ID, s.ID)
		case string(s.ID) == id:
			moved = &s
		}
	}
	if !known {
		if err := n.checkJoiner(ctx, id, addr, httpAddr, moved); err != nil {
			return err
		}
		if moved != nil {
			if err := n.raft.RemoveServer(moved.ID, 0, 0).Error(); err != nil {
				return applyErr("join: remove the old address", err)
			}
		}
		if err := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 0).Error(); err != nil {
			return applyErr("join", err)
		}
	}
	if httpAddr != "" {
		if cur, ok := n.fsm.Member(id); !ok || cur != httpAddr {
			if _, err := n.apply(fsm.Entry{Member: fsm.SetMember, ID: id, HTTPAddr: httpAddr}); err != nil {
				return applyErr("join", err)
			}
		}
	}
	n.log.Info("node joined", "id", id, "addr", addr, "http", httpAddr)
	return nil
}

// checkJoiner asks the node to add at both its addresses; moved is id's
// entry at another address, if any.
func (n *Node) checkJoiner(ctx context.Context, id, addr, httpAddr string, moved *raft.Server) error {
	if err := n.askJoiner(ctx, id, addr, httpAddr); err != nil {
		return err
	}
	if err := n.checkAtRaftAddr(ctx, id, raft.ServerAddress(addr)); err != nil {
		return err
	}
	if moved != nil {
		// A node answering as id at its old address is alive there: the
		// new one is another node given the same id, not the member moved.
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if ans, err := n.askAtRaftAddr(octx, moved.Address); err == nil && string(ans.id) == id {
			return fmt.Errorf("%w: member %q still answers at its raft address %s: a node given its id at %s is another node "+
				"(give the new node another id, or stop %s and run lockcluster leave --id %s first)", ErrJoinRefused, id, moved.Address, addr, id, id)
		}
	}
	return nil
}

// ErrJoinRefused is what a join wraps when the node to add may not be
// added: it has raft state, belongs to another cluster, answers to
// another id or at another raft address, applies other table limits,
// its raft address is a member's, or it cannot be asked.
var ErrJoinRefused = httpapi.ErrJoinRefused

// askJoiner asks the node at httpAddr what it is (GET /v1/node) and
// refuses to add it unless it is this cluster's, answers to id,
// advertises addr as its raft address, applies this node's table
// limits, and has no raft state at all. Raft alone would accept a node
// with a log of its own: where both logs hold an entry of the same index
// and term, the log matching check passes, the cluster's entries land on
// top of the node's, and the node's table, and any locks it granted
// alone, later win an election.
func (n *Node) askJoiner(ctx context.Context, id, addr, httpAddr string) error {
	if httpAddr == "" {
		return fmt.Errorf("%w: node %s: no HTTP address given: the leader asks the node there before adding it "+
			"(lockcluster join --http-addr)", ErrJoinRefused, id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := n.askNode(ctx, httpAddr)
	if err != nil {
		return fmt.Errorf("%w: cannot ask node %s at %s whether it may be added (is it running, at that address, of this version?): %v",
			ErrJoinRefused, id, httpAddr, err)
	}
	switch {
	case info.ClusterID != n.cfg.ClusterID:
		return fmt.Errorf("%w: the node at %s is in cluster %q, not %q", ErrJoinRefused, httpAddr, info.ClusterID, n.cfg.ClusterID)
	case info.ID != id:
		return fmt.Errorf("%w: the node at %s is %q, not %q", ErrJoinRefused, httpAddr, info.ID, id)
	case info.Membership == api.MemberRemoved:
		return fmt.Errorf("%w: node %s was removed from a cluster and keeps its old data dir: empty it and restart the node first", ErrJoinRefused, id)
	case info.LastIndex > 0 || info.Servers > 0:
		servers := "servers"
		if info.Servers == 1 {
			servers = "server"
		}
		return fmt.Errorf("%w: node %s has raft state of its own (last log index %d, a configuration of %d %s): "+
			"adding it would fork the lock table. Stop it, empty its data dir, start it with neither --bootstrap nor --join, "+
			"and join it again", ErrJoinRefused, id, info.LastIndex, info.Servers, servers)
	case !slices.Contains(info.Features, acquireKeysFeature.name),
		info.RaftAddr == "":
		return fmt.Errorf("%w: node %s runs an older release, which cannot apply every entry of this cluster's log "+
			"(semaphores, read/write locks, several keys in one step) or does not say its raft address: run this release there", ErrJoinRefused, id)
	case info.RaftAddr != addr:
		return fmt.Errorf("%w: the node at %s (%s) has raft address %s, not %s: the leader adds only the node it asked "+
			"(give the --raft-addr it advertises, or the --http-addr of the node at %s)", ErrJoinRefused, httpAddr, id, info.RaftAddr, addr, addr)
	}
	if diff := limitsDiffer(tableLimitsOf(n.cfg), info.Limits, n.cfg.ID, id); diff != "" {
		return fmt.Errorf("%w: %s", ErrJoinRefused, diff)
	}
	return nil
}

// removeMember removes a server. An id that is not in the raft configuration
// is an error wrapping httpapi.ErrUnknownMember (404), so that a typo is
// not taken for a removal; a member entry left behind by an earlier leave
// that stopped half-way is still cleaned up, and answered 200.
func (n *Node) removeMember(id string) error {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return unavailable("leave", err)
	}
	var ids []string
	voter := false
	for _, s := range f.Configuration().Servers {
		ids = append(ids, string(s.ID))
		voter = voter || string(s.ID) == id
	}
	_, member := n.fsm.Member(id)
	if !voter && !member {
		return fmt.Errorf("%w %q: the members are %s", httpapi.ErrUnknownMember, id, strings.Join(ids, ", "))
	}
	if voter {
		if err := n.raft.RemoveServer(raft.ServerID(id), 0, 0).Error(); err != nil {
			return applyErr("leave", err)
		}
	}
	if member && id != n.cfg.ID {
		if _, err := n.apply(fsm.Entry{Member: fsm.RemoveMember, ID: id}); err != nil {
			return applyErr("leave", err)
		}
	}
	n.log.Info("node left", "id", id)
	return nil
}

// joinCluster asks the member at Config.Join to add this node, retrying
// transient failures until ctx ends. The request names this node's
// cluster ID: a member of another cluster refuses it (403), and so does
// one with another token (401); no refusal is retried.
func (n *Node) joinCluster(ctx context.Context) error {
	c, err := n.apiClient(n.cfg.Join, n.cfg.Token)
	if err != nil {
		return fmt.Errorf("cluster: join via %s: %w", n.cfg.Join, err)
	}
	defer c.Close()
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.Join(ctx, n.cfg.ID, n.RaftAddr(), n.AdvertisedHTTPAddr())
		if err == nil {
			return nil
		}
		if errors.Is(err, client.ErrWrongCluster) {
			return fmt.Errorf("cluster: join via %s: refused: this node is configured for cluster %q, which the member does not belong to: %w",
				n.cfg.Join, n.cfg.ClusterID, err)
		}
		if refused(err) {
			return fmt.Errorf("cluster: join via %s: %w", n.cfg.Join, err)
		}
		n.log.Warn("join attempt failed", "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: join via %s: %w (last error: %v)", n.cfg.Join, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// refused reports whether a join answer is one that retrying cannot fix:
// a 4xx other than 429, or an address that is no URL.
func refused(err error) bool {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 && apiErr.StatusCode != http.StatusTooManyRequests
	}
	return errors.Is(err, drivers.ErrInvalid)
}
