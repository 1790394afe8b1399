package fsm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
)

var _ raft.BatchingFSM = (*FSM)(nil)

// Config configures an FSM. Every node of a cluster must use the same
// limits: they decide results, and results must be identical everywhere.
type Config struct {
	MaxKeys          int          // 0 (default) or drivers.Unlimited: no cap
	MaxWaitersPerKey int          // 0 (default) or drivers.Unlimited: no cap
	MaxHoldersPerKey int          // 0 (default): drivers.MaxHolders; at most that
	Logger           *slog.Logger // nil: null logger

	// OnApply, when set, is called in the apply goroutine once for every
	// applied lock entry, in log order, after its batch went through the
	// engine. The cluster uses it to wake waiting requests and for metrics.
	// It must not block.
	OnApply func(Applied)
	// OnConfiguration, when set, is called in the apply goroutine with
	// every committed raft configuration, in log order (raft calls
	// StoreConfiguration). The node learns from it that it was added,
	// even when it is removed again before it looks. It must not block.
	OnConfiguration func(raft.Configuration)
	// OnRestore, when set, is called in the apply goroutine after Restore
	// replaced the state with a snapshot's: the table changed without an
	// OnApply for what changed. It must not block.
	OnRestore func()
}

// Applied describes one applied lock entry, for Config.OnApply.
type Applied struct {
	Index  uint64
	Entry  Entry
	Result engine.Result
}

// Response is what ApplyBatch returns for every log entry, and so what
// raft.ApplyFuture.Response() holds on the node that proposed the entry.
// Errors are carried inside, apart from raft's own error for the entry;
// the proposer merges the two.
type Response struct {
	Index  uint64
	Type   EntryType
	Result engine.Result // lock entries
	Err    error         // engine failure or per-command error
	// Parts holds, for a Batch entry, one response per lock entry it
	// carries, in order (Result and Err of the batch itself are zero).
	Parts []Response
}

// FSM applies committed log entries to an engine in replicated mode. Apply
// and ApplyBatch run on raft's FSM goroutine; the accessors (Time, Members,
// Waiters, AppliedIndex, the table's reads) are safe from any goroutine.
type FSM struct {
	eng       *engine.Replicated
	log       *slog.Logger
	onApply   func(Applied)
	onConfig  func(raft.Configuration)
	onRestore func()

	// Reused by ApplyBatch (single goroutine) so a batch allocates little.
	cmds []engine.Command
	pos  []part // where each command of cmds comes from

	mu        sync.Mutex
	st        state
	appliedCh chan struct{} // closed and replaced after every batch
	// applying is the index of the last entry of the batch being applied,
	// set before the engine sees it; st.applied catches up once the batch
	// has been through OnApply.
	applying uint64
}

// state is what the FSM keeps beside the engine table. It is replicated
// (derived only from the log) and part of every snapshot.
type state struct {
	applied uint64            // index of the last applied entry
	now     int64             // largest leader-stamped time applied: the FSM clock
	members map[string]string // raft server id -> HTTP address
}

// Waiter names a queued acquire. The set of them is the engine's: the FSM
// reads it from there rather than keeping a copy in step beside it.
type Waiter = engine.Waiter

