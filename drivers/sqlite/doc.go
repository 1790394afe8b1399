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
// Every operation is one SQL statement or one transaction, so it is atomic
// at the database: acquire inserts the grant, replaces an expired one, or
// refreshes the deadline when the same owner already holds it; release
// and extend are guarded by the owner token; force release deletes
// whoever holds the key. A grant with a cap on its total hold time
// (drivers.Request.MaxHold) has the cap written in its row by the
// statement that grants it (for a waiter let in by another process, from
// that moment), and no refresh, by Extend or by the owner's acquire, sets
// its deadline past the cap: there it lapses like any grant and the next
// waiter comes in.
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
// # Claims and waiting
//
// Every claim is one data model: a grant is a row of its key, owner and
// claim (a mutex is the exclusive claim of one slot; a semaphore of N has
// N slots; a read/write lock's readers share it and a writer holds it
// alone), and a waiter's place is a row of the key's queue, in the file.
// The uncontended acquire of one key, of any claim, is one statement: it
// grants when nobody waits and the claim fits. A set of keys is one
// transaction, all keys or none.
//
// A wait, for one key or a set, is first come, first served across the
// processes sharing the file, whatever the claim: in one transaction it
// takes what is free and queues a place on each busy key; a release, a
// force release or a waiter's leaving lets the head of the queue in, in
// the same transaction, while it fits. SQLite cannot tell a process that
// a row changed, so waiters poll, cheaply: while a handle has waiters, one
// goroutine reads PRAGMA data_version (a look at the WAL index in shared
// memory, no I/O and no lock) every 0.2 ms to Config.PollInterval with
// jitter, and wakes them when any process has committed (at once for a
// commit through the same handle). Of one handle's waiters for one key,
// only the first reads it at every change, and a waiter let in by a
// transaction of its own handle is handed its grant without a read; a
// wait for a key the handle saw queued queues behind in one statement.
// A woken waiter reads its keys, and
// writes only when its turn came with nobody to let it in (a grant
// lapsed), or to keep its place alive: it visits it at least once a
// second, and the place of a process that died lapses after three
// seconds. The keys a set has taken while it waits for the others live as
// long as its places, and start their TTL when the last one comes.
//
// # Schema
//
// The tables (zerotal_lock_meta, zerotal_locks: the grants, and from
// version 3 zerotal_queue: the places) are created or migrated on first
// use, and the schema version is stored in the file; the rows of a file
// of version 1 (v0.1.0), 2 or 3 are carried over, in place. Version 4
// adds a grant's cap (cap_us) and a place's MaxHold (max_hold_us), NULL
// when there is none. A file written by a newer
// version of this package is refused with ErrSchemaTooNew rather than
// misread; a file that is not a SQLite database is refused with
// ErrNotDatabase, and neither is modified.
package sqlite
