package cluster

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
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
func walSegment(t *testing.T, cfg Config) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(cfg.DataDir, "wal", "*.wal"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("segment files %v (%v), want one", segs, err)
	}
	return segs[0]
}

var walMeta = inDataDir("wal", "wal-meta.db")

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

func TestStartupWAL_DataDir(t *testing.T) {
	runDataDirCases(t, RaftLogWAL, []dataDirCase{
		{name: "CleanDataDirStartsComplete", snapshots: 2, compact: true},
		// raft-wal makes a missing directory a new, empty log: the node
		// would start from its snapshot alone, or from nothing.
		{name: "MissingWALDirWithSnapshotIsRefused", snapshots: 1, damage: removed(inDataDir("wal")),
			words: []string{"holds no WAL", "the log is lost"}},
		// Without wal-meta.db raft-wal starts a new, empty log and deletes
		// every segment file as a left-over.
		{name: "MissingWALMetaIsRefused", damage: removed(walMeta), words: []string{"missing, but 1 segment file(s) exist"},
			after: func(t *testing.T, cfg Config) {
				if _, err := os.Stat(walSegment(t, cfg)); err != nil {
					t.Fatalf("the segment is gone after the refused start: %v", err)
				}
			}},
		// bbolt makes an empty wal-meta.db a new database without
		// raft-wal's buckets, and raft-wal then panics reading it.
		{name: "EmptyWALMetaIsRefused", damage: rewritten(walMeta, emptied), words: []string{"empty (0 bytes)"}},
		// wal-meta.db is a bbolt file: truncated, bbolt faults (SIGBUS)
		// opening it.
		{name: "TruncatedWALMetaIsRefused", damage: rewritten(walMeta, boltTruncated), words: []string{"truncated"}},
		{name: "WALMetaGarbageIsRefused", damage: rewritten(walMeta, notABoltFile), words: []string{"not a bbolt database"}},
		// A wal-meta.db replaced by a new one lists no segment; raft-wal
		// would try to start a new log over the old segment files.
		{name: "ReplacedWALMetaIsRefused", damage: rewritten(walMeta, newWALMeta), words: []string{"lists no log segment"}},
		// A segment file newer than anything wal-meta.db lists means the
		// meta file was rolled back (restored from an older backup):
		// raft-wal would delete the segment as a left-over of a crash.
		{name: "SegmentNewerThanWALMetaIsRefused", damage: newerSegment, words: []string{"newer than wal-meta.db", "would delete"},
			after: func(t *testing.T, cfg Config) {
				if _, err := os.Stat(newerSegmentFile(t, cfg)); err != nil {
					t.Fatalf("the newer segment is gone after the refused start: %v", err)
				}
			}},
		// raft-wal reads an empty tail segment as a new one: an empty log.
		{name: "EmptySegmentIsRefused", damage: rewritten(walSegment, emptied), words: []string{"truncated: 0 bytes"}},
		// raft-wal allocates a segment its full size when it creates it;
		// a shorter file lost its end, and raft-wal would read what is
		// left.
		{name: "TruncatedSegmentIsRefused", words: []string{"truncated"}, damage: rewritten(walSegment, func(_ *testing.T, b []byte) []byte {
			commits, _ := walCommits(b)
			return b[:commits[len(commits)/2]]
		})},
		// A segment overwritten with garbage: raft-wal finds no frame it
		// can read, takes it for a torn first write and starts an empty
		// log.
		{name: "GarbageSegmentIsRefused", words: []string{"damaged from byte 0"}, damage: rewritten(walSegment, func(_ *testing.T, b []byte) []byte {
			for i := range b {
				b[i] = byte(i*7 + 1)
			}
			return b
		})},
		// raft-wal checks the checksum of the tail's last batch only. A
		// damaged byte in an earlier, acknowledged batch goes unnoticed:
		// raft-wal hands out the wrong entry. The batches after it still
		// check out, which shows the damage is not a torn write.
		{name: "DamagedEarlierBatchIsRefused", damage: rewritten(walSegment, damagedEarlierBatch), words: []string{"checks out after it"}},
		// A crash while the last batch was being written leaves a torn
		// batch whose checksum fails. It was never acknowledged (raft-wal
		// returns from an append after the fsync), so raft-wal drops it:
		// correct, and the node starts with every acknowledged lock.
		{name: "TornLastBatchIsDroppedAndStartsComplete", damage: rewritten(walSegment, tornLastBatch)},
		// A follower deletes entries from the end of its log that its
		// leader never committed. raft-wal v0.4.0 then marks the segment
		// sealed without writing its index (hashicorp/raft-wal#31): after
		// a restart it could not read the segment and raft would stop.
		// The node writes the index before raft-wal opens the WAL, and
		// starts complete.
		{name: "TailTruncatedLogRestartsComplete", damage: tailTruncated},
		// The snapshot checks read the WAL as they read bolt's log: a
		// damaged newest snapshot with the WAL compacted up to it is
		// refused.
		{name: "DamagedNewestSnapshotWithCompactedLogIsRefused", snapshots: 2, compact: true, damage: inSnapshot("state.bin", flipBytes(5, 4)),
			words: []string{"CRC", "do not cover"}},
		// A WAL copied in from another data dir (another node, another
		// cluster) is an intact log, but not this node's.
		{name: "WALOfAnotherDataDirIsRefused", damage: walOfAnotherDataDir, words: []string{"copied from another data dir"}},
		// raft.db keeps the term, the vote and the record of the WAL.
		{name: "MissingRaftDBIsRefused", damage: removed(raftDB), words: []string{"missing, but wal/ exists"}},
		// A raft.db swapped for a new, valid one has no record of the WAL
		// beside it: raft would start with a new term and vote on the old
		// log.
		{name: "ReplacedRaftDBIsRefused", damage: newRaftDB, words: []string{"raft.db was replaced or lost"}},
	})
}

