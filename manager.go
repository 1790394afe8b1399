package lock

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/heldwatch"
)

// DefaultPrefix is prepended to every key unless configured otherwise, on
// every backend but the cluster: its key space holds only locks, and its
// HTTP API and lockcluster commands name keys as written (see
// drivers.KeyNamer).
const DefaultPrefix = "zerotal_lock:"

// cleanupTimeout bounds the releases this package makes on the caller's
// behalf after the caller's own context may have ended (the release at the
// end of Try and Block, the release of a grant nobody will use). The lock
// expires by its TTL anyway if the backend does not answer in time.
const cleanupTimeout = 5 * time.Second

// Manager creates locks on one driver. It is safe for concurrent use; create
// one per backend and share it.
type Manager struct {
	driver drivers.Driver
	caps   drivers.Capabilities // what the driver's Acquire serves itself
	// ownerSuffix follows the token of every owner the Manager makes:
	// ":" and the holder's description (WithHolder), or "".
	ownerSuffix string
	prefix      string
	prefixSet   bool // WithPrefix was given
	logger      *slog.Logger
	// invalid is what WithHolder found wrong, which every call that takes
	// a lock reports: a description nobody would see as given.
	invalid error

	closed    atomic.Bool
	stopping  atomic.Bool // Shutdown or Close began: no new lock is taken
	closeOnce sync.Once
	closeErr  error
	watches   heldwatch.Registry // the locks held for callbacks of Try or Block
	startMu   sync.RWMutex       // orders goroutine starts before Close's wait
	wg        sync.WaitGroup     // refresher and background cleanup goroutines
	cleanups  cleanupSet         // the background releases, for Shutdown

	// bg is the context of background cleanups; Close cancels it, so that
	// a backend that does not answer never holds Close up.
	bg       context.Context
	cancelBg context.CancelFunc

	// waits ends every Block still waiting; Shutdown and Close quit it.
	waits quitSet

	// idle is signalled when a callback returns during Shutdown;
	// shutdownSem lets one Shutdown wait for it at a time.
	idle        chan struct{}
	shutdownSem chan struct{}
}

// ManagerOption configures a Manager built with New.
type ManagerOption func(*Manager)

// WithPrefix sets the prefix prepended to every key. Without it the
// Manager uses the driver's choice (drivers.KeyNamer) or else
// DefaultPrefix. An empty prefix is allowed.
func WithPrefix(p string) ManagerOption {
	return func(m *Manager) { m.prefix, m.prefixSet = p, true }
}

// WithLogger sets the logger for events nobody else would see: a lock lost
// in the background, a release that failed after the callback returned. The
// default discards everything.
func WithLogger(l *slog.Logger) ManagerOption {
	return func(m *Manager) {
		if l != nil {
			m.logger = l
		}
	}
}

// MaxHolderLen is the longest holder description WithHolder and
// Config.Holder accept, in bytes.
const MaxHolderLen = 256

// WithHolder sets how the Manager's grants describe their holder to
// others: a short text such as "deploy@host-3" that follows the random
// token in every owner it makes, and that a contender sees in
// NotAcquiredError.Holder, "lockcluster locks" and GET /v1/lock (never
// the token). The default is the process id and the host name
// ("pid4242@host-3"); "" describes nothing. It is one word: at most
// MaxHolderLen bytes of visible characters (letters, digits, punctuation,
// symbols, in any script), no spaces or control characters, since owners
// travel in key=value lines and table columns. Another description is
// shown to nobody: every call of the Manager that takes a lock (Make,
// Try, Block, TryAll, BlockAll) reports it as an *InvalidError. An owner
// given with WithOwner is used as given.
func WithHolder(h string) ManagerOption {
	return func(m *Manager) {
		m.ownerSuffix, m.invalid = "", validateHolder("holder", h)
		if h != "" && m.invalid == nil {
			m.ownerSuffix = ":" + h
		}
	}
}

// defaultHolder is the holder description of a Manager without
// WithHolder: the process id and the host name, with whatever a holder
// description may not contain replaced by '_' (a host name has none).
var defaultHolder = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fitHolder("pid" + strconv.Itoa(os.Getpid()) + "@" + host)
})

// New returns a Manager on d, which it owns from now on: Manager.Close
// closes d. It panics if d is nil, which is a programming error.
func New(d drivers.Driver, opts ...ManagerOption) *Manager {
	if d == nil {
		panic("lock: New called with a nil driver")
	}
	m := &Manager{
		driver:      d,
		caps:        d.Capabilities(),
		prefix:      DefaultPrefix,
		logger:      slog.New(slog.DiscardHandler),
		ownerSuffix: ":" + defaultHolder(),
	}
	m.bg, m.cancelBg = context.WithCancel(context.Background())
	m.idle, m.shutdownSem = make(chan struct{}, 1), make(chan struct{}, 1)
	for _, opt := range opts {
		if opt != nil {
			opt(m)
		}
	}
	if kn, ok := d.(drivers.KeyNamer); ok && !m.prefixSet {
		m.prefix = kn.DefaultPrefix()
	}
	return m
}