// New starts an engine in replicated mode and returns the FSM around it.
func New(cfg Config) (*FSM, error) {
	if cfg.MaxKeys < drivers.Unlimited || cfg.MaxWaitersPerKey < drivers.Unlimited {
		return nil, fmt.Errorf("fsm: MaxKeys (%d) and MaxWaitersPerKey (%d) must be positive, 0 (default: no cap) or drivers.Unlimited", cfg.MaxKeys, cfg.MaxWaitersPerKey)
	}
	eng, err := engine.NewReplicated(engine.Config{
		MaxKeys:          cfg.MaxKeys,
		MaxWaitersPerKey: cfg.MaxWaitersPerKey,
		MaxHoldersPerKey: cfg.MaxHoldersPerKey,
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: start engine: %w", err)
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &FSM{
		eng:       eng,
		log:       lg,
		onApply:   cfg.OnApply,
		onConfig:  cfg.OnConfiguration,
		onRestore: cfg.OnRestore,
		st:        newState(),
		appliedCh: make(chan struct{}),
	}, nil
}

func newState() state {
	return state{members: map[string]string{}}
}

// Close stops the engine. Entries applied afterwards answer with errors.
func (f *FSM) Close() error { return f.eng.Close() }

// The reads of the lock table the node needs; every write goes through
// the log.

// Get describes key as applied so far; ok is false when nobody holds it.
// A grant past its deadline that no expiry has ended yet is reported as it
// is, with its deadline.
func (f *FSM) Get(ctx context.Context, key string) (info engine.Info, ok bool, err error) {
	return f.eng.Get(ctx, key)
}

// List describes the held keys that start with prefix, sorted by key; at
// most limit of them when limit > 0.
func (f *FSM) List(ctx context.Context, prefix string, limit int) ([]engine.Info, error) {
	return f.eng.List(ctx, prefix, limit)
}

// Keys is the number of keys in the table as of the last applied batch
// (no round trip: for metrics and status).
func (f *FSM) Keys() int { return f.eng.Len() }

// IsQueued reports whether owner is queued for key, as the engine has it
// now: unlike IsQueuedOnceDelivered, it does not wait for the hand-offs already applied
// to be delivered.
func (f *FSM) IsQueued(ctx context.Context, key, owner string) (bool, error) {
	return f.eng.IsWaiting(ctx, key, owner)
}

// Due returns up to limit grants (all when limit <= 0) whose deadline is
// <= now in FSM time, soonest first: what the leader proposes expiries for.
func (f *FSM) Due(ctx context.Context, now int64, limit int) ([]engine.Grant, error) {
	return f.eng.Due(ctx, now, limit)
}

// NextDeadline is the earliest deadline in the table; ok is false when
// nothing is held.
func (f *FSM) NextDeadline(ctx context.Context) (deadline int64, ok bool, err error) {
	return f.eng.NextDeadline(ctx)
}

// Apply applies one entry; raft calls it only when batching is off.
var _ raft.ConfigurationStore = (*FSM)(nil)

// StoreConfiguration hands a committed configuration to
// Config.OnConfiguration; the table keeps nothing of it.
func (f *FSM) StoreConfiguration(_ uint64, c raft.Configuration) {
	if f.onConfig != nil {
		f.onConfig(c)
	}
}

func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies a committed batch of log entries with one
// engine.Apply call. Every grant made by a lock entry gets that entry's
// raft index as its fence, or the last fence plus one when that is not
// above every fence issued so far (a batch entry's second grant). An entry
// that does not decode stops the node with a panic holding a
// *CorruptEntryError, before any entry of the batch is applied.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	if len(logs) == 0 {
		return nil
	}
	entries := f.decodeBatch(logs)
	last := logs[len(logs)-1].Index
	resps := f.stage(logs, entries)

	var results []engine.Result
	var applyErr error
	if len(f.cmds) > 0 {
		// Never cancelled: a committed entry must be applied.
		results, applyErr = f.eng.Apply(context.Background(), f.cmds)
		if applyErr == nil && len(results) != len(f.cmds) {
			applyErr = fmt.Errorf("fsm: engine returned %d results for %d commands", len(results), len(f.cmds))
		}
		if applyErr != nil {
			f.log.Error("engine apply failed", "first_index", logs[0].Index, "error", applyErr)
		}
	}

	// OnApply runs before the batch counts as applied, so that whoever
	// waits for an index (WaitApplied, IsQueuedOnceDelivered) finds its hand-offs
	// delivered.
	if f.onApply != nil && applyErr == nil {
		for k, p := range f.pos {
			f.onApply(Applied{Index: logs[p.log].Index, Entry: entries[p.log][p.part], Result: results[k]})
		}
	}
	f.settle(last, resps, results, applyErr)
	return resps
}

