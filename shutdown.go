package lock

import "context"

// Shutdown stops the Manager gracefully, in the manner of
// http.Server.Shutdown: it stops taking locks, asks the callbacks still
// running to stop, waits for them to return and release their locks, and
// then closes the Manager (see Close) and its driver.
//
// In order:
//
//   - From its start, every call that would take a lock (Try, Block,
//     Lock.Acquire, Lock.Block) returns ErrClosed, and every Block still
//     waiting for its lock returns an error matching ErrClosed. Calls on
//     locks already held (Release, Refresh, ForceRelease) and Exists keep
//     working until the driver closes.
//   - The context of every callback running under a Try or Block of this
//     Manager is cancelled with a *LostError of reason ErrLostClosed as its
//     cause (it matches ErrClosed), and refreshes stop. A callback's Try or
//     Block returns that error once the callback has returned and its lock
//     is released, as usual.
//   - Shutdown waits until every such callback has returned and its lock is
//     released, and for the releases sent in the background (after a call
//     whose ctx ended, or whose answer was lost; each bounded by a few
//     seconds), and then calls Close.
//
// If ctx ends first, Shutdown returns ctx.Err() without closing anything:
// the locks of the callbacks that returned are released; the callbacks
// still running keep theirs (no longer refreshed) and release them when
// they return, as long as the Manager is not closed. Call Close then to
// close the driver at once; the locks of callbacks still running stay held
// on a shared backend until their TTL runs out. Shutdown may be called
// again to wait longer.
//
// Locks held through handles (Make and Lock.Acquire or Lock.Block) are not
// Shutdown's to release: release them before. So are acquisitions still on
// their way to the backend when Shutdown begins: one granted after
// Shutdown has closed the driver stays held until its TTL on a shared
// backend. Close gives up the background releases still under way.
//
// After Close, Shutdown returns nil at once.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.stopping.Store(true)
	m.waits.quit()
	select {
	case m.shutdownSem <- struct{}{}:
		defer func() { <-m.shutdownSem }()
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, w := range m.watches.Drain() {
		w.Close()
	}
	for !m.watches.Empty() {
		select {
		case <-m.idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := m.cleanups.wait(ctx); err != nil {
		return err
	}
	return m.Close()
}
