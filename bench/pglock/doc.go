// Package pglock compares the zerotal lock PostgreSQL driver with bare
// session advisory locks (pg_try_advisory_lock, the lock most
// applications on PostgreSQL use today), side by side in one run on the
// same postgres, which the benchmark starts itself (drivers/postgres/pgtest),
// and the driver through PgBouncer in transaction mode beside it directly.
// It is a separate module so that what it compares with never becomes a
// dependency of the main module. cirello.io/pglock, the lease table most
// like the driver, is not compared: the module proxy does not serve it.
//
//	cd bench/pglock && go test -run '^$' -bench . -benchtime 2000x -count 1
//
// One cycle is one successful acquire followed by one release. "serial"
// is one worker; "spread" 16 workers, each on its own key; "hot" 8
// workers contending for one key, each waiting until it gets it (the
// advisory lock polls every millisecond, as pg_try_advisory_lock leaves a
// waiter to; the driver queues first come, first served, and the
// release lets the head in and tells that waiter alone). The advisory
// lock holds a pooled connection for as long as it
// holds the key, since the lock belongs to the session: it is not usable
// through a pooler in transaction mode, so it has no pgbouncer row. Every
// sub-benchmark reports cycles/s and the acquire latency p50 and p99.
package pglock