// stage makes the batch's responses, applies its member entries and FSM
// time, and gathers its lock entries in f.cmds (from where, in f.pos) for
// one engine.Apply; the batch counts as being applied from here on.
func (f *FSM) stage(logs []*raft.Log, entries [][]Entry) []interface{} {
	resps := make([]interface{}, len(logs))
	f.cmds, f.pos = f.cmds[:0], f.pos[:0]
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applying = max(f.applying, logs[len(logs)-1].Index)
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue // configuration entries: raft keeps membership itself
		}
		r := &Response{Index: l.Index, Type: EntryType(l.Data[0])}
		resps[i] = r
		if entries[i] == nil {
			f.log.Warn("skipping ignorable log entry of unknown type", "index", l.Index, "type", l.Data[0])
			continue
		}
		if r.Type == Batch {
			r.Parts = make([]Response, len(entries[i]))
			for j := range r.Parts {
				r.Parts[j] = Response{Index: l.Index, Type: entries[i][j].Type()}
			}
		}
		for j, e := range entries[i] {
			if e.Now > f.st.now {
				f.st.now = e.Now
			}
			switch e.Member {
			case SetMember:
				f.st.members[e.ID] = e.HTTPAddr
				r.Result = engine.Result{OK: true}
			case RemoveMember:
				_, ok := f.st.members[e.ID]
				delete(f.st.members, e.ID)
				r.Result = engine.Result{OK: ok}
			default:
				f.cmds = append(f.cmds, toCommand(e, l.Index))
				f.pos = append(f.pos, part{i, j})
			}
		}
	}
	return resps
}

// settle puts the engine's results (or its error) into the responses and
// marks the batch up to last applied, waking WaitApplied.
func (f *FSM) settle(last uint64, resps []interface{}, results []engine.Result, applyErr error) {
	f.mu.Lock()
	f.st.applied = max(f.st.applied, last)
	for k, p := range f.pos {
		r := resps[p.log].(*Response)
		if r.Type == Batch {
			r = &r.Parts[p.part]
		}
		if applyErr != nil {
			r.Err = applyErr
		} else {
			r.Result = results[k]
			r.Err = results[k].Err
		}
	}
	old := f.appliedCh
	f.appliedCh = make(chan struct{})
	f.mu.Unlock()
	close(old)
}

// part locates a lock entry in the logs of a batch: the log, and the
// entry's place among those the log carries (0 unless a batch entry).
type part struct{ log, part int }

// decodeBatch decodes the command entries of a batch into the entries
// each carries (nil for the others and for an ignorable unknown type). An
// entry that does not decode stops the node with a panic holding a
// *CorruptEntryError, before anything of the batch is applied: see
// CorruptEntryError for why it is not skipped.
func (f *FSM) decodeBatch(logs []*raft.Log) [][]Entry {
	entries := make([][]Entry, len(logs))
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		es, err := DecodeLog(l.Data)
		if err != nil {
			ce := &CorruptEntryError{Index: l.Index, Term: l.Term, Err: err}
			f.log.Error("stopping: committed log entry cannot be applied", "index", l.Index, "term", l.Term, "error", err)
			panic(ce)
		}
		entries[i] = es
	}
	return entries
}

// toCommand turns a lock entry into the engine command it carries; its
// raft index is the fence of any grant it makes, unless the engine has
// issued that fence already (see the engine's Fences).
func toCommand(e Entry, index uint64) engine.Command {
	return engine.Command{
		Op:          e.Op,
		Key:         e.Key,
		Owner:       e.Owner,
		TTL:         e.TTL,
		Now:         e.Now,
		Fence:       index,
		ExpectFence: e.ExpectFence,
		Wait:        e.Wait,
		Claim:       e.Claim,
		Keys:        e.Keys,
		MaxHold:     e.MaxHold,
	}
}

// Time is the FSM clock: the largest leader-stamped time applied so far
// (unix nanoseconds; 0 before the first lock entry). It never goes back.
func (f *FSM) Time() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.now
}

