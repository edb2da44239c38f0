package topics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Partition errors, mapped to Kafka error codes by the wire layer.
var (
	ErrOffsetOutOfRange     = errors.New("offset out of range")
	ErrOutOfOrderSequence   = errors.New("out of order sequence number")
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
	ErrMessageTooLarge      = errors.New("record batch larger than max.message.bytes")
	// ErrDeleted is returned by a partition whose topic was deleted while a
	// request was using it (Kafka's UNKNOWN_TOPIC_OR_PARTITION).
	ErrDeleted = errors.New("topic deleted")
)

const segmentSuffix = ".log"

// segment is one file of a partition's log, holding the batches from its base
// offset on, concatenated exactly as Kafka stores them.
type segment struct {
	base int64
	f    *os.File
	size int64
	// alloc is the file's length: size, then zeros written ahead of the
	// batches (zeroAhead).
	alloc int64
	// firstTS is the max timestamp of the segment's first batch, -1
	// before it has one or if that batch has none: segment.ms counts from
	// it (Kafka's LogSegment.rollingBasedTimestamp). maxTS is the largest
	// timestamp of its batches, -1 if none: retention.ms counts from it
	// (Kafka's largestTimestamp).
	firstTS, maxTS int64
	// created is when the segment was created or opened: segment.ms
	// counts from it when the first batch has no timestamp, as Kafka's
	// LogSegment.created.
	created time.Time
	// refs counts the reads using f outside the partition's lock; dead
	// says retention has removed the segment, and then the last of those
	// reads closes f (release). Both under mu.
	refs int
	dead bool
}

func newSegment(base int64, f *os.File, created time.Time) *segment {
	return &segment{base: base, f: f, firstTS: -1, maxTS: -1, created: created}
}

// trim cuts the file back to its batches: the zeros ahead of them, and
// whatever a failed write left there.
func (s *segment) trim() error {
	s.alloc = s.size
	return s.f.Truncate(s.size)
}

// zeroAheadMin and zeroAheadMax bound how far the active segment's file
// is filled with zeros ahead of its batches: as far as the segment holds
// already, so that a partition with little data holds little more. An
// fsync after a write into blocks the file already has can skip
// committing a new file length to the journal; an acknowledged produce
// and every transaction marker wait for one. Measured on this ext4 disk
// (BENCHMARKS.md, "Three more off the chain"): 140-170 µs against
// 170-220 µs in a probe with pauses between syncs, no difference for one
// transactional producer, more transactions/s at 16. A recovery takes a
// tail of zeros for what it is: no batch, nothing torn.
const (
	zeroAheadMin = 64 << 10
	zeroAheadMax = 1 << 20
)

var zeros = make([]byte, zeroAheadMax)

// batchEntry locates one batch. The index keeps one per batch in memory;
// it is rebuilt from the batch headers at start-up.
type batchEntry struct {
	seg   *segment
	pos   int64
	base  int64
	last  int64
	maxTS int64
	size  int32
}

// Partition is one partition's log: an append-only sequence of record
// batches in segment files, with the idempotent-producer state derived from
// them. It is safe for concurrent use.
type Partition struct {
	Topic string
	Index int32

	dir      string
	logger   *slog.Logger
	syncFile func(*os.File) error
	now      func() time.Time

	mu sync.Mutex
	// cfg is what the partition acts on of its topic's configs.
	cfg partConfig
	// epochs are the leader epochs and where each began (epochs.go),
	// the current one last.
	epochs    []epochEntry
	segs      []*segment
	batches   []batchEntry
	logStart  int64
	end       int64 // log end offset; on one node also the high watermark
	producers map[int64]*producerState
	// ongoing maps a producer with an open transaction to its first
	// offset; aborted lists aborted transactions by marker offset
	// (txn.go).
	ongoing map[int64]int64
	aborted []AbortedTxn
	notify  chan struct{}
	closed  bool

	syncMu sync.Mutex // held by the one goroutine running fsync
	synced atomic.Int64
}

