package raftstore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/zerotal/lock/internal/logbridge"
)

// The log stores a node can keep its raft log in (Options.Log).
const (
	// LogBolt keeps the log in raft.db beside the term and vote, as every
	// data dir did before the WAL existed.
	LogBolt = "bolt"
	// LogWAL keeps the log in segment files under DataDir/wal (raft-wal);
	// raft.db keeps the term, the vote and the cluster ID.
	LogWAL = "wal"
)

// raft.db stays the stable store in both modes: the cluster ID, the term
// and the vote stay where the start-up checks already read them, and a
// bolt data dir keeps its bytes. It records which store holds the log: a
// data dir opened with the other store would otherwise start with an
// empty log. No record means bolt, so data dirs from before the WAL open
// as they did; a bolt data dir gets no record, so its bytes stay as they
// were.
var (
	logStoreKey = []byte("zerotal_lock_log_store")
	// walIDKey names the WAL of this data dir, in raft.db and in the WAL's
	// own meta file: a WAL copied from another data dir (another node,
	// another cluster) is refused instead of being taken for this log.
	walIDKey = []byte("zerotal_lock_wal_id")
)

// chooseLog reads which log store the data dir holds and checks it
// against the configured one; it returns the store to open.
func (s *Stores) chooseLog() (string, error) {
	stored, err := s.bolt.Get(logStoreKey)
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return "", fmt.Errorf("cluster: read the log store record in %s: %w", s.dir, err)
	}
	onDisk := string(stored)
	switch {
	case onDisk == LogWAL:
	case onDisk != "":
		return "", &dataError{path: filepath.Join(s.dir, raftDBFile), problem: fmt.Sprintf("records an unknown log store %q", onDisk), hint: replaceHint}
	default:
		boltState, err := s.boltHasState()
		if err != nil {
			return "", err
		}
		if boltState {
			onDisk = LogBolt
		} else if metas, _ := filepath.Glob(filepath.Join(s.dir, walDir, metadb.FileName)); len(metas) > 0 {
			return "", &dataError{path: filepath.Join(s.dir, raftDBFile), problem: "holds no raft state and no record of " + walDir + "/, but " + walDir + "/ exists: raft.db was replaced or lost", hint: replaceHint}
		}
	}
	want := s.opts.Log
	if want == "" {
		want = onDisk
	}
	if want == "" {
		want = s.opts.DefaultLog
	}
	if want == "" {
		want = LogBolt
	}
	if onDisk != "" && want != onDisk {
		return "", fmt.Errorf("cluster: data dir %s holds a %s raft log (%s), but this node is configured for a %s log: "+
			"start it with the %s log store (--raft-log %s), or give it an empty data dir to make it a new member that catches up from the leader",
			s.dir, onDisk, logLocation(onDisk), want, onDisk, onDisk)
	}
	return want, nil
}

func logLocation(kind string) string {
	if kind == LogWAL {
		return walDir + "/"
	}
	return raftDBFile
}

// boltHasState reports whether raft.db holds raft state of a bolt log
// node: a log, a term, or snapshots beside it.
func (s *Stores) boltHasState() (bool, error) {
	last, err := s.bolt.LastIndex()
	if err != nil {
		return false, fmt.Errorf("cluster: read raft state in %s: %w", s.dir, err)
	}
	return last > 0 || s.hasTermOrSnapshots(), nil
}

// hasTermOrSnapshots: raft has run on this data dir (it records a term
// before it writes or accepts any entry).
func (s *Stores) hasTermOrSnapshots() bool {
	_, err := s.bolt.GetUint64([]byte("CurrentTerm"))
	return err == nil || len(snapshotDirNames(s.dir)) > 0
}

// openWAL checks and opens the WAL under the data dir, recording it in
// raft.db first when the data dir is new.
func (s *Stores) openWAL() error {
	dir := filepath.Join(s.dir, walDir)
	id, err := s.bolt.Get(walIDKey)
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return fmt.Errorf("cluster: read the WAL's ID in %s: %w", s.dir, err)
	}
	if len(id) == 0 {
		// Recorded before the WAL is created: a WAL never exists without
		// raft.db naming it.
		id = []byte(newWALID())
		if err := s.bolt.Set(walIDKey, id); err != nil {
			return fmt.Errorf("cluster: record the WAL in %s: %w", s.dir, err)
		}
		if err := s.bolt.Set(logStoreKey, []byte(LogWAL)); err != nil {
			return fmt.Errorf("cluster: record the WAL in %s: %w", s.dir, err)
		}
	}
	hadWAL := s.hasTermOrSnapshots()
	warn := func(msg string, args ...any) { s.opts.Logger.Warn(msg, args...) }
	if err := checkWALFiles(dir, hadWAL, warn); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("cluster: create WAL dir: %w", err)
	}
	// raft-wal's Close leaves its meta file open; the node closes it.
	s.walMeta = &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(s.walMeta), wal.WithLogger(logbridge.HCLog(s.opts.Logger, "wal")))
	if err != nil {
		return &dataError{path: dir, problem: "raft-wal refuses it: " + err.Error(), hint: replaceHint}
	}
	s.wal = w
	got, err := w.Get(walIDKey)
	if err != nil {
		return fmt.Errorf("cluster: read the WAL's ID in %s: %w", dir, err)
	}
	switch {
	case bytes.Equal(got, id):
		return nil
	case len(got) > 0:
		return &dataError{path: dir, problem: fmt.Sprintf("is the WAL %s, but raft.db records WAL %s: it was copied from another data dir", got, id), hint: replaceHint}
	}
	last, err := w.LastIndex()
	if err != nil {
		return &dataError{path: dir, problem: "read the last log index: " + err.Error(), hint: replaceHint}
	}
	if last > 0 || hadWAL {
		return &dataError{path: dir, problem: fmt.Sprintf("holds a log without this data dir's WAL ID %s: it was replaced or copied from elsewhere", id), hint: replaceHint}
	}
	if err := w.Set(walIDKey, id); err != nil {
		return fmt.Errorf("cluster: record the WAL's ID in %s: %w", dir, err)
	}
	return nil
}

func newWALID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// closeWAL closes the WAL and its meta file.
func (s *Stores) closeWAL() error {
	var errs []error
	if s.wal != nil {
		errs = append(errs, s.wal.Close())
	}
	if s.walMeta != nil {
		errs = append(errs, s.walMeta.Close())
	}
	return errors.Join(errs...)
}

// logPath is the file or directory the log lives in, for errors.
func (s *Stores) logPath() string {
	if s.wal != nil {
		return filepath.Join(s.dir, walDir)
	}
	return filepath.Join(s.dir, raftDBFile)
}

var _ raft.LogStore = (*wal.WAL)(nil)
