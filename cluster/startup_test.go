package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc64"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/zerotal/lock/cluster/raftstore"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/internal/loopback"
)

// grantSeen is a lock as GET /v1/lock reports it.
type grantSeen struct {
	owner string
	fence int64
}

// dataDirWithLocks runs a one-node cluster that grants locks, takes
// snapshots (each followed by more grants), then stops. With compact, the
// log up to the newest snapshot is deleted, as raft does once the log is
// long. It returns the config to restart with and the locks.
func dataDirWithLocks(t *testing.T, snapshots int, compact bool) (Config, map[string]grantSeen) {
	t.Helper()
	return dataDirWithLocksOn(t, RaftLogBolt, snapshots, compact)
}

// dataDirWithLocksOn is dataDirWithLocks with the raft log in raftLog.
func dataDirWithLocksOn(t *testing.T, raftLog string, snapshots int, compact bool) (Config, map[string]grantSeen) {
	t.Helper()
	cfg := testConfig(t, "n1")
	cfg.RaftAddr = loopback.MustFreeAddr(t)
	cfg.RaftLog = raftLog
	n := startNode(t, cfg)
	waitLeader(t, []*Node{n})
	c := newClient(t)
	locks := map[string]grantSeen{}
	grant := func(from, to int) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("k%02d", i)
			r := c.acquire(n.HTTPAddr(), key, "o"+key, time.Hour, 0)
			mustStatus(t, r, http.StatusOK, "acquire "+key)
			locks[key] = grantSeen{r.str("owner"), r.num("fence")}
		}
	}
	grant(0, 10)
	var snapIndex uint64
	for i := 0; i < snapshots; i++ {
		f := n.raft.Snapshot()
		if err := f.Error(); err != nil {
			t.Fatal(err)
		}
		meta, rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		_ = rc.Close()
		snapIndex = meta.Index
		grant(10+5*i, 15+5*i)
	}
	shutdown(t, n)
	if compact && raftLog == RaftLogWAL {
		compactWAL(t, cfg.DataDir, snapIndex)
	} else if compact {
		compactLog(t, cfg.DataDir, snapIndex)
	}
	return cfg, locks
}

// compactLog deletes the log entries up to index.
func compactLog(t *testing.T, dir string, index uint64) {
	t.Helper()
	s, err := raftboltdb.New(raftstore.BoltOptions(filepath.Join(dir, "raft.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(first, index); err != nil {
		t.Fatal(err)
	}
}

// newestSnapshot is the directory of the newest snapshot.
func newestSnapshot(t *testing.T, dir string) string {
	t.Helper()
	snaps := snapshotDirNames(dir)
	if len(snaps) == 0 {
		t.Fatal("no snapshot")
	}
	sort.Slice(snaps, func(i, j int) bool { return indexFromSnapshotName(snaps[i]) < indexFromSnapshotName(snaps[j]) })
	return filepath.Join(dir, "snapshots", snaps[len(snaps)-1])
}

func restart(t *testing.T, cfg Config) (*Node, error) {
	t.Helper()
	cfg.Logger = testLogger(t, "restart")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := NewNode(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { shutdown(t, n) })
	return n, nil
}

// mustRefuse restarts the node and requires a start-up error that names
// file and contains every one of words.
func mustRefuse(t *testing.T, cfg Config, file string, words ...string) {
	t.Helper()
	n, err := restart(t, cfg)
	if err == nil {
		t.Fatalf("node started (%s) from a damaged data dir", n.ID())
	}
	msg := err.Error()
	if !strings.Contains(msg, file) || !strings.Contains(msg, "refusing to start") {
		t.Fatalf("error does not name %s: %v", file, err)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Fatalf("error does not say %q: %v", w, err)
		}
	}
	t.Logf("refused as expected: %v", err)
}

// mustStartComplete restarts the node and requires every lock with its
// owner and fence.
func mustStartComplete(t *testing.T, cfg Config, locks map[string]grantSeen) {
	t.Helper()
	n, err := restart(t, cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	waitLeader(t, []*Node{n})
	c := newClient(t)
	for k, g := range locks {
		r := c.get(n.HTTPAddr(), k)
		if r.str("owner") != g.owner || r.num("fence") != g.fence {
			t.Fatalf("after restart %s = %d %s, want owner %s fence %d", k, r.Status, r.Raw, g.owner, g.fence)
		}
	}
}

func rewrite(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

func flipBytes(from, n int) func([]byte) []byte {
	return func(b []byte) []byte {
		for i := from; i < from+n && i < len(b); i++ {
			b[i] ^= 0x5a
		}
		return b
	}
}

// raft: the snapshot's state.bin fails the CRC in meta.json, and no older
// snapshot exists, so raft refuses to start ("failed to load any existing
// snapshots", naming neither file nor reason). The node says which file
// and what, and that the log would do without it.
func TestStartup_SnapshotStateDamagedIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, false)
	dir := newestSnapshot(t, cfg.DataDir)
	rewrite(t, filepath.Join(dir, "state.bin"), flipBytes(10, 8))
	mustRefuse(t, cfg, dir, "state.bin", "CRC", "move the damaged snapshot")
}

func TestStartup_SnapshotStateTruncatedIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, true)
	dir := newestSnapshot(t, cfg.DataDir)
	rewrite(t, filepath.Join(dir, "state.bin"), func(b []byte) []byte { return b[:len(b)/2] })
	mustRefuse(t, cfg, dir, "state.bin", "CRC", "replace this node's data directory")
}

