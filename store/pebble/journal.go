package pebble

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	pdb "github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/cohort-dev/cohort/store"
)

// The journal is where every write goes first. Writing each batch into
// Pebble cost a commit of 10 offsets about 9 µs of CPU (memtable inserts,
// flushes and compactions of values that the next commit replaces), more
// than the rest of the commit's path put together (issue 17). So a batch is
// appended to the journal, a plain log file synced with fdatasync (group
// commit: one sync covers every batch appended before it), and kept in an
// in-memory overlay, one map per layer (a segment of the journal, or a
// stretch of one) from key to its latest value. Once a segment is full and
// synced, its map (the latest value of each key it wrote, so a key
// committed a thousand times is written once) is folded into Pebble,
// followed by the position folded up to (foldedKey: the segment and the
// byte offset in it), and the segment's file is reused for a later one. A
// journal with no write for a while folds its segment so far in the same
// way and goes on in the same segment and file. Get and Scan read the
// overlay over Pebble.
//
// At Open the journal past the folded position is replayed into Pebble, in
// order, each segment up to its first record that is torn or not its own
// (a reused file still holds records of its old number past what was
// written). A segment is synced whole before the next one is started, so
// only the last can end in a torn record, and nothing after a torn record
// was acknowledged.
//
// The file layout: dir/journal/<segment, 16 digits>.log, records of
//
//	crc32c(4) | payload length(4) | segment(8) | payload
//
// with the CRC over everything after it, and the payload a sequence of ops:
// kind (1 put, 2 delete), uvarint key length, key, and for a put a uvarint
// value length and the value.

const (
	journalDirName = "journal"
	recordHeader   = 16
	opPut          = 1
	opDelete       = 2
	keepFree       = 2        // folded segment files kept for reuse
	sparePrefix    = "spare-" // the next segment's file, open ahead
	maxFrozen      = 4        // full segments waiting to be folded before appends wait
)

// chunkSize is the size of the buffers records are encoded into.
const chunkSize = 1 << 20

// defaultSegmentSize is the size at which a segment is closed and folded.
const defaultSegmentSize = 64 << 20

// foldedKey holds where the journal is folded into Pebble up to: a
// segment's number and a byte offset in it (8 bytes each, little-endian).
// It is the store's own key, hidden from Get and Scan.
var foldedKey = []byte("\xff\xff\xffcohort-store/journal-folded")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// entry is a key's latest write in a segment.
type entry struct {
	value []byte // points into the journal's buffer, which is never reused
	del   bool
}

// layer is the overlay of a stretch of one segment, from byte start to
// end (end is set when the layer stops taking writes): its keys' latest
// writes. A segment is one layer, or several when a quiet journal folded
// part of it early.
type layer struct {
	seg        uint64
	start, end int64
	last       uint64 // sequence number of its last record
	m          map[string]entry
}

// piece is bytes appended to one segment, not yet written.
type piece struct {
	seg  uint64
	data []byte
}

// journal is the store's write path (see the comment at the top of the
// file). mu guards the appending side, what the writer and the folder
// publish, and the overlay; the writer goroutine alone owns the open file.
type journal struct {
	fs      vfs.FS
	dir     string
	db      *pdb.DB
	log     *slog.Logger
	segSize int64

	mu       sync.Mutex
	seg      uint64 // the segment records are appended to
	segLen   int64  // bytes appended to it
	pieces   []piece
	chunk    []byte        // where records are encoded
	chunkCap int           // the last chunk's size
	seq      uint64        // records appended
	synced   uint64        // records written and synced
	err      error         // sticky: the first failed write, sync or fold
	done     chan struct{} // closed, and replaced, after each sync and at a failure
	active   *layer
	frozen   []*layer // layers that take no more writes, not yet folded, oldest first
	free     []string // folded segment files, to reuse
	// spare is a folded segment's file, renamed as a spare and open ahead,
	// that the next segment takes with a rename: so a segment change
	// needs no new file descriptor (a node out of them still writes).
	spare     vfs.File
	spareName string // its name: each spare has its own
	spares    int    // spares made, for their names
	closing   bool
	// noFoldAtClose leaves the overlay for the next Open to replay, as
	// a crash does (tests of the replay).
	noFoldAtClose bool
	folded        *sync.Cond // signalled when a segment is folded, the journal fails or closes

	kick     chan struct{}
	foldKick chan struct{}
	stop     chan struct{}
	wg       sync.WaitGroup

	// dirFile is the journal's directory, open for as long as the journal
	// is, so that syncing a new segment's name needs no new descriptor.
	dirFile vfs.File

	// The writer goroutine's own.
	f    vfs.File
	fseg uint64
	foff int64
}

