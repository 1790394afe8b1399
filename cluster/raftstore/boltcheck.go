package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"strings"
)

// checkBoltFile reads the raft log file at path with plain, bounds-checked
// file reads and reports damage that bbolt itself would not report
// cleanly. bbolt memory-maps the file and trusts it: a file shorter than
// its meta page says faults with SIGBUS while it opens, and a damaged page
// pointer makes the free-page scan it runs at open (NoFreelistSync) panic
// in a goroutine of its own. Both kill the process with a stack trace
// instead of an error. The walk follows the page tree from the root, as
// bbolt will, checking every page it reaches; it does not look inside
// values (raft's own checks and the entry decoding below do).
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	return checkBolt(f, info.Size())
}

// checkBolt checks the bbolt file of size bytes that r reads.
func checkBolt(r io.ReaderAt, size int64) error {
	m, err := readBoltMeta(r, size)
	if err != nil {
		return err
	}
	if need := int64(m.highWater) * int64(m.pageSize); m.highWater > math.MaxInt64/uint64(m.pageSize) || size < need {
		return fmt.Errorf("truncated: %d bytes, but its meta page (transaction %d) uses %d pages of %d bytes",
			size, m.txid, m.highWater, m.pageSize)
	}
	w := &boltWalker{r: r, meta: m, seen: map[uint64]bool{}}
	return w.bucket(m.root, nil, 0)
}

// Layout of bbolt 1.3 files (native byte order, little-endian on every
// platform this runs on): each page starts with id u64, flags u16, count
// u16, overflow u32; the meta page body follows.
const (
	boltPageHeader  = 16
	boltElemSize    = 16 // branch and leaf element headers
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltBranchPage  = 0x01
	boltLeafPage    = 0x02
	boltMetaPage    = 0x04
	boltBucketLeaf  = 0x01 // leaf element flag: the value is a bucket
	boltMaxDepth    = 64
	boltMetaSumSize = 56 // meta bytes covered by its checksum
)

var le = binary.LittleEndian

type boltMeta struct {
	pageSize  uint32
	root      uint64 // root bucket page
	highWater uint64 // pages in use
	txid      uint64
}

// readBoltMeta returns the valid meta page with the newest transaction,
// as bbolt picks it.
func readBoltMeta(r io.ReaderAt, size int64) (boltMeta, error) {
	var best boltMeta
	var errs []string
	pageSize := int64(os.Getpagesize())
	for i := int64(0); i < 2; i++ {
		m, err := readBoltMetaAt(r, size, i*pageSize)
		if i == 0 && err == nil {
			pageSize = int64(m.pageSize) // page 1 sits one page after page 0
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("meta page %d: %v", i, err))
			continue
		}
		if m.txid >= best.txid || best.pageSize == 0 {
			best = m
		}
	}
	if best.pageSize == 0 {
		return best, fmt.Errorf("not a bbolt database, or both meta pages are damaged (%s)", strings.Join(errs, "; "))
	}
	return best, nil
}

