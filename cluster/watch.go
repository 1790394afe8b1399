package cluster

import (
	"context"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/keywatch"
)

// keyWatches wakes the watches of keys (GET /v1/watch) when an applied
// entry touches them: a grant, a release, an extend, a force-release, an
// expiry or a hand-off. Every node applies every entry, so every node can
// serve a watch from its own table, without the leader. The table as a
// whole is watched as one more key, tableKey, woken by every entry that
// touches a key (the live lock page), and ages records when each grant
// was made and each waiter queued (ages.go).
//
// A snapshot the node installs (a follower far behind, a restart)
// changes the table without an applied entry for each key it touches:
// restored wakes every watch, which reads its key again.
type keyWatches struct {
	keywatch.Set
	ages tableAges
}

// tableKey is the key of the whole table's watchers in the Set: no lock
// has it, since a key is never empty.
const tableKey = ""

// applied wakes the watches of every key a touches, and the table's. It
// runs in the FSM goroutine (onApply) and never blocks.
func (w *keyWatches) applied(a fsm.Applied) {
	w.ages.applied(a)
	if !w.Watched() {
		return
	}
	if keys := a.Entry.AcquireKeys(); keys != nil {
		for _, key := range keys {
			w.Notify(key)
		}
	} else if a.Entry.Key != "" {
		w.Notify(a.Entry.Key)
	}
	for _, h := range a.Result.Handoffs {
		if h.Key != a.Entry.Key {
			w.Notify(h.Key)
		}
	}
	if a.Entry.Key != "" || a.Entry.AcquireKeys() != nil {
		w.Notify(tableKey)
	}
}

// restored wakes every watch, the table's too, once the node's table is
// a snapshot's. It runs in the FSM goroutine (fsm.Config.OnRestore) and
// never blocks.
func (w *keyWatches) restored() {
	w.ages.restored()
	w.NotifyAll()
}

var (
	_ httpapi.Watcher      = apiStore{}
	_ httpapi.TableWatcher = apiStore{}
)

// TableChanged returns a channel closed at the next applied entry that
// touches a key on this node, leader or not, and stop, to call once the
// caller no longer waits for it.
func (s apiStore) TableChanged() (changed <-chan struct{}, stop func()) {
	return s.n.watches.Changed(tableKey)
}

// Watch answers when key's holders on this node's table are no longer
// those seen names (api.HoldersSeen), or when wait passes, or ctx
// ends, with the key as it is then. It reads this node's applied table,
// leader or not: a watch wakes its caller, which reads the key again
// (linearizably) if it needs to be sure.
func (s apiStore) Watch(ctx context.Context, key, seen string, wait time.Duration) (api.Lock, bool, error) {
	n := s.n
	if err := n.servingErr(); err != nil {
		return api.Lock{}, false, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		changed, stop := n.watches.Changed(key) // before the read: a change after it is not missed
		lock, held, err := n.tableLock(ctx, "watch", key, n.fsm.Time())
		if err != nil || api.HoldersSeen(lock, held) != seen {
			stop()
			return lock, held, err
		}
		select {
		case <-changed:
			stop()
		case <-timer.C:
			stop()
			return lock, held, nil
		case <-ctx.Done():
			stop()
			return lock, held, nil
		}
	}
}