// openJournal replays the journal in dir into db and starts its goroutines.
func openJournal(fs vfs.FS, dir string, db *pdb.DB, log *slog.Logger, segSize int64) (*journal, error) {
	if segSize <= 0 {
		segSize = defaultSegmentSize
	}
	j := &journal{
		fs: fs, dir: fs.PathJoin(dir, journalDirName), db: db, log: log, segSize: segSize,
		done: make(chan struct{}), kick: make(chan struct{}, 1), foldKick: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	j.folded = sync.NewCond(&j.mu)
	if err := mkdirSynced(fs, j.dir); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	var err error
	if j.dirFile, err = fs.OpenDir(j.dir); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	last, err := j.replay()
	if err != nil {
		j.dirFile.Close()
		return nil, err
	}
	j.seg = last + 1
	j.active = &layer{seg: j.seg, m: make(map[string]entry)}
	j.wg.Add(2)
	go j.writer()
	go j.folder()
	return j, nil
}

func segName(seg uint64) string { return fmt.Sprintf("%016d.log", seg) }

// replay folds what the journal holds past the folded position into db,
// removes spares, and returns the number of the last segment there is
// (folded now).
func (j *journal) replay() (uint64, error) {
	folded, foldedOff, err := readFolded(j.db)
	if err != nil {
		return 0, err
	}
	names, err := j.fs.List(j.dir)
	if err != nil {
		return 0, fmt.Errorf("list journal: %w", err)
	}
	type file struct {
		name string
		seg  uint64
	}
	var files []file
	for _, n := range names {
		if strings.HasPrefix(n, sparePrefix) {
			// A spare left by the last run holds nothing to replay.
			if err := j.fs.Remove(j.fs.PathJoin(j.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return 0, fmt.Errorf("journal: remove an old spare: %w", err)
			}
			continue
		}
		s, ok := strings.CutSuffix(n, ".log")
		if !ok {
			continue
		}
		seg, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			continue
		}
		files = append(files, file{j.fs.PathJoin(j.dir, n), seg})
	}
	sort.Slice(files, func(a, b int) bool { return files[a].seg < files[b].seg })
	last := folded
	state := map[string]entry{}
	replayed := 0
	for _, f := range files {
		last = max(last, f.seg)
		start := 0
		switch {
		case f.seg < folded:
			continue
		case f.seg == folded:
			start = int(foldedOff) // where a quiet journal's early fold left off
		}
		data, err := readAll(j.fs, f.name)
		if err != nil {
			return 0, fmt.Errorf("read journal segment %s: %w", f.name, err)
		}
		if start >= len(data) {
			continue
		}
		for off := start; ; {
			payload, n := nextRecord(data[off:], f.seg)
			if n == 0 {
				break
			}
			if err := decodeOps(payload, func(key, value []byte, del bool) {
				state[string(key)] = entry{value: value, del: del}
			}); err != nil {
				return 0, fmt.Errorf("journal segment %s at %d: %w", f.name, off, err)
			}
			off += n
			replayed++
		}
	}
	if replayed > 0 || last > folded {
		// Every segment there is, whole: the next one is new.
		if err := j.fold(state, last, math.MaxInt64); err != nil {
			return 0, err
		}
		if replayed > 0 {
			j.log.Info("journal replayed", "records", replayed, "keys", len(state), "segments_through", last)
		}
	}
	for _, f := range files {
		j.free = append(j.free, f.name)
	}
	j.trimFree()
	return last, nil
}

func readAll(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// nextRecord returns the payload of the record at the start of data and
// the record's length, or n == 0 at the end of the segment's records: too
// short, a zero or oversized length, another segment's number, or a CRC
// that does not match.
func nextRecord(data []byte, seg uint64) (payload []byte, n int) {
	if len(data) < recordHeader {
		return nil, 0
	}
	size := int(binary.LittleEndian.Uint32(data[4:8]))
	if size == 0 || size > len(data)-recordHeader {
		return nil, 0
	}
	if binary.LittleEndian.Uint64(data[8:16]) != seg {
		return nil, 0
	}
	if crc32.Checksum(data[4:recordHeader+size], crcTable) != binary.LittleEndian.Uint32(data[0:4]) {
		return nil, 0
	}
	return data[recordHeader : recordHeader+size], recordHeader + size
}

var errBadOp = errors.New("malformed journal record")

// decodeOps calls fn for each op of a record's payload, in order. The
// slices point into payload.
func decodeOps(p []byte, fn func(key, value []byte, del bool)) error {
	for len(p) > 0 {
		kind := p[0]
		p = p[1:]
		key, rest, ok := uvarintBytes(p)
		if !ok {
			return errBadOp
		}
		p = rest
		switch kind {
		case opDelete:
			fn(key, nil, true)
		case opPut:
			value, rest, ok := uvarintBytes(p)
			if !ok {
				return errBadOp
			}
			p = rest
			fn(key, value, false)
		default:
			return errBadOp
		}
	}
	return nil
}

func uvarintBytes(p []byte) (b, rest []byte, ok bool) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, nil, false
	}
	return p[k : k+int(n)], p[k+int(n):], true
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// readFolded returns where the journal is folded up to: every segment
// before seg, and seg's records before byte off.
func readFolded(db *pdb.DB) (seg uint64, off int64, err error) {
	v, closer, err := db.Get(foldedKey)
	if errors.Is(err, pdb.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read journal position: %w", err)
	}
	defer closer.Close()
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("journal position: %d bytes, want 16", len(v))
	}
	return binary.LittleEndian.Uint64(v), int64(binary.LittleEndian.Uint64(v[8:])), nil
}

