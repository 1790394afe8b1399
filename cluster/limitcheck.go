package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// limitCheckTimeout bounds the start-up question to the members: a
// member that is down refuses at once, one that hangs costs this much.
const limitCheckTimeout = time.Second

// checkLimitsAtStart refuses to start a node that was a member (it has
// the members' addresses in its data dir) when the cluster's leader
// answers with other table limits: restarted with a changed --max-keys or
// --max-waiters, it would apply the log to another table than the
// others'. The join checks a new node; this checks a member that comes
// back. The members are asked at once, with no credential, before raft
// starts, so a refused start writes nothing. When no leader answers (the
// whole cluster restarts, or the leader is out of reach) the node starts:
// a change of limits is made by stopping every node and starting them
// all with the new values.
func (n *Node) checkLimitsAtStart(ctx context.Context) error {
	members := n.loadMembers()
	delete(members, n.cfg.ID)
	if len(members) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, limitCheckTimeout)
	defer cancel()
	var (
		mu   sync.Mutex
		diff string
		wg   sync.WaitGroup
	)
	for id, addr := range members {
		if addr == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := n.askNode(ctx, addr)
			if err != nil || info.ClusterID != n.cfg.ClusterID || info.ID != id || info.State != "leader" || info.Limits == nil {
				return
			}
			if d := limitsDiffer(info.Limits, tableLimitsOf(n.cfg), "the leader "+id, n.cfg.ID); d != "" {
				mu.Lock()
				diff = d
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if diff != "" {
		return fmt.Errorf("cluster: refusing to start: %s. To change a table limit, stop every node and start them all with the new value", diff)
	}
	return nil
}
