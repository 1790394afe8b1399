// Package fence is the resource's side of fencing: it lets a database or an
// HTTP service refuse a write from a lock holder that has been overtaken by
// a newer one.
//
// # Why
//
// A lock with a TTL cannot stop its holder. A process that is paused (a
// long garbage collection, a stopped VM, a SIGSTOP, a network that holds
// its packets) past its TTL does not know it: the key has passed to a
// newer holder, which writes, and then the old one wakes up and writes
// too, over the newer write, believing it still holds the lock. No check
// the old holder makes before writing closes the gap, since it can be
// paused between the check and the write. Only the resource sees both
// writes in the order they arrive, so only it can refuse the late one:
// every grant carries a fence (lock.Lock.Fence), strictly increasing per
// key, and a resource that remembers the highest fence it has accepted
// refuses any write with a lower one. This is Martin Kleppmann's fencing
// token argument ("How to do distributed locking", 2016).
//
// # The pattern
//
// A resource keeps, per resource name, the highest fence it has seen. A
// write comes with its fence; in one atomic step the resource compares
// it with the highest, and either records it and makes the write, or
// refuses both. A write with the same fence as the highest is accepted:
// one holder writes many times.
//
// One lock key guards one resource: fences of different keys are not
// ordered, so the resource name must stand for exactly one key (the
// client helpers send Lock.Key as the name).
//
// # database/sql
//
// DB keeps the highest fences in a table of the guarded database and makes
// the check the first statement of the write's own transaction:
//
//	g, err := fence.NewDB(db, fence.DBConfig{Dialect: fence.PostgreSQL})
//	err = g.Write(ctx, l.Key(), l.Fence(), func(tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, `UPDATE invoices SET paid = true WHERE id = $1`, 123)
//		return err
//	})
//	if errors.Is(err, fence.ErrStale) {
//		// a newer holder has written: nothing was
//	}
//
// The table, and the one guard statement, per dialect (DefaultTable's
// name; $1 or the first ? is the resource, $2 or the second ? the fence):
//
//	PostgreSQL:
//	  CREATE TABLE IF NOT EXISTS zerotal_fences (resource text PRIMARY KEY, fence bigint NOT NULL)
//	  INSERT INTO zerotal_fences AS f (resource, fence) VALUES ($1, $2)
//	    ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence
//	SQLite:
//	  CREATE TABLE IF NOT EXISTS zerotal_fences (resource TEXT PRIMARY KEY NOT NULL, fence INTEGER NOT NULL)
//	  INSERT INTO zerotal_fences (resource, fence) VALUES (?, ?)
//	    ON CONFLICT (resource) DO UPDATE SET fence = excluded.fence WHERE fence <= excluded.fence
//	MySQL, MariaDB:
//	  CREATE TABLE IF NOT EXISTS zerotal_fences (resource VARBINARY(1024) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB
//	  INSERT INTO zerotal_fences (resource, fence) VALUES (?, ?)
//	    ON DUPLICATE KEY UPDATE fence = IF(fence <= VALUES(fence), VALUES(fence), LAST_INSERT_ID(fence))
//
// On PostgreSQL and SQLite the guard affects one row when the fence is
// admitted (a new resource's row inserted, or its fence raised or equal)
// and none when it is stale; to say which fence won, read it after a
// refusal (SELECT fence FROM zerotal_fences WHERE resource = $1). MySQL
// counts a row set to the value it already has as unaffected, so a
// refusal and a holder writing again look alike there; instead the
// refusing branch leaves the row as it is and sets the statement's insert
// id (the OK packet's, mysql_insert_id, sql.Result.LastInsertId) to the
// recorded fence, which the table, having no AUTO_INCREMENT column,
// otherwise leaves 0: 0 is admitted, anything else the fence that won.
// Either way: stale means roll back.
//
// The guard also orders concurrent writers: it takes the resource's row
// lock (PostgreSQL's ON CONFLICT and MySQL's upsert lock the existing row
// even when they leave it unchanged; SQLite has one writer at a time), held
// until the transaction ends. An older holder whose transaction starts
// while a newer one's is open waits for it, then finds the newer fence
// and is refused; so no write with a fence below one already committed
// ever commits after it. Use READ COMMITTED, the default of PostgreSQL;
// stricter levels may refuse the waiter with a serialization error
// instead, a refusal too. On SQLite, set a busy timeout on the
// connection (modernc.org/sqlite: "_pragma=busy_timeout(5000)") so that
// a writer waits for the write lock instead of failing.
//
// # net/http
//
// Handler wraps a handler of the resource's service: a request names its
// resource and fence in the Header ("Zerotal-Fence: <resource> <fence>");
// one from an older holder is answered 412 Precondition Failed, and one
// without the header 428 Precondition Required. The highest fences live
// in a Store: Memory by default, or a DB, whose transaction the handler
// then writes in. On the client, Transport (an http.RoundTripper) or
// SetHeader sends a *lock.Lock's key and fence, and CheckResponse turns
// the refusal back into a *StaleError.
//
// # Limits
//
// A fence protects only a resource that checks it: one that cannot store
// and compare a number (a plain file system, a mail server, an API you
// do not run) is not protected by passing one, and needs a lock whose
// holder cannot outlive it. The check protects the writes made through
// it: a write that bypasses the guard, or a second resource written in
// the same step, is not covered (write both in the guarded transaction).
// Memory forgets on restart, so it admits any first fence after one; use
// a DB store when that matters. And the resource learns of a newer holder
// only at its first guarded write: until then an older holder's write is
// admitted, since nothing newer has been written that it could overwrite.
//
// The guard trusts the fence it is given: it orders honest holders, it
// does not authenticate them. A client that may call the resource at all
// can send a huge fence and lock every later holder out of that resource
// name, so put the guard behind the service's own authentication, and
// let only callers that hold the lock's credentials reach it. Memory keeps
// one entry per resource name it has seen, and cannot forget one without
// letting a stale holder back in: behind Handler, where clients name the
// resource, bound the names the service accepts (or use a DB store).
package fence
