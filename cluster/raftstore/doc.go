// Package raftstore opens and checks what a node keeps on disk for raft:
// the log and stable store (raft-boltdb, raft.db, behind a cache of the
// newest entries), the file snapshot store (snapshots/) and the cluster
// ID stored beside raft's term and vote.
//
// A node must never start with less than it had, so the data directory
// is checked before raft reads it (see CheckFiles and Stores.Check): a
// damaged file refuses the start with an error that names it. What the
// entries and snapshots hold is the FSM's business; Options lets the
// caller pass its decoders in, and this package imports nothing of the
// lock table.
package raftstore
