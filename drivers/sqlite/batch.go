package sqlite

import (
	"context"
	"slices"

	"github.com/zerotal/lock/drivers"
)

// writeOp is one call waiting for the write connection.
type writeOp struct {
	ctx    context.Context
	fn     func(ctx context.Context) error
	result chan error // capacity 1: the run never waits for the caller
}

// unqueue takes w out of the pending list. It reports false when a run has
// already taken w, whose result will then come.
func (d *Driver) unqueue(w *writeOp) bool {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	i := slices.Index(d.pending, w)
	if i < 0 {
		return false
	}
	d.pending = slices.Delete(d.pending, i, i+1)
	return true
}

// runPending runs every pending call. The caller holds wsem.
func (d *Driver) runPending() {
	d.pmu.Lock()
	ops := d.pending
	d.pending = nil
	d.pmu.Unlock()
	if d.closed.Load() {
		for _, w := range ops {
			w.result <- drivers.ErrClosed
		}
		return
	}
	b := d.newBusyBackoff()
	for {
		ops = dropEnded(ops)
		if len(ops) == 0 {
			return
		}
		err := d.runOnce(ops)
		if !isBusy(err) {
			return
		}
		// Nothing ran: wait, then try again with the calls still wanted.
		if werr := b.wait(context.Background(), "write", err); werr != nil {
			for _, w := range ops {
				w.result <- werr
			}
			return
		}
	}
}

// dropEnded answers the calls whose context has ended, which have not run,
// and returns the others.
func dropEnded(ops []*writeOp) []*writeOp {
	live := ops[:0]
	for _, w := range ops {
		if err := w.ctx.Err(); err != nil {
			w.result <- err
			continue
		}
		live = append(live, w)
	}
	return live
}

// runOnce runs ops and answers each of them, except when the database was
// locked by another process before anything ran: then it answers nobody
// and returns the busy error for runPending to retry.
//
// One call runs alone, as its own statement or transaction. Several run
// in one BEGIN IMMEDIATE transaction, each statement still atomic and in
// arrival order; a run that fails part-way is rolled back and each call is
// then run alone, so that one call's failure is not another's.
func (d *Driver) runOnce(ops []*writeOp) error {
	if len(ops) == 1 {
		// The statements take microseconds, and a cancellable ctx costs the
		// SQLite driver a goroutine per statement: a call once run is not
		// cut short (w.ctx still keeps the values it carries).
		w := ops[0]
		err := w.fn(context.WithoutCancel(w.ctx))
		if isBusy(err) {
			return err
		}
		w.result <- err
		return nil
	}
	// The statements of a run take microseconds and must not be cut short
	// by one caller's ctx, which would undo the others' work.
	ctx := context.WithValue(context.Background(), runKey{}, true)
	d.admits = d.admits[:0]
	if _, err := d.wconn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		if isBusy(err) {
			return err
		}
		return d.runAlone(ops)
	}
	for _, w := range ops {
		if err := w.fn(ctx); err != nil {
			d.rollback(ctx)
			return d.runAlone(ops)
		}
	}
	if _, err := d.wconn.ExecContext(ctx, "COMMIT"); err != nil {
		d.rollback(ctx)
		return d.runAlone(ops)
	}
	d.txs.Add(1)
	d.deliverAdmits()
	for _, w := range ops {
		w.result <- nil
	}
	return nil
}

// runAlone runs each call as its own statement, retrying while the
// database is busy, after a joint run failed.
func (d *Driver) runAlone(ops []*writeOp) error {
	for _, w := range ops {
		w.result <- d.retryBusy(w.ctx, "write", w.fn)
	}
	return nil
}

// rollback ends a failed run. Its error is ignored: in WAL mode a rollback
// only drops pages held in memory, and SQLite may already have rolled the
// transaction back itself after the error.
func (d *Driver) rollback(ctx context.Context) {
	d.admits = d.admits[:0] // undone
	_, _ = d.wconn.ExecContext(ctx, "ROLLBACK")
}
