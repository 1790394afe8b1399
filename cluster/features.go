package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// askFeaturesTimeout bounds asking one member what its release applies.
const askFeaturesTimeout = 2 * time.Second

// sharedSupported makes sure every member of the raft configuration can
// apply an acquire-shared entry (type 8) before the leader writes one: a
// release that does not know the type stops on it (fsm.CorruptEntryError),
// so during a rolling upgrade a semaphore waits for the last member. A
// member that says so (api.FeatureShared in GET /v1/node) is remembered,
// so the members are asked once per node, not once per request; a member
// that cannot be asked makes the request retryable (503), one that runs
// an older release makes it unsupported (501), naming the member.
func (n *Node) sharedSupported(ctx context.Context) error {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return unavailable("acquire", err)
	}
	for _, s := range f.Configuration().Servers {
		id := string(s.ID)
		if id == n.cfg.ID {
			continue
		}
		if _, ok := n.sharedMembers.Load(id); ok {
			continue
		}
		if err := n.askShared(ctx, id); err != nil {
			return err
		}
		n.sharedMembers.Store(id, true)
	}
	return nil
}

func (n *Node) askShared(ctx context.Context, id string) error {
	addr, ok := n.fsm.Member(id)
	if !ok || addr == "" {
		return unavailable("acquire", fmt.Errorf("member %s has not published its HTTP address, so it cannot be asked whether it applies semaphores and read/write locks", id))
	}
	ctx, cancel := context.WithTimeout(ctx, askFeaturesTimeout)
	defer cancel()
	info, err := n.askNode(ctx, addr)
	if err != nil {
		return unavailable("acquire", fmt.Errorf("cannot ask member %s at %s whether it applies semaphores and read/write locks: %w", id, addr, err))
	}
	if !slices.Contains(info.Features, api.FeatureShared) {
		return fmt.Errorf("%w: member %s runs an older release, which cannot apply semaphores or read/write locks: upgrade every member first", drivers.ErrUnsupported, id)
	}
	return nil
}
