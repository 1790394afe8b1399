package cluster

import (
	"encoding/binary"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// Readers of a data dir's files for the tests that damage them. They
// read the formats on their own, independently of the checks in
// raftstore that the tests exercise.

// snapshotsOf lists the snapshots in dataDir as raft's own store reads
// them, newest first (one whose meta.json does not parse is left out).
func snapshotsOf(t *testing.T, dataDir string) []*raft.SnapshotMeta {
	t.Helper()
	store, err := raft.NewFileSnapshotStore(dataDir, 100, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := store.List()
	if err != nil {
		t.Fatal(err)
	}
	return snaps
}

// newestSnapshot is the directory of the newest snapshot.
func newestSnapshot(t *testing.T, dataDir string) string {
	t.Helper()
	snaps := snapshotsOf(t, dataDir)
	if len(snaps) == 0 {
		t.Fatal("no snapshot")
	}
	return filepath.Join(dataDir, "snapshots", snaps[0].ID)
}

// Page flags of the bbolt file format.
const (
	boltBranchPage = 0x01
	boltLeafPage   = 0x02
)

// testBoltMeta is what the tests need of a bbolt meta page.
type testBoltMeta struct {
	pageSize  uint32
	highWater uint64 // pages in use
}

// readBoltMeta reads the meta page of the newest transaction of the
// bbolt file b (little-endian; the layout is bbolt's: a 16-byte page
// header, then magic, version, page size, flags, root, freelist, high
// water mark, txid).
func readBoltMeta(t *testing.T, b []byte) testBoltMeta {
	t.Helper()
	le := binary.LittleEndian
	meta := func(off int) (testBoltMeta, uint64) {
		if off+16+56 > len(b) {
			t.Fatalf("no meta page at %d in %d bytes", off, len(b))
		}
		m := b[off+16:]
		return testBoltMeta{pageSize: le.Uint32(m[8:]), highWater: le.Uint64(m[40:])}, le.Uint64(m[48:])
	}
	m0, tx0 := meta(0)
	m1, tx1 := meta(int(m0.pageSize))
	if tx1 > tx0 {
		return m1
	}
	return m0
}