// foldBatch is the size at which a fold commits what it has so far.
// Pebble's log writer keeps every block a batch ever needed at once, so
// one batch of a whole segment's keys would keep megabytes for good.
const foldBatch = 256 << 10

// fold writes m (a key's latest write each) into Pebble, synced, then the
// position folded up to (seg, end). A crash part way leaves the position
// where it was, and the next Open replays the stretch again over what was
// written: the same latest values, so the fold need not be atomic.
func (j *journal) fold(m map[string]entry, seg uint64, end int64) error {
	pb := j.db.NewBatch()
	defer func() { pb.Close() }()
	commit := func() error {
		if err := pb.Commit(pdb.Sync); err != nil {
			return fmt.Errorf("fold journal segment %d: %w", seg, err)
		}
		pb.Close()
		pb = j.db.NewBatch()
		return nil
	}
	for k, e := range m {
		var err error
		if e.del {
			err = pb.Delete([]byte(k), nil)
		} else {
			err = pb.Set([]byte(k), e.value, nil)
		}
		if err != nil {
			return fmt.Errorf("fold journal segment %d: %w", seg, err)
		}
		if pb.Len() >= foldBatch {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	pos := binary.LittleEndian.AppendUint64(nil, seg)
	pos = binary.LittleEndian.AppendUint64(pos, uint64(end))
	if err := pb.Set(foldedKey, pos, nil); err != nil {
		return fmt.Errorf("fold journal segment %d: %w", seg, err)
	}
	return commit()
}

// trimFree removes the reusable files beyond keepFree, oldest first. The
// caller holds mu or is the only user.
func (j *journal) trimFree() {
	for len(j.free) > keepFree {
		if err := j.fs.Remove(j.free[0]); err != nil {
			j.log.Warn("journal: remove a folded segment", "file", j.free[0], "err", err)
		}
		j.free = j.free[1:]
	}
}

// append adds b to the journal and the overlay and returns its sequence
// number; sync asks the writer to write and sync it now.
func (j *journal) append(b *store.Batch, sync bool) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return 0, j.err
	}
	if j.closing {
		return 0, store.ErrClosed
	}
	if j.segLen >= j.segSize {
		// Memory is bounded: if Pebble cannot keep up with the folds,
		// writers wait for it, as they would for a write stall.
		for len(j.frozen) >= maxFrozen && j.err == nil && !j.closing {
			j.folded.Wait()
		}
		if j.err != nil {
			return 0, j.err
		}
		if j.closing {
			return 0, store.ErrClosed
		}
		j.active.end = j.segLen
		j.frozen = append(j.frozen, j.active)
		j.seg++
		j.segLen = 0
		j.active = &layer{seg: j.seg, m: make(map[string]entry, len(j.active.m))}
	}
	size := recordHeader
	for _, op := range b.Ops {
		size += 1 + uvarintLen(len(op.Key)) + len(op.Key)
		if !op.Delete {
			size += uvarintLen(len(op.Value)) + len(op.Value)
		}
	}
	// Records are encoded into chunks that are never reused: the overlay's
	// values point into them, and the writer writes from them.
	fresh := cap(j.chunk)-len(j.chunk) < size
	if fresh {
		// Chunks double from 4 KiB to chunkSize, so that a quiet store
		// (whose chunk is dropped when it folds) holds little.
		j.chunkCap = min(max(2*j.chunkCap, 4<<10), chunkSize)
		j.chunk = make([]byte, 0, max(j.chunkCap, size))
	}
	start := len(j.chunk)
	c := j.chunk[:start+recordHeader]
	m := j.active.m
	for _, op := range b.Ops {
		kind := byte(opPut)
		if op.Delete {
			kind = opDelete
		}
		c = append(c, kind)
		c = binary.AppendUvarint(c, uint64(len(op.Key)))
		c = append(c, op.Key...)
		// The overlay's key is the record's copy (chunks are never
		// changed or reused), so that it costs no allocation of its own.
		var k string
		if len(op.Key) > 0 {
			k = unsafe.String(&c[len(c)-len(op.Key)], len(op.Key))
		}
		var v []byte
		if !op.Delete {
			c = binary.AppendUvarint(c, uint64(len(op.Value)))
			c = append(c, op.Value...)
			v = c[len(c)-len(op.Value) : len(c) : len(c)]
		}
		m[k] = entry{value: v, del: op.Delete}
	}
	j.chunk = c
	rec := c[start:]
	// The record joins the last piece if it follows it in the same chunk
	// (records are appended to a chunk one after the other) and segment.
	if n := len(j.pieces); n > 0 && !fresh && j.pieces[n-1].seg == j.seg {
		j.pieces[n-1].data = j.pieces[n-1].data[:len(j.pieces[n-1].data)+len(rec)]
	} else {
		j.pieces = append(j.pieces, piece{seg: j.seg, data: rec})
	}
	binary.LittleEndian.PutUint32(rec[4:8], uint32(len(rec)-recordHeader))
	binary.LittleEndian.PutUint64(rec[8:16], j.seg)
	binary.LittleEndian.PutUint32(rec[0:4], crc32.Checksum(rec[4:], crcTable))
	j.segLen += int64(len(rec))
	j.seq++
	j.active.last = j.seq
	if sync {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	return j.seq, nil
}

// barrier returns the sequence number a sync must reach for every record
// appended so far to be durable, or 0 if they are.
func (j *journal) barrier() (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return 0, j.err
	}
	if j.synced >= j.seq {
		return 0, nil
	}
	select {
	case j.kick <- struct{}{}:
	default:
	}
	return j.seq, nil
}

