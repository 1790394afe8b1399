package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/api"
)

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
	state   string        // api.Member*
	removed chan struct{} // closed on removal
}

func newMembership() *membership {
	return &membership{state: api.MemberWaiting, removed: make(chan struct{})}
}

func (m *membership) get() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// observe updates the state from a configuration; it reports true the
// one time the node turns out removed.
func (m *membership) observe(self raft.ServerID, c raft.Configuration) bool {
	listed := false
	for _, s := range c.Servers {
		listed = listed || s.ID == self
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.state == api.MemberRemoved:
	case listed:
		m.state = api.MemberOf
	case m.state == api.MemberOf:
		m.state = api.MemberRemoved
		close(m.removed)
		return true
	}
	return false
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
// removal: it logs it, marks the data dir and stops the node's leadership
// so that nothing more is served.
func (n *Node) watchMembership() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		n.checkMembership()
		select {
		case <-n.closing:
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
	if !n.member.observe(raft.ServerID(n.cfg.ID), f.Configuration()) {
		return
	}
	n.log.Error("this node was removed from the cluster: it stops serving", "id", n.cfg.ID)
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
