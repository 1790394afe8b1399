package raftstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

// A node must never start with less than it had: a lock table that
// silently lost grants hands the same key out twice. raft and its stores
// do not all refuse damaged files on their own, so the node checks its
// data directory before raft starts:
//
//   - raft.db that is empty (bbolt would make it a new, empty log), missing
//     while snapshots or a WAL exist, truncated, or with damaged pages (bbolt would
//     crash the process with SIGBUS or a panic while opening it);
//   - raft.db without a current term while it holds a log or snapshots
//     exist (the file was replaced);
//   - a snapshot whose meta.json does not parse (raft skips it without a
//     word), whose state.bin fails its checksum or does not decode (raft
//     logs it and tries an older one), when no older snapshot and the log
//     make up for it;
//   - a log that does not reach back to the snapshot it continues (raft
//     would stop with "log not found" when applying);
//   - a log entry, after the snapshot, that does not decode (the FSM
//     would stop at it; Options.CheckCommand decodes).
//
// With the WAL (Options.Log), walcheck.go checks its files before
// raft-wal opens them, and the log checks above read the WAL.
//
// A damaged snapshot that an older snapshot and the log fully replace is
// only logged: raft falls back to them, and the table is complete.

const (
	raftDBFile    = "raft.db"
	snapshotsDir  = "snapshots"
	snapMetaFile  = "meta.json"
	snapStateFile = "state.bin"
)

// dataError says what is wrong with which file of the data directory.
type dataError struct {
	path    string
	problem string
	hint    string
}

func (e *dataError) Error() string {
	msg := "cluster: refusing to start: " + e.path + ": " + e.problem
	if e.hint != "" {
		msg += "; " + e.hint
	}
	return msg
}

const replaceHint = "replace this node's data directory from a backup, or empty it and join the node to the cluster again so that it catches up from the leader"

// CheckFiles runs before the raft store is opened (Open), on the files
// of dataDir as they are: bbolt would turn an empty raft.db into a new
// log, and crash on a truncated or damaged one.
func CheckFiles(dataDir string) error {
	path := filepath.Join(dataDir, raftDBFile)
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if snaps := snapshotDirNames(dataDir); len(snaps) > 0 {
			return &dataError{path: path, problem: fmt.Sprintf("missing, but %d snapshot(s) exist: the log and the current term are lost", len(snaps)), hint: replaceHint}
		}
		if _, err := os.Stat(filepath.Join(dataDir, walDir)); err == nil {
			return &dataError{path: path, problem: "missing, but " + walDir + "/ exists: the current term and the record of the WAL are lost", hint: replaceHint}
		}
		return nil // a new node
	case err != nil:
		return &dataError{path: path, problem: err.Error()}
	case info.Size() == 0:
		return &dataError{path: path, problem: "empty (0 bytes): the log and the current term are lost", hint: replaceHint + " (if this node never started, delete the file)"}
	}
	if err := checkBoltFile(path); err != nil {
		if inUse(path) {
			return nil // another node is writing it: Open says so
		}
		return &dataError{path: path, problem: err.Error(), hint: replaceHint}
	}
	return nil
}

// inUse reports whether another bbolt handle holds the file's lock. A
// read-only open reads only the meta pages, which is safe on any file.
func inUse(path string) bool {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if err == nil {
		_ = db.Close()
	}
	return errors.Is(err, bbolt.ErrTimeout)
}

// snapshotInfo is one snapshot directory, read as raft will read it.
type snapshotInfo struct {
	dir   string
	index uint64
	err   error // nil: raft can restore it
}

// Check runs once the stores are open and before raft starts: it reads
// the log and the snapshots as raft will (see the top of this file).
func (s *Stores) Check() error {
	dataDir, log := s.dir, s.opts.Logger
	dbPath, logPath := filepath.Join(dataDir, raftDBFile), s.logPath()
	first, err := s.rawLog.FirstIndex()
	if err != nil {
		return &dataError{path: logPath, problem: "read the first log index: " + err.Error(), hint: replaceHint}
	}
	last, err := s.rawLog.LastIndex()
	if err != nil {
		return &dataError{path: logPath, problem: "read the last log index: " + err.Error(), hint: replaceHint}
	}
	snaps := readSnapshots(dataDir, s.SnapshotStore, s.opts.CheckSnapshot)
	if _, err := s.bolt.GetUint64([]byte("CurrentTerm")); err != nil && (last > 0 || len(snaps) > 0) {
		return &dataError{path: dbPath, problem: "holds no current term although the node has state: the file was replaced or lost", hint: replaceHint}
	}

	// raft restores the newest snapshot it can, so every damaged one
	// newer than that is skipped.
	var base *snapshotInfo
	var damaged []snapshotInfo
	newest := uint64(0)
	for i := range snaps {
		newest = max(newest, snaps[i].index)
		if base == nil && snaps[i].err == nil {
			base = &snaps[i]
		}
		if snaps[i].err != nil && (base == nil || snaps[i].index > base.index) {
			damaged = append(damaged, snaps[i])
		}
	}
	from := uint64(0) // index the restored state covers
	if base != nil {
		from = base.index
	}
	if len(damaged) > 0 {
		d := damaged[0]
		problem := d.err.Error()
		switch {
		case base == nil && hasReadableMeta(damaged):
			// raft refuses to start when no listed snapshot restores.
			return &dataError{path: d.dir, problem: problem, hint: "no older snapshot can be restored; " + moveAsideHint(first, last, from, newest)}
		case last > 0 && first > from+1, max(last, from) < newest:
			return &dataError{path: d.dir, problem: problem, hint: fmt.Sprintf(
				"%s and %s do not cover the entries up to %d it held; %s",
				describeLog(first, last), describeBase(from), newest, replaceHint)}
		}
		for _, d := range damaged {
			log.Warn("damaged snapshot skipped: an older snapshot and the log replace it", "dir", d.dir, "error", d.err, "restoring_from_index", from)
		}
	}
	if last > 0 && first > from+1 {
		return &dataError{path: logPath, problem: fmt.Sprintf("the log starts at entry %d, but the newest usable snapshot ends at entry %d: entries %d..%d are missing",
			first, from, from+1, first-1), hint: replaceHint}
	}
	return checkLogEntries(logPath, s.rawLog, s.opts.CheckCommand, max(first, from+1), last)
}