// partConfig is what a partition acts on of its topic's configs; the
// Log hands it over whole (setConfigs) when the configs change.
type partConfig struct {
	// segmentBytes is segment.bytes: the size at which the partition
	// rolls a new segment. segmentMs is segment.ms: the time after which
	// it does (rollDue).
	segmentBytes, segmentMs int64
	// retentionMs and retentionBytes are retention.ms and retention.bytes
	// (-1: no limit), which apply when deleteRetention says that
	// cleanup.policy includes delete (expired).
	retentionMs, retentionBytes int64
	deleteRetention             bool
	// logAppendTime: message.timestamp.type is LogAppendTime, so appended
	// batches carry the append time.
	logAppendTime bool
}

func openPartition(dir, topic string, index int32, cfg partConfig, logger *slog.Logger, syncFile func(*os.File) error, now func() time.Time) (*Partition, error) {
	p := &Partition{
		Topic:     topic,
		Index:     index,
		dir:       dir,
		cfg:       cfg,
		logger:    logger,
		syncFile:  syncFile,
		now:       now,
		producers: make(map[int64]*producerState),
		ongoing:   make(map[int64]int64),
		notify:    make(chan struct{}),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create partition dir: %w", err)
	}
	if err := p.recover(); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("recover %s-%d: %w", topic, index, err)
	}
	if err := p.openEpochs(); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("open %s-%d: %w", topic, index, err)
	}
	return p, nil
}

// recover rebuilds the index and producer state from the segment files. As
// Kafka's log recovery, it truncates the log at the first batch that is torn,
// fails its CRC or does not follow on from the one before: only the tail can
// be damaged by a crash, and nothing past that point was ever acknowledged
// with acks=-1, because acknowledgement waits for fsync.
func (p *Partition) recover() error {
	names, err := os.ReadDir(p.dir)
	if err != nil {
		return err
	}
	var bases []int64
	for _, e := range names {
		name := e.Name()
		if !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, segmentSuffix), 10, 64)
		if err != nil || base < 0 {
			return fmt.Errorf("unexpected file %q in log dir", name)
		}
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	// The log start DeleteRecords or retention stored (retain stores it
	// before it removes a file). The segments wholly below it, those
	// followed by one that starts at or below it, are what retention was
	// removing when the process stopped, in whatever order the file
	// system kept the removals: finish the job, so that a gap among them
	// is not taken for damage, which would cut off the log above it.
	stored, err := readLogStart(p.dir)
	if err != nil {
		return err
	}
	below := 0
	for below+1 < len(bases) && bases[below+1] <= stored {
		below++
	}
	for _, base := range bases[:below] {
		if err := os.Remove(p.segPath(base)); err != nil {
			return err
		}
	}
	if below > 0 {
		p.logger.Info("removed segments below the log start", "topic", p.Topic, "partition", p.Index, "segments", below, "log_start", stored)
	}
	bases = bases[below:]
	if len(bases) == 0 {
		bases = []int64{0}
	}
	p.logStart = bases[0]
	p.end = bases[0]
	for i, base := range bases {
		f, err := os.OpenFile(p.segPath(base), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		seg := newSegment(base, f, p.now())
		p.segs = append(p.segs, seg)
		if base != p.end {
			// A gap between segments: everything from here on is suspect.
			p.logger.Warn("log segment does not follow the previous one; truncating", "topic", p.Topic, "partition", p.Index, "segment", base, "expected", p.end)
			if err := p.dropSegmentsFrom(i, bases); err != nil {
				return err
			}
			break
		}
		truncated, err := p.scanSegment(seg)
		if err != nil {
			return err
		}
		if truncated && i < len(bases)-1 {
			if err := p.dropSegmentsFrom(i+1, bases); err != nil {
				return err
			}
			break
		}
	}
	if stored > p.logStart {
		p.logStart = min(stored, p.end)
	}
	if stored > p.end {
		// DeleteRecords moved the start to a log end whose tail was never
		// synced, and the crash took that tail: the start comes down to
		// the end, durably, or the records appended there from now on
		// would be hidden by the next restart.
		if err := p.storeLogStart(p.end); err != nil {
			return err
		}
	}
	// Whatever is on disk now counts as durable: make it so.
	if err := p.syncFile(p.active().f); err != nil {
		return err
	}
	p.synced.Store(p.end)
	return syncDir(p.dir)
}