// wait returns once record seq is synced, or the journal failed.
func (j *journal) wait(seq uint64) error {
	for {
		j.mu.Lock()
		if j.synced >= seq {
			j.mu.Unlock()
			return nil
		}
		if j.err != nil {
			err := j.err
			j.mu.Unlock()
			return err
		}
		d := j.done
		j.mu.Unlock()
		<-d
	}
}

// wake wakes the waiters (wait): the caller holds mu and has moved synced
// or err.
func (j *journal) wake() {
	close(j.done)
	j.done = make(chan struct{})
}

// fail makes err the journal's error, unless it has one, and wakes every
// writer and waiter. The caller holds mu.
func (j *journal) fail(err error) {
	if j.err == nil {
		j.err = err
		j.log.Error("journal failed: writes are refused until restart", "err", err)
	}
	j.wake()
	j.folded.Broadcast()
}

// writer writes and syncs what was appended, one group at a time.
func (j *journal) writer() {
	defer j.wg.Done()
	for {
		select {
		case <-j.kick:
		case <-j.stop:
		}
		j.mu.Lock()
		ps, seq, closing := j.pieces, j.seq, j.closing
		j.pieces = nil
		j.mu.Unlock()
		var err error
		rolled := false
		if len(ps) > 0 {
			for _, p := range ps {
				if p.seg != j.fseg {
					if err = j.open(p.seg); err != nil {
						break
					}
					rolled = true
				}
				if _, err = j.f.WriteAt(p.data, j.foff); err != nil {
					err = fmt.Errorf("journal write: %w", err)
					break
				}
				j.foff += int64(len(p.data))
			}
			if err == nil {
				if err = j.f.SyncData(); err != nil {
					err = fmt.Errorf("journal sync: %w", err)
				}
			}
		}
		j.mu.Lock()
		if err != nil {
			j.fail(err)
		} else {
			j.synced = seq
			j.wake()
		}
		done := closing && len(j.pieces) == 0
		j.mu.Unlock()
		if rolled {
			select {
			case j.foldKick <- struct{}{}:
			default:
			}
		}
		if done || err != nil {
			if j.f != nil {
				j.f.Close()
				j.f = nil
			}
			return
		}
	}
}

