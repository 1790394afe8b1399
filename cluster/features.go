package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
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

// acquireKeysFeature: every acquire as one entry (engine.OpAcquireKeys),
// of any claim, of several keys and with a cap on total hold time (the
// entry's MaxHold, which v0.1.0's acquire entry has no room for).
var acquireKeysFeature = feature{api.FeatureAcquireKeys, "acquire", "semaphores, read/write locks, several keys in one step and caps on total hold time"}

// featurePoll is how often a leader asks the members that have not said
// they apply acquireKeysFeature, until every one has (see learnFeatures).
const featurePoll = time.Second

// acquireEntry is the log entry of req: one acquire entry of every key,
// its claim and its cap once every member is known to apply it. Before,
// during a rolling upgrade from v0.1.0, a single key's mutex without a cap
// is v0.1.0's acquire entry, written without asking anyone (learnFeatures
// asks in the background), and any other request asks the members first
// (supported): 501 while one runs an older release. A capped request is
// never written as v0.1.0's entry, which would drop the cap.
func (n *Node) acquireEntry(ctx context.Context, req httpapi.Request) (fsm.Entry, error) {
	plain := len(req.Keys) == 1 && req.Claim == (drivers.Claim{}) && req.MaxHold == 0
	if plain && !n.known(acquireKeysFeature) {
		return fsm.Entry{Op: engine.OpAcquire, Key: req.Keys[0], Owner: req.Owner, TTL: req.TTL}, nil
	}
	if err := n.supported(ctx, acquireKeysFeature); err != nil {
		return fsm.Entry{}, err
	}
	return fsm.Entry{Op: engine.OpAcquireKeys, Keys: req.Keys, Owner: req.Owner, TTL: req.TTL, Claim: req.Claim, MaxHold: req.MaxHold}, nil
}

// known reports whether every member of the raft configuration is known
// to apply f's entries, without asking any.
func (n *Node) known(f feature) bool {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	for _, s := range cf.Configuration().Servers {
		if _, ok := n.featureMembers.Load(f.name + "\x00" + string(s.ID)); !ok && string(s.ID) != n.cfg.ID {
			return false
		}
	}
	return true
}

// learnFeatures asks, every featurePoll of the term ctx, the members not
// yet known to apply acquireKeysFeature: a single key's mutex then goes
// from v0.1.0's entry to the new one without a request ever waiting for
// the question. Once every member is known it only looks at the
// configuration (a node joins only when it applies the feature).
func (n *Node) learnFeatures(ctx context.Context) {
	t := time.NewTicker(featurePoll)
	defer t.Stop()
	for {
		if !n.known(acquireKeysFeature) {
			_ = n.supported(ctx, acquireKeysFeature)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

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