// scanSegment indexes seg's batches, checking every CRC, and truncates the
// file at the first bad one. It reports whether it truncated.
func (p *Partition) scanSegment(seg *segment) (bool, error) {
	st, err := seg.f.Stat()
	if err != nil {
		return false, err
	}
	fileSize := st.Size()
	var pos int64
	buf := make([]byte, 64<<10)
	for pos < fileSize {
		if fileSize-pos < batchHeaderSize {
			break
		}
		hb := buf[:batchHeaderSize]
		if _, err := seg.f.ReadAt(hb, pos); err != nil {
			return false, err
		}
		h, err := parseHeader(hb)
		if err != nil || pos+int64(h.size) > fileSize {
			break
		}
		if int(h.size) > len(buf) {
			buf = make([]byte, h.size)
		}
		b := buf[:h.size]
		if _, err := seg.f.ReadAt(b, pos); err != nil {
			return false, err
		}
		base := int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
		if _, err := checkBatch(b, true); err != nil || base != p.end {
			break
		}
		ctrl := int16(-1)
		if h.control() {
			ctrl = controlType(b, h)
		}
		p.index(seg, pos, base, h, ctrl)
		pos += int64(h.size)
	}
	seg.size, seg.alloc = pos, fileSize
	if pos == fileSize {
		return false, nil
	}
	if zero, err := zeroFrom(seg.f, pos, fileSize); err != nil || zero {
		return false, err // the zeros written ahead of the batches
	}
	p.logger.Warn("truncating log at a torn or corrupt batch", "topic", p.Topic, "partition", p.Index,
		"segment", seg.base, "valid_bytes", pos, "file_bytes", fileSize)
	if err := seg.trim(); err != nil {
		return true, err
	}
	return true, p.syncFile(seg.f)
}

// zeroFrom reports whether f holds only zeros from pos to end.
func zeroFrom(f *os.File, pos, end int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for pos < end {
		n := min(int64(len(buf)), end-pos)
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return false, err
		}
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		pos += n
	}
	return true, nil
}

// dropSegmentsFrom removes the segment files of bases[i:], including those
// recover has not opened yet: a stale file left behind would be taken for
// the log's continuation once the log grew back to its base offset.
func (p *Partition) dropSegmentsFrom(i int, bases []int64) error {
	for _, s := range p.segs[i:] {
		s.f.Close()
	}
	p.segs = p.segs[:i]
	for _, base := range bases[i:] {
		if err := os.Remove(p.segPath(base)); err != nil {
			return err
		}
	}
	if len(p.segs) == 0 {
		f, err := os.OpenFile(p.segPath(p.end), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		p.segs = append(p.segs, newSegment(p.end, f, p.now()))
	}
	return nil // recover syncs the active segment and the directory
}

// index records a batch that is in seg at pos, and folds it into the
// producer and transaction state (ctrl: a control batch's record type).
// Callers hold mu (or own p exclusively).
func (p *Partition) index(seg *segment, pos, base int64, h header, ctrl int16) {
	last := base + int64(h.lastOffsetDelta)
	if pos == 0 {
		seg.firstTS = h.maxTimestamp
	}
	seg.maxTS = max(seg.maxTS, h.maxTimestamp)
	p.batches = append(p.batches, batchEntry{seg: seg, pos: pos, base: base, last: last, maxTS: h.maxTimestamp, size: h.size})
	p.end = last + 1
	p.indexTxn(base, h, ctrl)
	if h.producerID >= 0 && !h.control() {
		ps := p.producers[h.producerID]
		if ps == nil {
			ps = &producerState{marker: -1}
			p.producers[h.producerID] = ps
		}
		ps.record(h.producerEpoch, h.baseSequence, lastSequence(h.baseSequence, h.lastOffsetDelta), base)
	}
}

func (p *Partition) segPath(base int64) string {
	return filepath.Join(p.dir, fmt.Sprintf("%020d%s", base, segmentSuffix))
}

func (p *Partition) active() *segment { return p.segs[len(p.segs)-1] }

// AppendResult says where a produced batch landed.
type AppendResult struct {
	// BaseOffset is the offset of the batch's first record. For a duplicate
	// it is where the original copy was written.
	BaseOffset int64
	// End is the log end offset once the batch is in; pass it to Sync.
	End int64
	// LogStart is the log start offset.
	LogStart int64
	// Duplicate is true when an idempotent producer resent a batch the log
	// already holds; nothing was written.
	Duplicate bool
}

// Append validates one produced batch (exactly one RecordBatch v2), assigns it
// the next offsets and writes it to the active segment. The bytes are kept
// as produced (compression included); only the base offset and the
// partition leader epoch, which the CRC does not cover, are rewritten. The
// caller's slice is modified in place.
//
// Append does not fsync: call Sync with the result's End for acks=-1.
func (p *Partition) Append(b []byte, maxBatchBytes int) (AppendResult, error) {
	h, err := validateBatch(b)
	if err != nil {
		return AppendResult{}, err
	}
	if maxBatchBytes > 0 && len(b) > maxBatchBytes {
		return AppendResult{}, ErrMessageTooLarge
	}
	if err := validateRecords(b, h); err != nil {
		return AppendResult{}, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return AppendResult{}, ErrDeleted
	}
	var ps *producerState
	if h.producerID >= 0 {
		ps = p.producers[h.producerID]
		lastSeq := lastSequence(h.baseSequence, h.lastOffsetDelta)
		if dup, ok, err := ps.check(h.producerEpoch, h.baseSequence, lastSeq); err != nil {
			return AppendResult{}, err
		} else if ok {
			return AppendResult{BaseOffset: dup, End: p.end, LogStart: p.logStart, Duplicate: true}, nil
		}
	}

	base := p.end
	if err := p.appendLocked(b, h, -1); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: base, End: p.end, LogStart: p.logStart}, nil
}

