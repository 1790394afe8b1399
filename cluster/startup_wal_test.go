package cluster

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/zerotal/lock/cluster/raftstore"
	"github.com/zerotal/lock/engine"
)

// The start-up checks of a data dir whose log is a WAL (DataDir/wal):
// the same promise as startup_test.go's, a node never starts with less
// than it had, for the files raft-wal keeps.

// editWAL opens the WAL of a stopped node's data dir, runs edit on it and
// closes it.
func editWAL(t *testing.T, dataDir string, edit func(w *wal.WAL)) {
	t.Helper()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(filepath.Join(dataDir, "wal"), wal.WithMetaStore(meta), wal.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		t.Fatal(err)
	}
	edit(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := meta.Close(); err != nil {
		t.Fatal(err)
	}
}

// compactWAL deletes the WAL's entries up to index.
func compactWAL(t *testing.T, dataDir string, index uint64) {
	t.Helper()
	editWAL(t, dataDir, func(w *wal.WAL) {
		first, err := w.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.DeleteRange(first, index); err != nil {
			t.Fatal(err)
		}
	})
}

// walSegment is the data dir's one segment file.
func walSegment(t *testing.T, dataDir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dataDir, "wal", "*.wal"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("segment files %v (%v), want one", segs, err)
	}
	return segs[0]
}

// walCommits reads a segment's frames (an 8-byte header each: type,
// three zero bytes, length or checksum; then the payload padded to 8
// bytes) after its 32-byte file header, up to the first zero header, and
// returns the offsets of its commit frames and of its entry frames.
func walCommits(b []byte) (commits, entries []int) {
	for off := 32; off+8 <= len(b) && b[off] != 0; {
		n := 8
		switch b[off] {
		case 3:
			commits = append(commits, off)
		case 1, 2:
			if b[off] == 1 {
				entries = append(entries, off)
			}
			l := int(binary.LittleEndian.Uint32(b[off+4:]))
			n += l + (8-l%8)%8
		}
		off += n
	}
	return commits, entries
}

func walDataDir(t *testing.T, snapshots int, compact bool) (Config, map[string]grantSeen) {
	t.Helper()
	return dataDirWithLocksOn(t, RaftLogWAL, snapshots, compact)
}

func TestStartupWAL_CleanDataDirStartsComplete(t *testing.T) {
	cfg, locks := walDataDir(t, 2, true)
	mustStartComplete(t, cfg, locks)
}

// raft-wal makes a missing directory a new, empty log: the node would
// start from its snapshot alone, or from nothing.
func TestStartupWAL_MissingWALDirWithSnapshotIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 1, false)
	dir := filepath.Join(cfg.DataDir, "wal")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, dir, "holds no WAL", "the log is lost")
}

// Without wal-meta.db raft-wal starts a new, empty log and deletes every
// segment file as a left-over.
func TestStartupWAL_MissingWALMetaIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := filepath.Join(cfg.DataDir, "wal", "wal-meta.db")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, path, "missing, but 1 segment file(s) exist")
	if _, err := os.Stat(walSegment(t, cfg.DataDir)); err != nil {
		t.Fatalf("the segment is gone after the refused start: %v", err)
	}
}

// bbolt makes an empty wal-meta.db a new database without raft-wal's
// buckets, and raft-wal then panics reading it.
func TestStartupWAL_EmptyWALMetaIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := filepath.Join(cfg.DataDir, "wal", "wal-meta.db")
	rewrite(t, path, func([]byte) []byte { return nil })
	mustRefuse(t, cfg, path, "empty (0 bytes)")
}

// wal-meta.db is a bbolt file: truncated, bbolt faults (SIGBUS) opening it.
func TestStartupWAL_TruncatedWALMetaIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := filepath.Join(cfg.DataDir, "wal", "wal-meta.db")
	rewrite(t, path, func(b []byte) []byte {
		m := readBoltMeta(t, b)
		return b[:int(m.highWater-1)*int(m.pageSize)]
	})
	mustRefuse(t, cfg, path, "truncated")
}

func TestStartupWAL_WALMetaGarbageIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := filepath.Join(cfg.DataDir, "wal", "wal-meta.db")
	rewrite(t, path, func([]byte) []byte { return bytes.Repeat([]byte("not a database "), 1000) })
	mustRefuse(t, cfg, path, "not a bbolt database")
}

// A wal-meta.db replaced by a new one lists no segment; raft-wal would
// try to start a new log over the old segment files.
func TestStartupWAL_ReplacedWALMetaIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	fresh := t.TempDir()
	m := &metadb.BoltMetaDB{}
	if _, err := m.Load(fresh); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fresh, "wal-meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfg.DataDir, "wal", "wal-meta.db")
	rewrite(t, path, func([]byte) []byte { return b })
	mustRefuse(t, cfg, path, "lists no log segment")
}

