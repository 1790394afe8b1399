package engine

import "context"

// The calls below are both engines': what a table holds, its snapshot,
// and Close.

// Close stops the engine. Every command still queued and every blocked
// AcquireWait is answered with drivers.ErrClosed; later calls return it
// too. Close is idempotent and returns once the loop has exited.
func (e *loop) Close() error {
	e.once.Do(func() {
		e.stopping.Store(true)
		e.poke()
	})
	<-e.exited
	return nil
}

// Len returns the number of keys in the table as of the last batch. It is
// cheap (an atomic load), for metrics.
func (e *loop) Len() int { return int(e.keys.Load()) }

// WaiterCount is the number of queued waiters over all keys, as of the
// last batch the loop finished (no round trip: cheap enough for every
// request).
func (e *loop) WaiterCount() int { return int(e.waiting.Load()) }

// Get describes key; ok is false when it is not held. A Replicated engine
// reports a grant past its deadline that no OpExpire has ended yet as it
// is, with its deadline.
func (e *loop) Get(ctx context.Context, key string) (Info, bool, error) {
	a, err := e.ask(ctx, newReq(kGet, key, "", 0))
	return a.info, a.ok && err == nil, err
}

// List describes the keys that start with prefix, sorted by key; at most
// limit of them when limit > 0.
func (e *loop) List(ctx context.Context, prefix string, limit int) ([]Info, error) {
	r := newReq(kList, prefix, "", 0)
	r.limit = limit
	a, err := e.ask(ctx, r)
	return a.infos, err
}

// Snapshot encodes the whole table: fence counter, engine time, every
// entry and its waiters in queue order. The same state always gives the
// same bytes. It is Freeze then Encode.
func (e *loop) Snapshot(ctx context.Context) ([]byte, error) {
	f, err := e.Freeze(ctx)
	if err != nil {
		return nil, err
	}
	return f.Encode(), nil
}

// Freeze copies the whole table out of the engine, for Encode to turn
// into a snapshot away from the loop: the loop pauses only for the copy.
func (e *loop) Freeze(ctx context.Context) (*Frozen, error) {
	a, err := e.ask(ctx, getReq(kSnapshot))
	return a.frozen, err
}

// Restore replaces the whole table with the one snap encodes. Corrupt or
// truncated input is refused with an error and leaves the state as it
// was. ctx bounds only the hand-over to the engine: once the engine has
// the new table, Restore waits for the swap, so its answer is never in
// doubt. A live engine tells the callers blocked in AcquireWait that
// their wait ended (an error matching drivers.ErrUnavailable).
func (e *loop) Restore(ctx context.Context, snap []byte) error {
	nt, err := decodeTable(snap)
	if err != nil {
		return err
	}
	r := getReq(kRestore)
	r.table = nt
	_, err = e.askSettled(ctx, r)
	return err
}
