package cluster

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Readers of a data dir's files for the tests that damage them. They
// read the formats on their own, independently of the checks in
// raftstore that the tests exercise.

// snapshotDirNames lists the finished snapshot directories in dataDir.
func snapshotDirNames(dataDir string) []string {
	entries, _ := os.ReadDir(filepath.Join(dataDir, "snapshots"))
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
			names = append(names, e.Name())
		}
	}
	return names
}

// indexFromSnapshotName reads the index of a directory named
// term-index-millis.
func indexFromSnapshotName(name string) uint64 {
	parts := strings.Split(name, "-")
	if len(parts) != 3 {
		return 0
	}
	v, _ := strconv.ParseUint(parts[1], 10, 64)
	return v
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