// A segment file newer than anything wal-meta.db lists means the meta
// file was rolled back (restored from an older backup): raft-wal would
// delete the segment as a left-over of a crash.
func TestStartupWAL_SegmentNewerThanWALMetaIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	b, err := os.ReadFile(walSegment(t, cfg.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(cfg.DataDir, "wal", "00000000000000000001-0000000000000009.wal")
	if err := os.WriteFile(newer, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, newer, "newer than wal-meta.db", "would delete")
	if _, err := os.Stat(newer); err != nil {
		t.Fatalf("the newer segment is gone after the refused start: %v", err)
	}
}

// raft-wal reads an empty tail segment as a new one: an empty log.
func TestStartupWAL_EmptySegmentIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := walSegment(t, cfg.DataDir)
	rewrite(t, path, func([]byte) []byte { return nil })
	mustRefuse(t, cfg, path, "truncated: 0 bytes")
}

// raft-wal allocates a segment its full size when it creates it; a
// shorter file lost its end, and raft-wal would read what is left.
func TestStartupWAL_TruncatedSegmentIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := walSegment(t, cfg.DataDir)
	rewrite(t, path, func(b []byte) []byte {
		commits, _ := walCommits(b)
		return b[:commits[len(commits)/2]]
	})
	mustRefuse(t, cfg, path, "truncated")
}

// A segment overwritten with garbage: raft-wal finds no frame it can
// read, takes it for a torn first write and starts an empty log.
func TestStartupWAL_GarbageSegmentIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := walSegment(t, cfg.DataDir)
	rewrite(t, path, func(b []byte) []byte {
		for i := range b {
			b[i] = byte(i*7 + 1)
		}
		return b
	})
	mustRefuse(t, cfg, path, "damaged from byte 0")
}

// raft-wal checks the checksum of the tail's last batch only. A damaged
// byte in an earlier, acknowledged batch goes unnoticed: raft-wal hands
// out the wrong entry. The batches after it still check out, which shows
// the damage is not a torn write.
func TestStartupWAL_DamagedEarlierBatchIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := walSegment(t, cfg.DataDir)
	rewrite(t, path, func(b []byte) []byte {
		commits, entries := walCommits(b)
		if len(commits) < 4 {
			t.Fatalf("%d batches, want several", len(commits))
		}
		// The first entry after the middle batch's commit: its index
		// (the first byte of its payload) no longer matches.
		mid := commits[len(commits)/2]
		for _, e := range entries {
			if e > mid {
				b[e+8] ^= 0x01
				return b
			}
		}
		t.Fatal("no entry after the middle batch")
		return nil
	})
	mustRefuse(t, cfg, path, "checks out after it")
}

// A crash while the last batch was being written leaves a torn batch
// whose checksum fails. It was never acknowledged (raft-wal returns
// from an append after the fsync), so raft-wal drops it: correct, and
// the node starts with every acknowledged lock.
func TestStartupWAL_TornLastBatchIsDroppedAndStartsComplete(t *testing.T) {
	cfg, locks := walDataDir(t, 0, false)
	path := walSegment(t, cfg.DataDir)
	rewrite(t, path, func(b []byte) []byte {
		commits, _ := walCommits(b)
		end := commits[len(commits)-1] + 8
		payload := []byte("a batch the crash tore, never acknowledged")
		b[end] = 1
		binary.LittleEndian.PutUint32(b[end+4:], uint32(len(payload)))
		copy(b[end+8:], payload)
		c := end + 8 + len(payload) + (8-len(payload)%8)%8
		b[c] = 3
		binary.LittleEndian.PutUint32(b[c+4:], 0xdeadbeef) // not its checksum
		return b
	})
	mustStartComplete(t, cfg, locks)
}

// A follower deletes entries from the end of its log that its leader
// never committed. raft-wal v0.4.0 then marks the segment sealed without
// writing its index (hashicorp/raft-wal#31): after a restart it could not
// read the segment and raft would stop. The node writes the index before
// raft-wal opens the WAL, and starts complete.
func TestStartupWAL_TailTruncatedLogRestartsComplete(t *testing.T) {
	cfg, locks := walDataDir(t, 0, false)
	editWAL(t, cfg.DataDir, func(w *wal.WAL) {
		last, err := w.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		var l raft.Log
		if err := w.GetLog(last, &l); err != nil {
			t.Fatal(err)
		}
		uncommitted := []*raft.Log{{Index: last + 1, Term: l.Term, Type: raft.LogNoop}, {Index: last + 2, Term: l.Term, Type: raft.LogNoop}}
		if err := w.StoreLogs(uncommitted); err != nil {
			t.Fatal(err)
		}
		if err := w.DeleteRange(last+1, last+2); err != nil {
			t.Fatal(err)
		}
	})
	mustStartComplete(t, cfg, locks)
}

