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

// feature is a kind of log entry that v0.1.0 did not write, which a leader
// writes only once every member can apply it.
type feature struct {
	name string // as GET /v1/node lists it (api.Feature...)
	op   string // the request it serves, for errors
	what string // what it applies, for errors
}

var (
	sharedFeature     = feature{api.FeatureShared, "acquire", "semaphores and read/write locks"}
	acquireAllFeature = feature{api.FeatureAcquireAll, "acquire-all", "several keys in one step"}
)

// supported makes sure every member of the raft configuration can apply
// f's entries before the leader writes one: a release that does not know
// the type stops on it (fsm.CorruptEntryError), so during a rolling
// upgrade the request waits for the last member. A member that says so
// (in GET /v1/node's features) is remembered, so the members are asked
// once per node and feature, not once per request; a member that cannot
// be asked makes the request retryable (503), one that runs an older
// release makes it unsupported (501), naming the member.
func (n *Node) supported(ctx context.Context, f feature) error {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return unavailable(f.op, err)
	}
	for _, s := range cf.Configuration().Servers {
		id := string(s.ID)
		if id == n.cfg.ID {
			continue
		}
		if _, ok := n.featureMembers.Load(f.name + "\x00" + id); ok {
			continue
		}
		if err := n.askFeature(ctx, f, id); err != nil {
			return err
		}
		n.featureMembers.Store(f.name+"\x00"+id, true)
	}
	return nil
}

func (n *Node) askFeature(ctx context.Context, f feature, id string) error {
	addr, ok := n.fsm.Member(id)
	if !ok || addr == "" {
		return unavailable(f.op, fmt.Errorf("member %s has not published its HTTP address, so it cannot be asked whether it applies %s", id, f.what))
	}
	ctx, cancel := context.WithTimeout(ctx, askFeaturesTimeout)
	defer cancel()
	info, err := n.askNode(ctx, addr)
	if err != nil {
		return unavailable(f.op, fmt.Errorf("cannot ask member %s at %s whether it applies %s: %w", id, addr, f.what, err))
	}
	if !slices.Contains(info.Features, f.name) {
		return fmt.Errorf("%w: member %s runs an older release, which cannot apply %s: upgrade every member first", drivers.ErrUnsupported, id, f.what)
	}
	return nil
}
