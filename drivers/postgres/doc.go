// Package postgres is a lock backend on a PostgreSQL database, for teams
// that run one already and would rather not run a service for a mutex.
// Importing it registers the driver "postgres" of lock.Open
// (LOCKCLUSTER_POSTGRES_URL, or DATABASE_URL when no other backend is
// configured).
//
// Every claim (mutex, semaphore, read/write lock, several keys at once)
// is one data model in the schema zerotal_lock: a row per grant, with its
// fence and deadline, and a row per waiter's place, first come, first
// served across every process on the database. An acquire is one
// transaction under transaction-scoped advisory locks on its keys; times
// are read from the database's clock, never the client's; fences come
// from a sequence, so they grow per key across restarts and across a
// key's rows being deleted.
//
// Nothing is kept in a session between transactions: no session advisory
// lock, no named prepared statement, no SET. So every operation is
// correct through PgBouncer or pgdog in transaction mode. The transaction
// that lets a waiter in (a release lets the head of the queue in itself)
// tells that waiter alone, with its grant's fence (NOTIFY on
// zerotal_lock_in, inside the transaction; directly within one handle);
// a handle listens on Config.ListenURL (a direct connection; URL by
// default), and its waiters also look at a bounded interval, so a
// notification lost behind a pooler only delays a waiter, never reorders
// the queue.
//
// A grant may carry a cap on its total hold time (drivers.Request.MaxHold),
// kept in its row: every statement that sets a deadline keeps it within
// the cap, so no refresh outlives it.
//
// The schema is created on first use and versioned (schema 2 added the
// cap); a driver upgrades an older one in one transaction and refuses a
// database whose schema is newer than it knows (ErrSchemaTooNew). A
// process of an older version still running is woken by nobody's notice
// and finds its turn by polling: upgrade every process.
package postgres