func readBoltMetaAt(r io.ReaderAt, size, off int64) (boltMeta, error) {
	buf := make([]byte, boltPageHeader+boltMetaSumSize+8)
	if off+int64(len(buf)) > size {
		return boltMeta{}, errors.New("beyond the end of the file")
	}
	if _, err := r.ReadAt(buf, off); err != nil {
		return boltMeta{}, err
	}
	if le.Uint16(buf[8:])&boltMetaPage == 0 {
		return boltMeta{}, errors.New("not a meta page")
	}
	b := buf[boltPageHeader:]
	if le.Uint32(b[0:]) != boltMagic {
		return boltMeta{}, errors.New("bad magic")
	}
	if v := le.Uint32(b[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("format version %d, want %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(b[:boltMetaSumSize])
	if h.Sum64() != le.Uint64(b[boltMetaSumSize:]) {
		return boltMeta{}, errors.New("checksum mismatch")
	}
	m := boltMeta{pageSize: le.Uint32(b[8:]), root: le.Uint64(b[16:]), highWater: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}
	if m.pageSize < 512 || m.pageSize > 1<<20 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("page size %d", m.pageSize)
	}
	return m, nil
}

// boltWalker visits the page tree below the root bucket.
type boltWalker struct {
	r    io.ReaderAt
	meta boltMeta
	seen map[uint64]bool
}

// bucket checks a bucket: root 0 means inline, its page is in inline.
func (w *boltWalker) bucket(root uint64, inline []byte, depth int) error {
	if depth > boltMaxDepth {
		return errors.New("buckets nested too deep (a loop of page references?)")
	}
	if root == 0 {
		if len(inline) < boltPageHeader {
			return errors.New("inline bucket shorter than a page header")
		}
		return w.elements(inline, 0, depth)
	}
	return w.page(root, depth)
}

func (w *boltWalker) page(id uint64, depth int) error {
	if depth > boltMaxDepth {
		return fmt.Errorf("page %d: tree too deep (a loop of page references?)", id)
	}
	if id < 2 || id >= w.meta.highWater {
		return fmt.Errorf("page reference %d outside 2..%d", id, w.meta.highWater-1)
	}
	ps := int64(w.meta.pageSize)
	head := make([]byte, boltPageHeader)
	if _, err := w.r.ReadAt(head, int64(id)*ps); err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	if got := le.Uint64(head); got != id {
		return fmt.Errorf("page %d: header says page %d", id, got)
	}
	overflow := uint64(le.Uint32(head[12:]))
	if id+overflow >= w.meta.highWater {
		return fmt.Errorf("page %d: %d overflow pages run past page %d", id, overflow, w.meta.highWater-1)
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			return fmt.Errorf("page %d: referenced twice", i)
		}
		w.seen[i] = true
	}
	p := make([]byte, int64(overflow+1)*ps)
	if _, err := w.r.ReadAt(p, int64(id)*ps); err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	if err := w.elements(p, id, depth); err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	return nil
}

// elements checks the elements of the branch or leaf page p and descends.
func (w *boltWalker) elements(p []byte, id uint64, depth int) error {
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	if boltPageHeader+count*boltElemSize > len(p) {
		return fmt.Errorf("%d elements do not fit in %d bytes", count, len(p))
	}
	if flags == boltBranchPage && count == 0 {
		// bbolt's cursor reads the first element of every branch page.
		return errors.New("branch page without elements")
	}
	for i := 0; i < count; i++ {
		at := boltPageHeader + i*boltElemSize
		e := p[at : at+boltElemSize]
		switch flags {
		case boltBranchPage:
			pos, ksize, child := int(le.Uint32(e[0:])), int(le.Uint32(e[4:])), le.Uint64(e[8:])
			if at+pos+ksize > len(p) || pos < 0 || ksize < 0 {
				return fmt.Errorf("branch element %d runs past the page", i)
			}
			if err := w.page(child, depth+1); err != nil {
				return err
			}
		case boltLeafPage:
			eflags, pos, ksize, vsize := le.Uint32(e[0:]), int(le.Uint32(e[4:])), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
			end := at + pos + ksize + vsize
			if pos < 0 || ksize < 0 || vsize < 0 || end > len(p) || end < at {
				return fmt.Errorf("leaf element %d runs past the page", i)
			}
			if eflags&boltBucketLeaf == 0 {
				continue
			}
			v := p[at+pos+ksize : end]
			if len(v) < 16 {
				return fmt.Errorf("bucket header of element %d is %d bytes", i, len(v))
			}
			if err := w.bucket(le.Uint64(v), v[16:], depth+1); err != nil {
				return err
			}
		default:
			return fmt.Errorf("page type %#x where a branch or leaf page belongs", flags)
		}
	}
	return nil
}
