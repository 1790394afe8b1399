// Package raftstore opens and checks what a node keeps on disk for raft:
// the stable store (raft-boltdb, raft.db: term, vote, cluster ID), the log
// in one of two stores behind a cache of the newest entries, the file
// snapshot store (snapshots/).
//
// The log is in raft.db too (LogBolt), or in segment files under wal/
// (LogWAL, raft-wal). raft.db records which one holds it (wal.go): a data
// dir opened with the other store is refused, naming both, and a data dir
// without the record (every one from before the WAL) holds a bolt log.
//
// A node must never start with less than it had, so the data directory
// is checked before raft reads it (see CheckFiles, the WAL's checks in
// walcheck.go, and Stores.Check): a damaged file refuses the start with
// an error that names it. What the entries and snapshots hold is the
// FSM's business; Options lets the caller pass its decoders in, and this
// package imports nothing of the lock table.
package raftstore