// AppliedIndex is the index of the last entry this FSM has applied, its
// batch through the engine and OnApply (raft's own AppliedIndex runs
// ahead of the FSM goroutine). A read of the engine after it sees every
// entry up to it.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.applied
}

// WaitApplied blocks until the FSM has applied index (see AppliedIndex),
// or ctx ends.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	for {
		f.mu.Lock()
		applied, ch := f.st.applied, f.appliedCh
		f.mu.Unlock()
		if applied >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fsm: waiting for index %d (applied %d): %w", index, applied, ctx.Err())
		}
	}
}

// Member returns the HTTP address recorded for a raft server id.
func (f *FSM) Member(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.st.members[id]
	return a, ok
}

// Members returns a copy of the id -> HTTP address map.
func (f *FSM) Members() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]string, len(f.st.members))
	for k, v := range f.st.members {
		m[k] = v
	}
	return m
}

// Waiters returns the queued waiters sorted by key, then owner (nil if
// the engine has stopped).
func (f *FSM) Waiters() []Waiter {
	w, _ := f.eng.Waiters(context.Background())
	return w
}

// IsQueuedOnceDelivered reports whether owner is queued for key. When it
// is not, it returns only once every entry the engine has applied so far
// has been through Config.OnApply (the hand-offs are delivered): the engine hands a key to a waiter before
// OnApply hears of it, and a caller that finds owner neither queued nor
// handed a grant must not be reading in between. It must not be called
// from OnApply.
func (f *FSM) IsQueuedOnceDelivered(ctx context.Context, key, owner string) (bool, error) {
	ok, err := f.IsQueued(ctx, key, owner)
	if err != nil || ok {
		return ok, err
	}
	f.mu.Lock()
	target := f.applying
	f.mu.Unlock()
	return false, f.WaitApplied(ctx, target)
}

// WaiterCount is the number of queued waiters as of the last applied
// batch; it costs no round trip to the engine.
func (f *FSM) WaiterCount() int { return f.eng.WaiterCount() }

// Snapshot captures the whole state as immutable bytes; Persist only
// writes them out, so Apply may continue meanwhile.
//
// Raft calls it between applies, which wait for it: it only copies the
// state out (engine.Frozen), and Persist, which raft runs beside the
// applies, sorts and encodes the copy.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	frozen, err := f.eng.Freeze(context.Background())
	if err != nil {
		return nil, fmt.Errorf("fsm: engine snapshot: %w", err)
	}
	// Between applies, so the waiters read here are those of frozen.
	ws, err := f.eng.Waiters(context.Background())
	if err != nil {
		return nil, fmt.Errorf("fsm: engine waiters: %w", err)
	}
	f.mu.Lock()
	st := state{applied: f.st.applied, now: f.st.now, members: maps.Clone(f.st.members)}
	f.mu.Unlock()
	return &snapshot{st: st, waiters: ws, frozen: frozen}, nil
}

// Restore replaces the whole state with a snapshot. Corrupt input is an
// error and leaves the state as it was.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("fsm: read snapshot: %w", err)
	}
	st, engSnap, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	if err := f.eng.Restore(context.Background(), engSnap); err != nil {
		if errors.Is(err, engine.ErrCorruptSnapshot) {
			return fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
		}
		return fmt.Errorf("fsm: restore engine: %w", err)
	}
	f.mu.Lock()
	f.st = st
	f.applying = st.applied
	old := f.appliedCh
	f.appliedCh = make(chan struct{})
	f.mu.Unlock()
	close(old)
	if f.onRestore != nil {
		f.onRestore()
	}
	return nil
}

// snapshot is the immutable copy handed to raft.
// snapshot is the state Snapshot copied out, encoded by Persist.
type snapshot struct {
	st      state
	waiters []Waiter
	frozen  *engine.Frozen
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	data := encodeSnapshot(&s.st, s.waiters, s.frozen.Encode())
	if _, err := sink.Write(data); err != nil {
		return errors.Join(fmt.Errorf("fsm: write snapshot: %w", err), sink.Cancel())
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
