package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/api"
)

// membersFile keeps, in the data dir, the members' HTTP addresses last
// seen in the member map: a node that restarts knows them before its
// table is replayed, which needs a leader (see askLeader).
const membersFile = "members.json"

// removedFile marks a data dir whose node was removed from its cluster:
// a restart on it is refused, as etcd refuses a removed member, rather
// than serve again from a log the cluster has left behind.
const removedFile = "REMOVED"

// errRemoved is what a removed node answers to every lock request.
var errRemoved = errors.New("this node was removed from the cluster; it serves nothing: wipe its data dir and join it again to bring it back")

// errWaiting is what a node waiting to be added answers.
var errWaiting = errors.New("this node is waiting to be added to a cluster (lockcluster join); it serves nothing until then")

// membership follows this node's place in the raft configuration: waiting
// to be added (a new data dir, no bootstrap), a member, or removed. A node
// counts as removed once it has been a member and the configuration no
// longer lists it; a node catching up as it joins can see configurations
// that predate its addition, which must not count.
type membership struct {
	mu      sync.Mutex
	state   string        // api.Member*; written under mu, then published in cur
	removed chan struct{} // closed on removal
	// cur is state for readers: every lock request reads it.
	cur atomic.Pointer[string]
}

func newMembership() *membership {
	m := &membership{removed: make(chan struct{})}
	m.set(api.MemberWaiting)
	return m
}

// set changes the state; m.mu is held, or m is not shared yet.
func (m *membership) set(state string) {
	m.state = state
	m.cur.Store(&state)
}

func (m *membership) get() string { return *m.cur.Load() }

// committed records a committed configuration: one that lists this node
// makes it a member, even if the latest configuration no longer does by
// the time the node looks (an add and a leave within one poll).
func (m *membership) committed(self raft.ServerID, c raft.Configuration) {
	if !lists(c, self) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == api.MemberWaiting {
		m.set(api.MemberOf)
	}
}

// lists reports whether c has the server id.
func lists(c raft.Configuration, id raft.ServerID) bool {
	return slices.ContainsFunc(c.Servers, func(s raft.Server) bool { return s.ID == id })
}

// observe updates the state from the latest configuration; it reports
// true the one time the node turns out removed.
func (m *membership) observe(self raft.ServerID, c raft.Configuration) bool {
	listed := lists(c, self)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.state == api.MemberRemoved:
	case listed:
		m.set(api.MemberOf)
	case m.state == api.MemberOf:
		m.set(api.MemberRemoved)
		close(m.removed)
		return true
	}
	return false
}

// told records that a leader of the cluster said this node is not in
// its configuration; it reports true the one time that removes it. A
// node still waiting counts when it holds raft state (hasLog): it got
// the cluster's log, so it was added, and the leader stopped
// replicating to it before it saw its addition committed.
func (m *membership) told(hasLog bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != api.MemberOf && (m.state != api.MemberWaiting || !hasLog) {
		return false
	}
	m.set(api.MemberRemoved)
	close(m.removed)
	return true
}

// checkNotRemoved refuses a data dir marked removed.
func checkNotRemoved(dataDir string) error {
	b, err := os.ReadFile(filepath.Join(dataDir, removedFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("cluster: read %s: %w", filepath.Join(dataDir, removedFile), err)
	}
	return fmt.Errorf("cluster: this node was removed from its cluster (%s, %s): it will not serve from this data dir again. "+
		"To bring it back, empty the data dir, start it with neither --bootstrap nor --join, and add it with lockcluster join",
		filepath.Join(dataDir, removedFile), string(trimNL(b)))
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// watchMembership polls the raft configuration (raft keeps the latest in
// memory, so a read is cheap) until the node stops, and acts once on a
// removal: it logs it and marks the data dir; from then on servingErr
// refuses every request.
//
// The leader stops replicating to a server as it removes it, often before
// the removal reaches it (or before the node saw its own addition
// committed), and a node that was down when it was removed never gets it:
// a member, or a node that got the cluster's log, that has known no
// leader for two election timeouts asks the members it knows (askLeader)
// every second.
func (n *Node) watchMembership() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var leaderless time.Time // since when this member knows no leader; zero: it knows one
	var asked time.Time
	var saved map[string]string
	for {
		n.checkMembership()
		saved = n.saveMembers(saved)
		state, hasLog := n.member.get(), n.raft.LastIndex() > 0
		if _, id := n.raft.LeaderWithID(); id != "" || !(state == api.MemberOf || state == api.MemberWaiting && hasLog) {
			leaderless = time.Time{}
		} else if leaderless.IsZero() {
			leaderless = time.Now()
		} else if time.Since(leaderless) > 2*n.cfg.ElectionTimeout && time.Since(asked) > time.Second {
			asked = time.Now()
			if by := n.askLeader(); by != "" && n.member.told(hasLog) {
				n.markRemoved("leader " + by + " does not list this node")
			}
		}
		select {
		case <-n.stopping.Done():
			n.saveMembers(saved) // what the last moments applied
			return
		case <-n.member.removed:
			return
		case <-t.C:
		}
	}
}

func (n *Node) checkMembership() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	if n.member.observe(raft.ServerID(n.cfg.ID), f.Configuration()) {
		n.markRemoved("the raft configuration no longer lists this node")
	}
}