// A state.bin that matches its CRC but that the FSM refuses (written by a
// bug, or forged): raft would only log the FSM's refusal and give up with
// a vague error; the node names the file and the FSM's reason.
func TestStartup_SnapshotBodyRefusedByFSMIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, false)
	dir := newestSnapshot(t, cfg.DataDir)
	body := []byte{9, 9, 9, 9}
	rewrite(t, filepath.Join(dir, "state.bin"), func([]byte) []byte { return body })
	sum := crc64.Checksum(body, crc64.MakeTable(crc64.ECMA))
	rewrite(t, filepath.Join(dir, "meta.json"), func(b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["CRC"] = binary.BigEndian.AppendUint64(nil, sum)
		m["Size"] = len(body)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
	mustRefuse(t, cfg, dir, "state.bin", "fsm: corrupt snapshot", "format version 9")
}

// raft skips a snapshot whose meta.json does not parse, with only a
// warning. When the log still holds every entry, it replays it and the
// table is complete: the node starts.
func TestStartup_SnapshotMetaGarbageWithFullLogStartsComplete(t *testing.T) {
	cfg, locks := dataDirWithLocks(t, 1, false)
	rewrite(t, filepath.Join(newestSnapshot(t, cfg.DataDir), "meta.json"), func([]byte) []byte { return []byte("garbage") })
	mustStartComplete(t, cfg, locks)
}

// ...but when the log was compacted up to that snapshot, raft starts with
// an empty table and then stops with "log not found" when it applies.
// The node refuses first and says which entries are missing.
func TestStartup_SnapshotMetaGarbageWithCompactedLogIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, true)
	dir := newestSnapshot(t, cfg.DataDir)
	rewrite(t, filepath.Join(dir, "meta.json"), func(b []byte) []byte { return b[:len(b)/2] })
	mustRefuse(t, cfg, dir, "meta.json is unreadable", "do not cover")
}

// raft falls back to an older snapshot when the newest is damaged; with
// the log reaching back to it, nothing is lost and the node starts.
func TestStartup_DamagedNewestSnapshotFallsBackToOlderComplete(t *testing.T) {
	cfg, locks := dataDirWithLocks(t, 2, false)
	if n := len(snapshotDirNames(cfg.DataDir)); n != 2 {
		t.Fatalf("%d snapshots, want 2", n)
	}
	rewrite(t, filepath.Join(newestSnapshot(t, cfg.DataDir), "state.bin"), flipBytes(5, 4))
	mustStartComplete(t, cfg, locks)
}

