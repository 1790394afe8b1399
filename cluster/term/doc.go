// Package term is a leadership term's time: the logical clock a leader
// stamps every command with, and the expiry loop that ends the grants due
// at that clock.
//
// Wall clocks of different nodes are never compared. A new leader starts
// its clock from the replicated FSM time, and lets it stand still for a
// grace period (election timeout + leader lease) first, so that a
// holder's remaining TTL may grow across a leader change but never
// shrinks. Only the leader proposes expiries, and the FSM applies one
// only if the grant it names is still there and due in FSM time, so a
// stale proposal from a deposed or paused leader is a no-op.
package term