// markRemoved logs the removal and marks the data dir.
func (n *Node) markRemoved(why string) {
	n.log.Error("this node was removed from the cluster: it stops serving", "id", n.cfg.ID, "why", why)
	mark := filepath.Join(n.cfg.DataDir, removedFile)
	if err := os.WriteFile(mark, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		n.log.Error("cannot mark the data dir removed", "file", mark, "error", err)
	}
}

// Removed is closed once this node has been removed from the cluster
// (lockcluster leave): it then serves nothing, says so in its status and
// /readyz, and its data dir refuses a restart. lockcluster agent exits.
func (n *Node) Removed() <-chan struct{} { return n.member.removed }

// Membership is api.MemberOf, api.MemberWaiting or api.MemberRemoved.
func (n *Node) Membership() string { return n.member.get() }

// servingErr is why this node serves no requests at all, or nil. A node
// still waiting looks again at once, so that it serves from the moment
// the configuration lists it rather than from the next poll.
func (n *Node) servingErr() error {
	if n.member.get() == api.MemberWaiting {
		n.checkMembership()
	}
	switch n.member.get() {
	case api.MemberRemoved:
		return unavailable("serve", errRemoved)
	case api.MemberWaiting:
		return unavailable("serve", errWaiting)
	}
	return nil
}

// askLeader asks the members in the member map what they are
// (GET /v1/node) and returns the id of one that leads this cluster and
// does not list this node in its configuration, or "". A leader's
// configuration is the cluster's latest; the addresses are the
// replicated member map's, so only a member (or, without TLS, whoever
// can intercept its HTTP) could say so.
func (n *Node) askLeader() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	go func() {
		select {
		case <-n.stopping.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	members := n.loadMembers()
	for id, addr := range n.fsm.Members() {
		members[id] = addr
	}
	for id, addr := range members {
		if id == n.cfg.ID || addr == "" {
			continue
		}
		info, err := n.askNode(ctx, addr)
		if err != nil || info.ClusterID != n.cfg.ClusterID || info.State != "leader" || info.ID != id {
			continue
		}
		if !slices.Contains(info.Members, n.cfg.ID) && slices.Contains(info.Members, id) {
			return id
		}
	}
	return ""
}

// saveMembers writes the member map to membersFile when it differs from
// saved, and returns what is on disk now.
func (n *Node) saveMembers(saved map[string]string) map[string]string {
	m := n.fsm.Members()
	if len(m) == 0 || maps.Equal(m, saved) {
		return saved
	}
	b, err := json.Marshal(m)
	if err == nil {
		path := filepath.Join(n.cfg.DataDir, membersFile)
		if err = os.WriteFile(path+".tmp", b, 0o600); err == nil {
			err = os.Rename(path+".tmp", path)
		}
	}
	if err != nil {
		n.log.Warn("cannot save the members' addresses", "error", err)
		return saved
	}
	return m
}

// loadMembers reads membersFile; empty when there is none.
func (n *Node) loadMembers() map[string]string {
	m := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(n.cfg.DataDir, membersFile)); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}