// ...and when the log was compacted up to the damaged snapshot, the older
// one cannot make up for it: refused.
func TestStartup_DamagedNewestSnapshotWithCompactedLogIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 2, true)
	dir := newestSnapshot(t, cfg.DataDir)
	rewrite(t, filepath.Join(dir, "state.bin"), flipBytes(5, 4))
	mustRefuse(t, cfg, dir, "CRC", "do not cover")
}

// bbolt turns a zero-length file into a new, empty database: the node
// would bootstrap a new cluster with an empty table.
func TestStartup_EmptyRaftDBIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 0, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	rewrite(t, path, func([]byte) []byte { return nil })
	mustRefuse(t, cfg, path, "empty (0 bytes)")
}

// With a snapshot, an emptied raft.db would start from the snapshot alone
// and lose every grant after it.
func TestStartup_EmptyRaftDBWithSnapshotIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	rewrite(t, path, func([]byte) []byte { return nil })
	mustRefuse(t, cfg, path, "empty (0 bytes)")
}

func TestStartup_MissingRaftDBWithSnapshotIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, path, "missing")
}

// A truncated raft.db makes bbolt fault with SIGBUS while it opens the
// file (the process dies with a stack trace).
func TestStartup_TruncatedRaftDBIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 0, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	rewrite(t, path, func(b []byte) []byte {
		m := readBoltMeta(t, b)
		return b[:int(m.highWater-1)*int(m.pageSize)]
	})
	mustRefuse(t, cfg, path, "truncated")
}

func TestStartup_RaftDBNotABoltFileIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 0, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	rewrite(t, path, func([]byte) []byte { return bytes.Repeat([]byte("not a database "), 1000) })
	mustRefuse(t, cfg, path, "not a bbolt database")
}

// Garbage in the tree pages makes bbolt panic in a goroutine of its own
// while it rebuilds its free list on open (the process dies).
func TestStartup_RaftDBGarbagePagesAreRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 0, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	damaged := 0
	rewrite(t, path, func(b []byte) []byte {
		m := readBoltMeta(t, b)
		ps := int(m.pageSize)
		for id := 2; (id+1)*ps <= len(b); id++ {
			p := b[id*ps:]
			if binary.LittleEndian.Uint64(p) != uint64(id) || binary.LittleEndian.Uint16(p[8:])&(boltBranchPage|boltLeafPage) == 0 {
				continue
			}
			for i := 10; i < 64; i++ { // element count and headers
				p[i] = 0xff
			}
			damaged++
		}
		return b
	})
	if damaged == 0 {
		t.Fatal("no tree page found to damage")
	}
	mustRefuse(t, cfg, path, "page")
}

// A log entry after the snapshot that does not decode would stop the FSM
// when applied (fsm.CorruptEntryError); the node refuses to start instead,
// naming the entry.
func TestStartup_UndecodableLogEntryIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	s, err := raftboltdb.New(raftstore.BoltOptions(path))
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var bad uint64
	for i := last; i > 0 && bad == 0; i-- {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type == raft.LogCommand && len(l.Data) > 0 && isAcquire(engine.Op(l.Data[0])) {
			l.Data = l.Data[:len(l.Data)-1]
			if err := s.StoreLog(&l); err != nil {
				t.Fatal(err)
			}
			bad = i
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if bad == 0 {
		t.Fatal("no acquire entry in the log")
	}
	mustRefuse(t, cfg, path, fmt.Sprintf("log entry %d does not decode", bad), "malformed")
}

// The checks do not get in the way of a clean restart, with snapshots and
// a compacted log.
func TestStartup_CleanDataDirStartsComplete(t *testing.T) {
	cfg, locks := dataDirWithLocks(t, 2, true)
	mustStartComplete(t, cfg, locks)
}

// A raft.db swapped for a new, valid but empty one (say, restored from the
// wrong backup) would start from the snapshot alone, losing every grant
// after it and the node's term and vote.
func TestStartup_ReplacedRaftDBIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocks(t, 1, false)
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
	mustRefuse(t, cfg, path, "no current term")
}

// isAcquire reports whether op is an acquire entry: v0.1.0's, or the one
// acquire entry a node writes once every member applies it.
func isAcquire(op engine.Op) bool { return op == engine.OpAcquire || op == engine.OpAcquireKeys }
