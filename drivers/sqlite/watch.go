package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

const (
	// minPoll is the pause after a change was seen: activity comes in
	// bursts, so look again soon.
	minPoll = 200 * time.Microsecond
	// pollerIdleExit is how long the poller keeps running with no waiter,
	// so that a busy handle does not start a goroutine per wait.
	pollerIdleExit = time.Second
)

// versionPoller reads PRAGMA data_version on one connection. The value
// changes when any other connection, in this process or another, has
// committed since the last read, and reading it costs no I/O.
type versionPoller interface {
	version(ctx context.Context) (int64, error)
	close() error
}

// watcher tells waiters that the database may have changed: at once for
// commits made through this handle (bump), and by polling data_version for
// everyone else's while someone waits.
type watcher struct {
	minPoll, maxPoll time.Duration
	// open gets a poller; nil in memory mode, where every change comes
	// through this handle.
	open func(ctx context.Context) (versionPoller, error)

	stopCh chan struct{} // closed by stop
	wg     sync.WaitGroup

	mu       sync.Mutex
	changed  chan struct{} // closed at the next change
	handed   bool          // changed has been given out since it was made
	subs     int           // waiters that want polling
	running  bool          // the poller goroutine is running
	stopping bool
}

func newWatcher(minPoll, maxPoll time.Duration) *watcher {
	return &watcher{
		minPoll: minPoll, maxPoll: maxPoll,
		stopCh:  make(chan struct{}),
		changed: make(chan struct{}),
	}
}

// next returns a channel closed at the next change. Take it before looking
// at the database, so that a change made after the look is not missed.
func (w *watcher) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handed = true
	return w.changed
}

// bump wakes everyone holding the current channel.
func (w *watcher) bump() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.handed {
		close(w.changed)
		w.changed = make(chan struct{})
		w.handed = false
	}
}

// subscribe asks for polling until the matching unsubscribe.
func (w *watcher) subscribe() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs++
	if w.open != nil && !w.running && !w.stopping {
		w.running = true
		w.wg.Add(1)
		go w.run()
	}
}

func (w *watcher) unsubscribe() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs--
}

// stop ends the poller and waits for it. It is called once, by Close.
func (w *watcher) stop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	close(w.stopCh)
	w.wg.Wait()
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
}

// run polls data_version with a backoff from minPoll to maxPoll (reset by
// every change seen) until stop, or until nobody has waited for
// pollerIdleExit.
func (w *watcher) run() {
	defer w.wg.Done()
	// The poller's calls take microseconds and stop waits for them, so they
	// need no cancellation (and a cancellable ctx costs a goroutine per
	// statement in the SQLite driver).
	ctx := context.Background()
	p, err := w.open(ctx)
	if err != nil {
		w.mu.Lock()
		w.running = false // waiters fall back on their own timers; the next subscribe retries
		w.mu.Unlock()
		return
	}
	defer p.close()
	last, err := p.version(ctx)
	if err != nil {
		last = -1
	}
	// A commit made between a subscriber's look and this first read is
	// in last already, and no later read would show it: wake everyone
	// once, to look again.
	w.bump()
	interval := w.minPoll
	var idleSince time.Time
	t := time.NewTimer(jitter(interval))
	defer t.Stop()
	for {
		select {
		case <-w.stopCh:
			return
		case <-t.C:
		}
		v, err := p.version(ctx)
		switch {
		case err != nil:
			interval = w.maxPoll
		case v != last:
			last = v
			w.bump()
			interval = w.minPoll
		default:
			interval = min(2*interval, w.maxPoll)
		}
		if w.idle(&idleSince) {
			return
		}
		t.Reset(jitter(interval))
	}
}

// idle reports (and records, by clearing running) that nobody has waited
// for pollerIdleExit.
func (w *watcher) idle(since *time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs > 0 {
		*since = time.Time{}
		return false
	}
	now := time.Now()
	if since.IsZero() {
		*since = now
		return false
	}
	if now.Sub(*since) < pollerIdleExit {
		return false
	}
	w.running = false
	return true
}

// connPoller reads data_version on a connection it holds for its lifetime:
// the value is only comparable on one connection.
type connPoller struct {
	conn *sql.Conn
	stmt *sql.Stmt
}

func (d *Driver) openVersionPoller(ctx context.Context) (versionPoller, error) {
	conn, err := d.rdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	stmt, err := conn.PrepareContext(ctx, dataVersionSQL)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &connPoller{conn: conn, stmt: stmt}, nil
}

func (p *connPoller) version(ctx context.Context) (int64, error) {
	var v int64
	err := p.stmt.QueryRowContext(ctx).Scan(&v)
	return v, err
}

func (p *connPoller) close() error {
	_ = p.stmt.Close()
	return p.conn.Close()
}

// Changed tells when the database may have changed (drivers.ChangeWatcher):
// a commit through this handle, or one another connection made, seen by
// polling data_version every PollInterval while someone watches. It does
// not tell keys apart, and a lease that runs out is no commit.
func (d *Driver) Changed(string) (<-chan struct{}, func()) {
	d.watch.subscribe()
	var once sync.Once
	return d.watch.next(), func() { once.Do(d.watch.unsubscribe) }
}