// A log entry after the snapshot that does not decode would stop the FSM
// when applied; refused, naming the entry, as with bolt.
func TestStartupWAL_UndecodableLogEntryIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 1, false)
	var bad uint64
	editWAL(t, cfg.DataDir, func(w *wal.WAL) {
		last, err := w.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		var tail []*raft.Log
		for i := last; i > 0 && bad == 0; i-- {
			l := new(raft.Log)
			if err := w.GetLog(i, l); err != nil {
				t.Fatal(err)
			}
			tail = append([]*raft.Log{l}, tail...)
			if l.Type == raft.LogCommand && len(l.Data) > 0 && isAcquire(engine.Op(l.Data[0])) {
				l.Data = l.Data[:len(l.Data)-1]
				bad = i
			}
		}
		// A WAL only appends: cut the tail off and write it again.
		if err := w.DeleteRange(bad, last); err != nil {
			t.Fatal(err)
		}
		if err := w.StoreLogs(tail); err != nil {
			t.Fatal(err)
		}
	})
	if bad == 0 {
		t.Fatal("no acquire entry in the log")
	}
	mustRefuse(t, cfg, filepath.Join(cfg.DataDir, "wal"), fmt.Sprintf("log entry %d does not decode", bad), "malformed")
}

// A log that starts after the newest snapshot ends: raft would stop with
// "log not found" when it applies.
func TestStartupWAL_LogGapAfterSnapshotIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 1, false)
	snap := indexFromSnapshotName(filepath.Base(newestSnapshot(t, cfg.DataDir)))
	compactWAL(t, cfg.DataDir, snap+2)
	mustRefuse(t, cfg, filepath.Join(cfg.DataDir, "wal"), fmt.Sprintf("entries %d..%d are missing", snap+1, snap+2))
}

// The snapshot checks read the WAL as they read bolt's log: a damaged
// newest snapshot with the WAL compacted up to it is refused.
func TestStartupWAL_DamagedNewestSnapshotWithCompactedLogIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 2, true)
	dir := newestSnapshot(t, cfg.DataDir)
	rewrite(t, filepath.Join(dir, "state.bin"), flipBytes(5, 4))
	mustRefuse(t, cfg, dir, "CRC", "do not cover")
}

// A WAL copied in from another data dir (another node, another cluster)
// is an intact log, but not this node's.
func TestStartupWAL_WALOfAnotherDataDirIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	other, _ := walDataDir(t, 0, false)
	dir := filepath.Join(cfg.DataDir, "wal")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(other.DataDir, "wal"))); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, dir, "copied from another data dir")
}

// raft.db keeps the term, the vote and the record of the WAL.
func TestStartupWAL_MissingRaftDBIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, path, "missing, but wal/ exists")
}

// A raft.db swapped for a new, valid one has no record of the WAL beside
// it: raft would start with a new term and vote on the old log.
func TestStartupWAL_ReplacedRaftDBIsRefused(t *testing.T) {
	cfg, _ := walDataDir(t, 0, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s, err := raftboltdb.New(raftstore.BoltOptions(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, path, "raft.db was replaced or lost")
}

// A data dir keeps the log store it was created with: opened with the
// other one it is refused, in words that name both; opened without a
// choice it keeps its own.
func TestStartup_LogStoreOfTheDataDir(t *testing.T) {
	for _, tc := range []struct{ created, other string }{{RaftLogBolt, RaftLogWAL}, {RaftLogWAL, RaftLogBolt}} {
		t.Run(tc.created, func(t *testing.T) {
			cfg, locks := dataDirWithLocksOn(t, tc.created, 1, false)
			wrong := cfg
			wrong.RaftLog = tc.other
			_, err := restart(t, wrong)
			want := fmt.Sprintf("holds a %s raft log", tc.created)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "configured for a "+tc.other+" log") {
				t.Fatalf("opened with %s: %v, want a refusal naming %s and %s", tc.other, err, tc.created, tc.other)
			}
			cfg.RaftLog = ""
			mustStartComplete(t, cfg, locks)
			_, statErr := os.Stat(filepath.Join(cfg.DataDir, "wal"))
			if hasWAL := statErr == nil; hasWAL != (tc.created == RaftLogWAL) {
				t.Fatalf("wal/ exists = %v after a start without a choice on a %s data dir", hasWAL, tc.created)
			}
		})
	}
}