// newWALMeta is the bytes of a new wal-meta.db.
func newWALMeta(t *testing.T, _ []byte) []byte {
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
	return b
}

// newerSegmentFile is a segment file named as newer than the one a node
// writes at first.
var newerSegmentFile = inDataDir("wal", "00000000000000000001-0000000000000009.wal")

// newerSegment is a copy of the one segment, named as a newer one.
func newerSegment(t *testing.T, cfg Config) string {
	newer := newerSegmentFile(t, cfg)
	b, err := os.ReadFile(walSegment(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newer, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return newer
}

// damagedEarlierBatch flips a bit of the first entry after the middle
// batch's commit: its index (the first byte of its payload) no longer
// matches.
func damagedEarlierBatch(t *testing.T, b []byte) []byte {
	commits, entries := walCommits(b)
	if len(commits) < 4 {
		t.Fatalf("%d batches, want several", len(commits))
	}
	mid := commits[len(commits)/2]
	for _, e := range entries {
		if e > mid {
			b[e+8] ^= 0x01
			return b
		}
	}
	t.Fatal("no entry after the middle batch")
	return nil
}

// tornLastBatch writes a batch after the last one whose commit frame
// does not match its checksum.
func tornLastBatch(_ *testing.T, b []byte) []byte {
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
}

// tailTruncated appends two entries and deletes them again, as a
// follower does with entries its leader never committed.
func tailTruncated(t *testing.T, cfg Config) string {
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
	return ""
}

// walOfAnotherDataDir puts the WAL of another node's data dir in place of
// this one's.
func walOfAnotherDataDir(t *testing.T, cfg Config) string {
	other, _ := dataDirWithLocksOn(t, RaftLogWAL, 0, false)
	dir := removed(inDataDir("wal"))(t, cfg)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(other.DataDir, "wal"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A log entry after the snapshot that does not decode would stop the FSM
// when applied; refused, naming the entry, as with bolt.
func TestStartupWAL_UndecodableLogEntryIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocksOn(t, RaftLogWAL, 1, false)
	var bad uint64
	editWAL(t, cfg.DataDir, func(w *wal.WAL) {
		last, err := w.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		var tail []*raft.Log
		bad, tail = cutNewestAcquire(t, last, w.GetLog)
		// A WAL only appends: cut the tail off and write it again.
		if err := w.DeleteRange(bad, last); err != nil {
			t.Fatal(err)
		}
		if err := w.StoreLogs(tail); err != nil {
			t.Fatal(err)
		}
	})
	mustRefuse(t, cfg, filepath.Join(cfg.DataDir, "wal"), fmt.Sprintf("log entry %d does not decode", bad), "malformed")
}

// A log that starts after the newest snapshot ends: raft would stop with
// "log not found" when it applies.
func TestStartupWAL_LogGapAfterSnapshotIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocksOn(t, RaftLogWAL, 1, false)
	snap := snapshotsOf(t, cfg.DataDir)[0].Index
	compactWAL(t, cfg.DataDir, snap+2)
	mustRefuse(t, cfg, filepath.Join(cfg.DataDir, "wal"), fmt.Sprintf("entries %d..%d are missing", snap+1, snap+2))
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