// open makes seg the file the writer writes to, after syncing the one
// before (so that a segment is whole on disk before the next begins). It
// reuses a folded segment's file where there is one: overwriting it costs
// a cheaper sync than growing a new file.
func (j *journal) open(seg uint64) error {
	if j.f != nil {
		if err := j.f.SyncData(); err != nil {
			return fmt.Errorf("journal sync: %w", err)
		}
		if err := j.f.Close(); err != nil {
			return fmt.Errorf("journal close segment: %w", err)
		}
		j.f = nil
	}
	name := j.fs.PathJoin(j.dir, segName(seg))
	j.mu.Lock()
	f, spare := j.spare, j.spareName
	j.spare = nil
	var old string
	if f == nil && len(j.free) > 0 {
		old = j.free[0]
		j.free = j.free[1:]
	}
	j.mu.Unlock()
	var err error
	if f != nil {
		if err = j.fs.Rename(spare, name); err != nil {
			f.Close()
			return fmt.Errorf("journal segment %d: %w", seg, err)
		}
	} else if old != "" {
		f, err = j.fs.ReuseForWrite(old, name)
	} else {
		f, err = j.fs.Create(name)
	}
	if err != nil {
		return fmt.Errorf("journal segment %d: %w", seg, err)
	}
	// The new name must be durable before anything acknowledged is in it.
	if err := j.dirFile.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("journal segment %d: sync directory: %w", seg, err)
	}
	j.f, j.fseg, j.foff = f, seg, 0
	return nil
}

// prepareSpare renames the newest free file as a spare and opens it. The
// caller holds mu; a failure (no descriptor left, say) leaves no spare,
// and the next fold tries again.
func (j *journal) prepareSpare() {
	name := j.free[len(j.free)-1]
	j.free = j.free[:len(j.free)-1]
	j.spares++
	spare := j.fs.PathJoin(j.dir, fmt.Sprintf("%s%d", sparePrefix, j.spares))
	f, err := j.fs.ReuseForWrite(name, spare)
	if err != nil {
		j.log.Warn("journal: prepare the next segment's file", "err", err)
		return
	}
	j.spare, j.spareName = f, spare
}

// idleFold is how often the folder looks for a journal that has had no
// write since it last looked: it then folds the segment so far (the
// segment goes on, in the same file), so that a quiet node holds no
// overlay (its memory) and a restart after a quiet spell replays nothing.
const idleFold = 100 * time.Millisecond

