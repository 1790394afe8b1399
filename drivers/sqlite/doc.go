// Package sqlite is the lock driver for one host: every process that opens
// the same database file shares one lock table, kept in SQLite through
// modernc.org/sqlite (pure Go, no cgo).
//
// Importing the package registers the "sqlite" driver of lock.Open:
//
//	import _ "github.com/zerotal/lock/drivers/sqlite"
//
// # Guarantees
//
// Every operation is one SQL statement, so it is atomic at the database:
// acquire inserts the row, takes over an expired row, or refreshes the
// deadline when the same owner already holds it; release and extend are
// guarded by the owner token; force release deletes whoever holds the key.
// Fences come from a counter stored in the same file and advanced by the
// statement that grants the key, so they strictly increase per key, across
// process restarts and crashes (and, with Config.Durable, across OS crashes
// and power cuts).
//
// The database runs in WAL mode. A process that dies, even with SIGKILL,
// loses nothing: its locks stay until their TTL runs out, then the next
// acquirer takes them over. By default (synchronous=NORMAL) a commit is not
// fsynced on its own, only checkpoints are: an OS crash or a power cut
// never corrupts the file but can lose the last few commits, and so hand
// out again a fence that was handed out just before. Config.Durable fsyncs
// every commit and closes that gap.
//
// SQLite admits one writer at a time. A driver handle sends its writes
// through one connection; calls that arrive while another is in flight are
// run together in one BEGIN IMMEDIATE transaction (group commit: one write
// lock and one commit for all of them, each statement still atomic, in
// arrival order). When another process holds the write lock (SQLITE_BUSY)
// the handle retries with a short jittered backoff until the call's context
// ends or Config.BusyTimeout passes, whichever comes first; then the call
// fails with an error matching drivers.ErrUnavailable. A busy statement has
// had no effect, so retrying it is always safe. A call whose context ends
// before its statement runs never runs; once it runs, it may take effect
// even if the context ends, like any call whose answer is lost.
//
// # One host, local disk
//
// Deadlines are measured with the host's wall clock, written as Unix
// microseconds. Every process sharing a file must therefore run on the same
// host (and a clock step changes every deadline at once). The file must be
// on a local file system: SQLite's WAL mode needs shared memory between the
// processes, which a network file system (NFS, SMB) does not provide, so
// those are not supported.
//
// The path ":memory:" gives a database private to the Driver value: it
// behaves like the memory driver, and no other handle, in this process or
// another, sees its locks. Point Path at a file to coordinate processes.
//
// # Waiting
//
// SQLite cannot tell a process that a row changed, so a waiting Acquire polls,
// cheaply: while a handle has waiters, one goroutine reads
// PRAGMA data_version (a look at the WAL index in shared memory, no I/O and
// no lock) every 0.2 ms to Config.PollInterval with jitter, and wakes the
// waiters when any process has committed. A woken waiter reads its key
// before it competes for the write lock, and it never sleeps past the
// holder's deadline or the caller's RetryDelay. Waiters on one key inside
// one handle queue in arrival order and only the first polls; a release by
// the same handle wakes it at once.
//
// # Semaphores and read/write locks
//
// Semaphores and read/write locks (drivers.Request.Claim) keep a key's kind,
// grants and queue in tables of their own, each operation one BEGIN
// IMMEDIATE transaction; fences come from the same counter. The queue is
// in the file, so waiting is first come, first served across processes:
// only the head of a key's queue is granted, when it fits. A waiter keeps
// its place alive by visiting it at least once a second; the place of a
// process that died lapses after three seconds. A trigger keeps a mutex
// off a key with a live grant or place.
//
// # Schema
//
// The tables (zerotal_lock_meta, zerotal_locks, and from version 2
// zerotal_shared_names, zerotal_shared_holders, zerotal_shared_queue) are
// created or migrated on first use,
// and the schema version is stored in the file. A file written by a newer
// version of this package is refused with ErrSchemaTooNew rather than
// misread; a file that is not a SQLite database is refused with
// ErrNotDatabase, and neither is modified.
package sqlite