// Driver returns the driver the Manager works on.
func (m *Manager) Driver() drivers.Driver { return m.driver }

// Prefix returns the prefix the Manager adds to every key.
func (m *Manager) Prefix() string { return m.prefix }

// Close stops every refresher, cancels the context of every callback still
// running under a Try or Block of this Manager (with cause a *LostError of
// reason ErrLostClosed, which matches ErrClosed; Try and Block return it),
// ends
// every Block still waiting for its lock (with ErrClosed), gives up the
// background releases of grants whose answer was lost or that were lost
// after a refresh error (those expire by their TTL), and closes the driver.
//
// Close does not wait for those callbacks: a callback still running when
// the driver closes cannot release its lock, which then stays held on a
// shared backend (sqlite, redis, cluster) until its TTL runs out. To free
// every lock on the way out, call Shutdown instead: it does the same after
// letting the callbacks return and release their locks.
//
// Close is idempotent: later calls return nil. Every other call made on the
// Manager or its locks afterwards returns ErrClosed.
func (m *Manager) Close() error {
	first := false
	m.closeOnce.Do(func() {
		first = true
		m.closed.Store(true)
		m.stopping.Store(true)
		m.waits.quit()
		for _, w := range m.watches.Drain() {
			w.Close()
		}
		m.cancelBg()
		// A barrier, not a critical section: once every start that took
		// the read lock before the drain has counted itself in wg, none
		// can start any more (watches refuse, closed is set).
		m.startMu.Lock()
		//lint:ignore SA2001 the empty critical section is the barrier
		m.startMu.Unlock()
		m.wg.Wait()
		m.closeErr = m.driver.Close()
	})
	if !first {
		return nil
	}
	return m.closeErr
}

// Make returns a handle on key with the given TTL, not acquired: call
// Acquire or Block on it. opts may be Semaphore(n), Read() or Write(), to
// hold the key in that way, and WithMaxHold, to cap each grant the handle
// takes; other options go to Lock.Block. An invalid key, TTL or option,
// or a claim or cap the driver cannot serve (ErrUnsupported), is reported
// by every call made on the handle.
func (m *Manager) Make(key string, ttl time.Duration, opts ...Option) *Lock {
	l := &Lock{}
	m.initLock(l, key, ttl)
	if m.invalid != nil {
		l.invalid = m.invalid
	} else if err := validateKey(m.prefix, key); err != nil {
		l.invalid = err
	} else if err := validateTTL(ttl); err != nil {
		l.invalid = err
	} else if l.claim, l.maxHold, err = makeOptions(opts); err != nil {
		l.invalid = err
	} else if err := m.checkClaim(l.claim); err != nil {
		l.invalid = err
	} else if err := m.checkMaxHold(l.maxHold); err != nil {
		l.invalid = err
	}
	return l
}

// initLock sets up a handle allocated by the caller, once key and ttl have
// been validated.
func (m *Manager) initLock(l *Lock, key string, ttl time.Duration) {
	l.m, l.key, l.keys[0], l.ttl = m, key, m.prefix+key, ttl
}

// Exists reports whether key is currently held by anyone.
func (m *Manager) Exists(ctx context.Context, key string) (bool, error) {
	if err := validateKey(m.prefix, key); err != nil {
		return false, err
	}
	if m.closed.Load() {
		return false, ErrClosed
	}
	ok, err := m.driver.Exists(ctx, m.prefix+key)
	if err != nil {
		return false, failed(ctx, "exists", key, false, err)
	}
	return ok, nil
}

// register records the watch of a running callback so that Close can
// cancel it, and starts its refresher. It reports false when the Manager
// is closed.
func (m *Manager) register(h *heldWatch) bool {
	if !h.w.Refreshes() {
		return m.watches.Add(&h.w, &m.stopping)
	}
	// The refresher is counted in wg under startMu, which Close takes
	// before it waits: a refresher is either counted before the wait or
	// never started.
	m.startMu.RLock()
	defer m.startMu.RUnlock()
	if !m.watches.Add(&h.w, &m.stopping) {
		return false
	}
	m.wg.Add(1)
	go h.refreshWhileHeld()
	return true
}

// unregister forgets h, whose lock is released; during Shutdown it tells
// Shutdown to look again. (Shutdown sets stopping before it looks, and h is
// removed before stopping is read here: either Shutdown's look misses h,
// or h's removal sees stopping and signals.)
func (m *Manager) unregister(h *heldWatch) {
	m.watches.Remove(&h.w)
	if m.stopping.Load() {
		select {
		case m.idle <- struct{}{}:
		default:
		}
	}
}

// background runs fn in a goroutine that Close waits for (after cancelling
// fn's ctx), unless the Manager is closed already.
func (m *Manager) background(fn func(ctx context.Context)) bool {
	m.startMu.RLock()
	defer m.startMu.RUnlock()
	if m.closed.Load() {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn(m.bg)
	}()
	return true
}
