// Package metrics is a lock cluster node's Prometheus series, labelled
// node=<ID>: the lock table's, the requests', and raft's, read from raft
// when scraped.
//
// # Metrics
//
// Labelled node=<ID>: zerotal_lock_acquire_wait_seconds (request to grant
// on the leader), zerotal_lock_hold_seconds (grant to release or expiry,
// in replicated time), zerotal_lock_contention_total (acquires answered
// 409), zerotal_lock_expired_total (expiries applied),
// zerotal_lock_waiters (queued waiters), zerotal_lock_keys,
// zerotal_lock_raft_state (0 follower, 1 candidate, 2 leader, 3 shutdown),
// zerotal_lock_leadership_changes_total, and zerotal_lock_build_info, a
// constant 1 labelled with the build's version, revision and goversion.
//
// Raft, read from the node's raft when scraped and labelled node=<ID>
// too: zerotal_lock_raft_term, zerotal_lock_raft_last_log_index,
// zerotal_lock_raft_commit_index, zerotal_lock_raft_applied_index,
// zerotal_lock_raft_fsm_pending (committed batches queued for the FSM),
// zerotal_lock_raft_last_snapshot_index, zerotal_lock_raft_voters,
// zerotal_lock_raft_last_contact_seconds (since a follower last heard
// from its leader; 0 on the leader) and zerotal_lock_ready (1 when
// /readyz answers 200). raft's own go-metrics are not exported: their
// sink is global to the process, where several nodes may run.
//
// With a registry of its own (Config.Registry nil) a node also serves the
// Go runtime's go_* and the process's process_* series, unlabelled. A
// registry passed in is the caller's to equip with those
// (prometheus.DefaultRegisterer has them already).
package metrics