// logStartFile holds the log start offset DeleteRecords or retention
// set, in decimal; without it, or below the first segment's base, the
// log starts at that base (Kafka's log-start-offset-checkpoint, one file
// per partition here). Format: one decimal number, no version; a change
// would take a new file name, the old one read when the new is missing.
const logStartFile = "log-start"

// readLogStart reads the log start stored in dir, 0 if none.
func readLogStart(dir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, logStartFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s holds %q", ErrCorrupt, logStartFile, b)
	}
	return n, nil
}

// DeleteRecordsBefore moves the log start to offset (-1: the high
// watermark), as Kafka's DeleteRecords: records below it are no longer
// read, listed or counted; the new start is durable before it returns. An
// offset at or below the log start changes nothing; one above the high
// watermark is ErrOffsetOutOfRange. It returns the log start (the low
// watermark). The segments wholly below it go at the next retention pass,
// as in Kafka.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrDeleted
	}
	if offset == -1 {
		offset = p.end
	}
	if offset < 0 || offset > p.end {
		return p.logStart, ErrOffsetOutOfRange
	}
	if offset <= p.logStart {
		return p.logStart, nil
	}
	if err := p.storeLogStart(offset); err != nil {
		return p.logStart, err
	}
	p.logStart = offset
	return offset, nil
}

// storeLogStart makes offset the stored log start: written and synced,
// then renamed into place and the directory synced. Callers hold mu (or
// own p exclusively).
func (p *Partition) storeLogStart(offset int64) error {
	tmp := filepath.Join(p.dir, logStartFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("store the log start of %s-%d: %w", p.Topic, p.Index, err)
	}
	_, err = f.WriteString(strconv.FormatInt(offset, 10))
	if err == nil {
		err = p.syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(p.dir, logStartFile))
	}
	if err == nil {
		err = syncDir(p.dir)
	}
	if err != nil {
		return fmt.Errorf("store the log start of %s-%d: %w", p.Topic, p.Index, err)
	}
	return nil
}

// Size is the bytes of the partition's record batches on disk, every
// segment's (DescribeLogDirs).
func (p *Partition) Size() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, seg := range p.segs {
		n += seg.size
	}
	return n
}

// setConfigs applies the topic configs the partition acts on: those it
// appends by at the next append, those of retention at the next pass.
func (p *Partition) setConfigs(cfg partConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg = cfg
}