// folder folds each full, synced segment into Pebble, and the segment
// under way once the journal is idle.
func (j *journal) folder() {
	defer j.wg.Done()
	tick := time.NewTicker(idleFold)
	defer tick.Stop()
	var seen uint64 // j.seq at the last tick
	for {
		select {
		case <-j.foldKick:
		case <-tick.C:
			j.mu.Lock()
			if j.seq == seen && len(j.active.m) > 0 && j.active.last <= j.synced && len(j.frozen) == 0 && !j.closing {
				// The segment goes on: the new layer starts where
				// this one ends, and no file is opened (a node out of
				// file descriptors keeps writing).
				j.active.end = j.segLen
				j.frozen = append(j.frozen, j.active)
				j.active = &layer{seg: j.seg, start: j.segLen, m: make(map[string]entry)}
				j.chunk, j.chunkCap = nil, 0
			}
			seen = j.seq
			j.mu.Unlock()
		case <-j.stop:
			return
		}
		for {
			j.mu.Lock()
			if len(j.frozen) == 0 || j.frozen[0].last > j.synced || j.err != nil {
				j.mu.Unlock()
				break
			}
			l := j.frozen[0]
			j.mu.Unlock()
			err := j.fold(l.m, l.seg, l.end)
			j.mu.Lock()
			if err != nil {
				j.fail(err)
				j.mu.Unlock()
				return
			}
			j.frozen[0] = nil // the array must not keep the folded layer (and its chunks)
			j.frozen = j.frozen[1:]
			// A segment's file is free once the segment is closed and
			// its last layer folded.
			if l.seg < j.seg && (len(j.frozen) == 0 || j.frozen[0].seg != l.seg) {
				j.free = append(j.free, j.fs.PathJoin(j.dir, segName(l.seg)))
				j.trimFree()
			}
			if j.spare == nil && len(j.free) > 0 && !j.closing {
				j.prepareSpare()
			}
			j.folded.Broadcast()
			j.mu.Unlock()
		}
	}
}

// close writes and syncs what is left, stops the goroutines, and folds
// what the overlay still holds, so that the next Open replays nothing: a
// node stopped straight after a burst of writes would otherwise read its
// last segments again at the start (3 s of a start, after ten million
// offsets were committed), when a stop can wait for it. A fold that
// fails leaves its segments for the next Open to replay, as a crash does.
func (j *journal) close() error {
	j.mu.Lock()
	j.closing = true
	j.folded.Broadcast()
	j.mu.Unlock()
	close(j.stop)
	j.wg.Wait()
	if j.spare != nil {
		j.spare.Close() // its file is removed at the next Open
		j.spare = nil
	}
	j.mu.Lock()
	layers := j.frozen
	if len(j.active.m) > 0 {
		a := j.active
		a.end = j.segLen
		layers = append(layers, a)
	}
	ok, synced := j.err == nil && !j.noFoldAtClose, j.synced
	j.mu.Unlock()
	for _, l := range layers {
		if !ok || l.last > synced {
			break // not on disk: nothing acknowledged it
		}
		if err := j.fold(l.m, l.seg, l.end); err != nil {
			j.log.Warn("journal: fold at close; the next open replays it", "err", err)
			break
		}
	}
	derr := j.dirFile.Close()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	return derr
}

// unfolded is the size of the records in the overlay, not yet in Pebble.
func (j *journal) unfolded() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	var n int64
	if len(j.active.m) > 0 {
		n = j.segLen - j.active.start
	}
	for _, l := range j.frozen {
		n += l.end - l.start
	}
	return n
}

// get returns key's latest write in the overlay, if it has one.
func (j *journal) get(key []byte) (e entry, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e, ok := j.active.m[string(key)]; ok {
		return e, true
	}
	for i := len(j.frozen) - 1; i >= 0; i-- {
		if e, ok := j.frozen[i].m[string(key)]; ok {
			return e, true
		}
	}
	return entry{}, false
}

// kv is one key's latest write in the overlay, for Scan.
type kv struct {
	key string
	e   entry
}

// scan returns the overlay's latest writes of the keys under prefix, in key
// order.
func (j *journal) scan(prefix []byte) []kv {
	j.mu.Lock()
	seen := map[string]entry{}
	for _, l := range append(slices.Clip(j.frozen), j.active) {
		for k, e := range l.m {
			if strings.HasPrefix(k, string(prefix)) {
				seen[k] = e
			}
		}
	}
	j.mu.Unlock()
	out := make([]kv, 0, len(seen))
	for k, e := range seen {
		out = append(out, kv{k, e})
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	return out
}

// isFoldedKey reports whether k is the journal's own key.
func isFoldedKey(k []byte) bool { return bytes.Equal(k, foldedKey) }