func describeLog(first, last uint64) string {
	if last == 0 {
		return "the log (empty)"
	}
	return fmt.Sprintf("the log (entries %d..%d)", first, last)
}

func describeBase(from uint64) string {
	if from == 0 {
		return "no older snapshot"
	}
	return fmt.Sprintf("the older snapshot (up to entry %d)", from)
}

// moveAsideHint tells the operator whether moving the damaged snapshots
// out of the way would let the node start from the log.
func moveAsideHint(first, last, from, newest uint64) string {
	if last > 0 && first <= 1 && last >= newest {
		return "the log still holds every entry: move the damaged snapshot directory out of " + snapshotsDir + "/ and the node replays the log"
	}
	return replaceHint
}

func hasReadableMeta(snaps []snapshotInfo) bool {
	for _, s := range snaps {
		if !errors.Is(s.err, errSnapshotMeta) {
			return true
		}
	}
	return false
}

var errSnapshotMeta = errors.New(snapMetaFile + " is unreadable, so raft would skip this snapshot")

// readSnapshots lists every snapshot directory, newest first, and checks
// each as raft will read it: meta.json, then state.bin against the
// checksum in meta.json, then its decoding (Options.CheckSnapshot).
func readSnapshots(dataDir string, store raft.SnapshotStore, checkState func(io.Reader) error) []snapshotInfo {
	var out []snapshotInfo
	for _, name := range snapshotDirNames(dataDir) {
		si := snapshotInfo{dir: filepath.Join(dataDir, snapshotsDir, name), index: indexFromSnapshotName(name)}
		if index, err := readSnapshotMeta(si.dir); err != nil {
			si.err = fmt.Errorf("%w: %v", errSnapshotMeta, err)
		} else {
			si.index = index
			si.err = checkSnapshotFile(store, name, checkState)
		}
		out = append(out, si)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].index > out[j].index })
	return out
}

// readSnapshotMeta reads meta.json as raft's file snapshot store does.
func readSnapshotMeta(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, snapMetaFile))
	if err != nil {
		return 0, err
	}
	// One JSON value, trailing bytes ignored: what raft accepts.
	var m raft.SnapshotMeta
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
		return 0, err
	}
	if m.Version < raft.SnapshotVersionMin || m.Version > raft.SnapshotVersionMax {
		return 0, fmt.Errorf("snapshot format version %d is not supported", m.Version)
	}
	return m.Index, nil
}

func checkSnapshotFile(store raft.SnapshotStore, id string, checkState func(io.Reader) error) error {
	_, rc, err := store.Open(id) // verifies state.bin against the CRC in meta.json
	if err != nil {
		return fmt.Errorf("%s: %w (truncated or damaged)", snapStateFile, err)
	}
	defer rc.Close()
	if checkState == nil {
		return nil
	}
	if err := checkState(rc); err != nil {
		return fmt.Errorf("%s: %w", snapStateFile, err)
	}
	return nil
}

// snapshotDirNames lists the snapshot directories raft would consider
// (not the temporary ones of an unfinished snapshot).
func snapshotDirNames(dataDir string) []string {
	entries, err := os.ReadDir(filepath.Join(dataDir, snapshotsDir))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
			names = append(names, e.Name())
		}
	}
	return names
}

// indexFromSnapshotName reads the index from a directory named
// term-index-millis, for a snapshot whose meta.json is unreadable.
func indexFromSnapshotName(name string) uint64 {
	parts := strings.Split(name, "-")
	if len(parts) != 3 {
		return 0
	}
	v, _ := strconv.ParseUint(parts[1], 10, 64)
	return v
}

// checkLogEntries reads the entries from..to, which raft will apply,
// and decodes the commands among them with checkCommand (nil: none).
func checkLogEntries(dbPath string, logs raft.LogStore, checkCommand func([]byte) error, from, to uint64) (err error) {
	defer func() {
		// bbolt panics on some damage that the page walk cannot see.
		if r := recover(); r != nil {
			err = &dataError{path: dbPath, problem: fmt.Sprintf("reading the log: %v", r), hint: replaceHint}
		}
	}()
	var l raft.Log
	for i := from; i <= to && i > 0; i++ {
		if err := logs.GetLog(i, &l); err != nil {
			return &dataError{path: dbPath, problem: fmt.Sprintf("log entry %d (of %d..%d): %v", i, from, to, err), hint: replaceHint}
		}
		if l.Index != i {
			return &dataError{path: dbPath, problem: fmt.Sprintf("log entry %d is stored as entry %d", i, l.Index), hint: replaceHint}
		}
		if l.Type != raft.LogCommand || checkCommand == nil {
			continue
		}
		if err := checkCommand(l.Data); err != nil {
			return &dataError{path: dbPath, problem: fmt.Sprintf("log entry %d does not decode: %v", i, err), hint: replaceHint}
		}
	}
	return nil
}