// appendLocked writes a checked batch at the log end and indexes it.
// Callers hold mu.
func (p *Partition) appendLocked(b []byte, h header, ctrl int16) error {
	if ctrl < 0 && p.cfg.logAppendTime {
		// Before the roll decision, which reads the batch's timestamp.
		h.maxTimestamp = stampAppendTime(b, p.now().UnixMilli())
	}
	seg := p.active()
	if seg.size > 0 && (seg.size+int64(len(b)) > p.cfg.segmentBytes || p.rollDue(seg, h.maxTimestamp)) {
		var err error
		if seg, err = p.roll(); err != nil {
			return err
		}
	}
	base := p.end
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(p.epochs[len(p.epochs)-1].epoch))
	if err := p.zeroAhead(seg, int64(len(b))); err != nil {
		return fmt.Errorf("append to %s-%d: %w", p.Topic, p.Index, err)
	}
	if _, err := seg.f.WriteAt(b, seg.size); err != nil {
		// A partial write may be on disk; cut it off so the next append
		// starts clean, as recovery would.
		_ = seg.trim()
		return fmt.Errorf("append to %s-%d: %w", p.Topic, p.Index, err)
	}
	pos := seg.size
	seg.size += int64(len(b))
	p.index(seg, pos, base, h, ctrl)
	close(p.notify)
	p.notify = make(chan struct{})
	return nil
}

// zeroAhead makes room for n more bytes in seg's file: if they do not
// fit in the zeros written already, it writes more (zeroAheadMin to
// zeroAheadMax, not past the segment's size unless the batch needs it).
// Callers hold mu.
func (p *Partition) zeroAhead(seg *segment, n int64) error {
	if seg.size+n <= seg.alloc {
		return nil
	}
	step := min(max(seg.size, zeroAheadMin), zeroAheadMax)
	to := max(seg.size+n, min(seg.alloc+step, p.cfg.segmentBytes))
	for at := seg.alloc; at < to; {
		k := min(to-at, zeroAheadMax)
		if _, err := seg.f.WriteAt(zeros[:k], at); err != nil {
			_ = seg.trim()
			return err
		}
		at += k
	}
	seg.alloc = to
	return nil
}

// roll fsyncs the active segment, without the zeros ahead of its
// batches, and starts a new one at the log end. Callers hold mu.
func (p *Partition) roll() (*segment, error) {
	old := p.active()
	if old.alloc > old.size {
		if err := old.trim(); err != nil {
			return nil, fmt.Errorf("trim segment: %w", err)
		}
	}
	if err := p.syncFile(old.f); err != nil {
		return nil, fmt.Errorf("sync segment: %w", err)
	}
	f, err := os.OpenFile(p.segPath(p.end), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("new segment: %w", err)
	}
	if err := syncDir(p.dir); err != nil {
		f.Close()
		return nil, err
	}
	seg := newSegment(p.end, f, p.now())
	p.segs = append(p.segs, seg)
	if p.synced.Load() < p.end {
		p.synced.Store(p.end)
	}
	return seg, nil
}

// Sync returns once every offset below upTo is on stable storage. Concurrent
// callers share fsyncs: while one runs, the others queue, and the next one
// covers all of them (group commit).
func (p *Partition) Sync(upTo int64) error {
	if p.synced.Load() >= upTo {
		return nil
	}
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	if p.synced.Load() >= upTo {
		return nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrDeleted
	}
	target, f := p.end, p.active().f
	p.mu.Unlock()
	// A roll after this point fsyncs this file itself before moving on, so
	// syncing f covers everything below target.
	if err := p.syncFile(f); err != nil {
		if p.isClosed() {
			return ErrDeleted // the topic was deleted while we synced
		}
		return fmt.Errorf("sync %s-%d: %w", p.Topic, p.Index, err)
	}
	if p.synced.Load() < target {
		p.synced.Store(target)
	}
	return nil
}

// Offsets returns the log start offset and the high watermark.
func (p *Partition) Offsets() (logStart, highWatermark int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logStart, p.end
}

// Wait returns a channel closed by the next append, so a long-polling fetch
// wakes on new data rather than polling. Take it before reading, so that
// an append between the read and the wait is not missed.
func (p *Partition) Wait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notify
}

// ReadResult is what a fetch gets from one partition.
type ReadResult struct {
	Batches       []byte // whole batches, possibly starting before the offset asked for
	LogStart      int64
	HighWatermark int64
	// LastStable is the last stable offset (txn.go).
	LastStable int64
	upper      int64 // the offset after the last batch returned
}

