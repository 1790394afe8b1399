package postgres

// The statements. Every one is sent with the extended protocol's unnamed
// statement, parsed and run in one exchange (pgx.QueryExecModeExec), and a
// transaction is sent as one batch from BEGIN to its end where it can be:
// nothing outlives a transaction on its server connection, so a pooler in
// transaction mode may hand the next one to any server connection.
const (
	// lockSQL serialises the transactions on the keys $1: a
	// transaction-scoped advisory lock for each, taken in one order by
	// every transaction and released at its end. The limits end a
	// transaction that a vanished client left open, and one stuck behind
	// it, rather than let them stall every caller of its keys.
	lockSQL = `SELECT set_config('lock_timeout', '5s', true),
	set_config('idle_in_transaction_session_timeout', '10s', true),
	count(pg_advisory_xact_lock(2052410443, h))
FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($1::text[]) AS k ORDER BY 1 OFFSET 0) AS s`

	nowSQL = `SELECT zerotal_lock.now_us()`

	// stateSQL reads every grant and place of the keys $1, lapsed ones
	// too (the caller judges them by the same now and sweeps them).
	// The last column is a grant's cap (0 for none) or a place's
	// MaxHold.
	stateSQL = `SELECT key, false, owner, fence, expires_us, kind, lim, excl, 0::bigint, coalesce(cap_us, 0) FROM zerotal_lock.grants WHERE key = ANY($1::text[])
UNION ALL SELECT key, true, owner, ttl_us, alive_us, kind, lim, excl, seq, max_hold_us FROM zerotal_lock.queue WHERE key = ANY($1::text[])`

	sweepGrantsSQL = `DELETE FROM zerotal_lock.grants WHERE key = ANY($1::text[]) AND expires_us <= $2::bigint`
	sweepQueueSQL  = `DELETE FROM zerotal_lock.queue WHERE key = ANY($1::text[]) AND alive_us <= $2::bigint`

	// grantSQL writes a new grant with the next fence, its deadline
	// already within its cap $7 (NULL for none).
	grantSQL = `INSERT INTO zerotal_lock.grants (key, owner, fence, expires_us, kind, lim, excl, cap_us)
VALUES ($1::text, $2::text, nextval('zerotal_lock.fences'), $3::bigint, $4::smallint, $5::integer, $6::boolean, $7::bigint)
ON CONFLICT (key, owner) DO UPDATE SET fence = excluded.fence, expires_us = excluded.expires_us,
	kind = excluded.kind, lim = excluded.lim, excl = excluded.excl, cap_us = excluded.cap_us
RETURNING fence`
	// holdSQL sets the deadline of owner's grant: a completed wait's TTL
	// (a refresh), or, while a set still waits, at least a place's lease;
	// never past the grant's cap. $5 is the cap of a grant that has none
	// yet (a set's key, taken while it waited, whose cap counts from the
	// set's grant), NULL to keep the cap as it is.
	holdSQL = `UPDATE zerotal_lock.grants SET cap_us = coalesce(cap_us, $5::bigint),
	expires_us = least(CASE WHEN $4::boolean THEN greatest(expires_us, $3::bigint) ELSE $3::bigint END, coalesce(cap_us, $5::bigint))
WHERE key = $1::text AND owner = $2::text`
	dropSQL = `DELETE FROM zerotal_lock.grants WHERE key = $1::text AND owner = $2::text`
	// enqueueSQL queues owner's place at the end of key's queue, or keeps
	// its live place alive where it is (lapsed ones are swept first).
	// It returns the place's seq, by which a notice of its admission is
	// known to be of this place (letInSQL).
	enqueueSQL = `INSERT INTO zerotal_lock.queue (key, owner, seq, kind, lim, excl, alive_us, ttl_us, max_hold_us)
VALUES ($1::text, $2::text, nextval('zerotal_lock.places'), $3::smallint, $4::integer, $5::boolean, $6::bigint, $7::bigint, $8::bigint)
ON CONFLICT (key, owner) DO UPDATE SET alive_us = excluded.alive_us,
	kind = excluded.kind, lim = excluded.lim, excl = excluded.excl, ttl_us = excluded.ttl_us, max_hold_us = excluded.max_hold_us
RETURNING seq`
	dequeueSQL = `DELETE FROM zerotal_lock.queue WHERE key = $1::text AND owner = $2::text`

	// letInSQL grants a place of key $1 to its owner $2 (grantSQL's
	// arguments) and tells every listener, on the channel letInChannel,
	// which place was let in ($8, its seq) with which fence: its waiter
	// takes the grant from the notice without reading the key, and no
	// other waiter is woken. The payload is "FENCE SEQ N OWNER KEY", N
	// the owner's length in bytes, so that any owner and key parse; at
	// most MaxOwnerLen+MaxKeyLen and some digits, within NOTIFY's 8000.
	letInSQL = `WITH g AS (` + grantSQL + `)
SELECT fence FROM g, LATERAL (SELECT pg_notify('` + letInChannel + `',
	fence || ' ' || $8::bigint || ' ' || octet_length($2::text) || ' ' || $2::text || ' ' || $1::text)) AS n`

	// releaseSQL deletes owner's grant, saying whether it was live and
	// whether the key has live places, whose head the releaser lets in.
	releaseSQL = `WITH gone AS (DELETE FROM zerotal_lock.grants WHERE key = $1::text AND owner = $2::text RETURNING expires_us),
now AS (SELECT zerotal_lock.now_us() AS us)
SELECT EXISTS (SELECT 1 FROM gone, now WHERE expires_us > now.us),
	EXISTS (SELECT 1 FROM zerotal_lock.queue, now WHERE key = $1::text AND alive_us > now.us)`
	forceSQL = `WITH gone AS (DELETE FROM zerotal_lock.grants WHERE key = $1::text RETURNING 1)
SELECT (SELECT count(*) FROM gone), EXISTS (SELECT 1 FROM zerotal_lock.queue WHERE key = $1::text AND alive_us > zerotal_lock.now_us())`
	// extendSQL never takes a deadline past the grant's cap.
	extendSQL = `UPDATE zerotal_lock.grants SET expires_us = least(zerotal_lock.now_us() + $3::bigint, cap_us)
WHERE key = $1::text AND owner = $2::text AND expires_us > zerotal_lock.now_us()`
	existsSQL = `SELECT EXISTS (SELECT 1 FROM zerotal_lock.grants WHERE key = $1::text AND expires_us > zerotal_lock.now_us())`
)