// Read returns whole batches starting with the one that holds offset, at most
// maxBytes of them unless atLeastOne is set and the first batch alone is
// larger (Kafka returns one oversized batch so that a consumer can always
// make progress, KIP-74). Reading at the log end returns no batches.
func (p *Partition) Read(offset int64, maxBytes int, atLeastOne bool) (ReadResult, error) {
	return p.read(offset, maxBytes, 0, atLeastOne, false)
}

// ReadOffsets is Read that also stops before a batch starting maxOffsets
// or more past offset (0: no such limit): a share fetch that may acquire
// maxOffsets records reads no more than the batches that hold them.
func (p *Partition) ReadOffsets(offset int64, maxBytes int, maxOffsets int64, atLeastOne bool) (ReadResult, error) {
	return p.read(offset, maxBytes, maxOffsets, atLeastOne, false)
}

// read is Read; committed stops at the last stable offset, maxOffsets
// (if above 0) before a batch starting that far past offset.
func (p *Partition) read(offset int64, maxBytes int, maxOffsets int64, atLeastOne, committed bool) (ReadResult, error) {
	p.mu.Lock()
	res := ReadResult{LogStart: p.logStart, HighWatermark: p.end, LastStable: p.lastStable()}
	limit := p.end
	if committed {
		limit = res.LastStable
	}
	if p.closed {
		p.mu.Unlock()
		return res, ErrDeleted
	}
	if offset < p.logStart || offset > p.end {
		p.mu.Unlock()
		return res, ErrOffsetOutOfRange
	}
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].last >= offset })
	if i == len(p.batches) || p.batches[i].base >= limit {
		p.mu.Unlock()
		return res, nil
	}
	first := p.batches[i]
	n := int64(0)
	for j := i; j < len(p.batches); j++ {
		e := p.batches[j]
		if e.seg != first.seg || n+int64(e.size) > int64(maxBytes) || e.base >= limit || maxOffsets > 0 && e.base >= offset+maxOffsets {
			break
		}
		n += int64(e.size)
		res.upper = e.last + 1
	}
	if n == 0 && atLeastOne {
		n = int64(first.size)
		res.upper = first.last + 1
	}
	if n == 0 {
		p.mu.Unlock()
		return res, nil
	}
	first.seg.refs++ // released by readAt
	p.mu.Unlock()
	buf := make([]byte, n)
	if err := p.readAt(first.seg, buf, first.pos); err != nil {
		if p.isClosed() {
			return res, ErrDeleted
		}
		return res, fmt.Errorf("read %s-%d: %w", p.Topic, p.Index, err)
	}
	res.Batches = buf
	return res, nil
}

func (p *Partition) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// readBatch returns the bytes of one indexed batch. Callers hold no lock,
// and took a hold on e.seg (e.seg.refs++) under mu when they found e,
// which readBatch ends.
func (p *Partition) readBatch(e batchEntry) ([]byte, error) {
	buf := make([]byte, e.size)
	if err := p.readAt(e.seg, buf, e.pos); err != nil {
		return nil, fmt.Errorf("read %s-%d: %w", p.Topic, p.Index, err)
	}
	return buf, nil
}

// readAt fills buf from seg at pos, then ends the caller's hold on seg:
// a read takes one (seg.refs++) under mu where it finds the segment, so
// that retention, which may remove the segment in between, leaves the
// file open until the read is done (release).
func (p *Partition) readAt(seg *segment, buf []byte, pos int64) error {
	_, err := seg.f.ReadAt(buf, pos)
	p.release(seg)
	return err
}

// release ends a hold on seg; the last one out of a segment retention
// removed closes its file.
func (p *Partition) release(seg *segment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seg.refs--
	if seg.refs == 0 && seg.dead {
		seg.f.Close()
	}
}

// close trims the active segment to its batches, syncs and closes the
// files. After close every call fails with ErrDeleted.
func (p *Partition) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	close(p.notify)
	var first error
	// A clean close leaves the file as long as its batches: the zeros
	// ahead of them are for appends to come.
	if seg := p.active(); seg.alloc > seg.size {
		first = seg.trim()
	}
	if err := p.syncFile(p.active().f); err != nil && first == nil {
		first = err
	}
	if err := p.closeFiles(); err != nil && first == nil {
		first = err
	}
	return first
}

func (p *Partition) closeFiles() error {
	var first error
	for _, s := range p.segs {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
