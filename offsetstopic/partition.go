package offsetstopic

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/topics/recbatch"
)

// Name is the topic's name, Kafka's Topic.GROUP_METADATA_TOPIC_NAME.
const Name = "__consumer_offsets"

// TopicID is the topic's id in a cluster: derived from the cluster id,
// so that every node of a cluster, and a node after a restart, gives the
// same one (Kafka's is random, made once when the broker first creates
// the topic, and kept as long as the topic).
func TopicID(clusterID string) [16]byte {
	sum := sha256.Sum256([]byte("cohort " + Name + " " + clusterID))
	var id [16]byte
	copy(id[:], sum[:])
	if id == ([16]byte{}) || id == ([16]byte{15: 1}) { // Kafka's ZERO_UUID and METADATA_TOPIC_ID
		id[0] = 1
	}
	return id
}

// ReserveBlock is how far ahead of the records it emits a group shard
// reserves offsets of its partition in its KindOffsetsTopic record
// (groups' grouptype.Reserver): a new reservation is written with the
// records once half of the last one is used, so about once every 512 Ki
// records, and a restart skips at most this many offsets.
const ReserveBlock = 1 << 20

// DefaultTombstoneRetention is how long a tombstone stays readable after
// the record it deletes, Kafka's delete.retention.ms default for
// __consumer_offsets (24 h).
const DefaultTombstoneRetention = 24 * time.Hour

// Errors of the read side, which the wire server maps to Kafka's codes.
var (
	// ErrClosed: the shard was unloaded or given up; another partition
	// (here after a reload, or on another node) serves it now
	// (NOT_LEADER_OR_FOLLOWER).
	ErrClosed = errors.New("offsetstopic: partition closed")
	// ErrOffsetOutOfRange: an offset above the high watermark
	// (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("offsetstopic: offset out of range")
)

// Options configures a Partition.
type Options struct {
	// TombstoneRetention is how long a tombstone stays after the record
	// it deletes (and readers see the deletion); a reader further behind
	// may miss it, as in Kafka's compacted topic. Default
	// DefaultTombstoneRetention; at least a second.
	TombstoneRetention time.Duration

	// Scan, when set, makes the partition lazy: it holds no records
	// until a reader comes, and drops them again once no one has read
	// for Idle (see the package doc). Scan calls fn with every record of
	// the shard in the store, with the writes of every batch Durable was
	// handed before it began visible (store.Store's Scan of the shard's
	// prefix). Nil: the partition holds its records from the load on.
	Scan func(fn func(key, value []byte) error) error
	// Reserve asks the shard to reserve offsets for n more records: the
	// records a reader's arrival shows again, which the shard's own count
	// of its records (grouptype.Reserver) does not cover. It must not
	// block. Needed with Scan.
	Reserve func(n int64)
	// Idle is how long a lazy partition keeps its records after the
	// last read. Default DefaultIdle.
	Idle time.Duration
	// Now is the clock of reads; default time.Now.
	Now func() time.Time
}

// DefaultIdle is how long a lazy partition keeps its records after the
// last read: long enough that a reader polling every few minutes finds
// them, short enough that a one-off look does not keep a copy of the
// shard's records for good.
const DefaultIdle = 10 * time.Minute

// Partition is the __consumer_offsets partition of one coordinator shard:
// a view of the shard's records, not a log of its own (see the package
// doc). The shard's runtime feeds it; the wire server reads it. It is
// safe for concurrent use, with the writer side (Load, Loaded, Reserve,
// Durable, Close) called by the runtime as documented on each method.
type Partition struct {
	shard     uint16
	retention int64 // ms
	opts      Options

	// Load: the runtime's goroutine, before Loaded.
	loading []entry
	counted int64 // records a lazy partition's load found to show
	base    int64

	// Durable hands batches to the maintainer goroutine through queue.
	qmu     sync.Mutex
	queue   []durable
	qclosed bool
	wake    chan struct{} // capacity 1
	stop    chan struct{}
	done    chan struct{} // closed when the maintainer returns; nil before Loaded

	mu      sync.Mutex
	entries []entry          // ascending offsets
	index   map[string]int64 // a record's key → its live entry's offset
	dead    int              // entries superseded, or tombstones expired
	tombs   int              // live tombstones
	sweepAt int64            // ms: when tombstones are next checked for expiry
	next    int64            // the next offset to hand out
	limit   int64            // durable reservation: offsets below it may be shown
	hw      int64            // the high watermark: min(next, limit)
	applied uint64           // batches applied
	lastTS  int64            // ms: timestamps never go backwards
	notify  chan struct{}    // closed when hw moves or the partition closes
	closed  bool

	// A lazy partition (Options.Scan) holds entries only while awake:
	// from a reader's arrival until Idle after its last read. Asleep,
	// it counts offsets and nothing else.
	awake    bool
	lastRead time.Time
	wakes    uint64
}

// entry is one of the shard's records at an offset. Its key and value
// are the shard's own encoding, translated for a reader only when read.
type entry struct {
	off, ts int64
	key     string // "" once dead
	value   []byte // nil: a tombstone
}

// durable is a batch the store has made durable.
type durable struct {
	ts   int64 // ms
	recs []machine.Record
}

// NewPartition returns the partition of shard, empty until the runtime
// loads it.
func NewPartition(shard uint16, opts Options) *Partition {
	if opts.TombstoneRetention <= 0 {
		opts.TombstoneRetention = DefaultTombstoneRetention
	}
	opts.TombstoneRetention = max(opts.TombstoneRetention, time.Second)
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Partition{
		shard:     shard,
		opts:      opts,
		awake:     opts.Scan == nil,
		retention: opts.TombstoneRetention.Milliseconds(),
		index:     map[string]int64{},
		notify:    make(chan struct{}),
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}
}

// Load is handed every record of the shard as the runtime's load scans
// them, before Loaded: the shard's reservation (KindOffsetsTopic, which
// the machine replays too) sets where its records' offsets start. The
// bytes may be reused after it returns.
func (p *Partition) Load(key, value []byte) error {
	if record.IsOffsetsTopicKey(key) {
		o, err := record.DecodeOffsetsTopic(value)
		if err != nil {
			return fmt.Errorf("shard %d: %w", p.shard, err)
		}
		p.base = max(p.base, o.Reserved)
		return nil
	}
	switch {
	case !shown(key):
	case p.opts.Scan != nil:
		p.counted++ // asleep: the offsets are counted, the records are the store's
	default:
		p.loading = append(p.loading, entry{key: string(key), value: bytes.Clone(value)})
	}
	return nil
}

// Loaded ends the load: the shard's records, as the load found them,
// take the offsets from the stored reservation on (a compacted prefix
// above every offset shown before, so that a reader never sees offsets
// go backwards), stamped now. None is shown until Reserve's first
// reservation is durable. It starts the partition's maintenance.
func (p *Partition) Loaded(now time.Time) {
	p.mu.Lock()
	ts := now.UnixMilli()
	// An array of the loaded entries' size (the loading one has an
	// append's slack), and an index sized once, not grown record by
	// record from empty.
	p.entries = make([]entry, 0, len(p.loading))
	p.index = make(map[string]int64, len(p.loading))
	for i, e := range p.loading {
		e.off, e.ts = p.base+int64(i), ts
		p.index[e.key] = e.off
		p.entries = append(p.entries, e)
	}
	p.loading = nil
	p.next = p.base + int64(len(p.entries)) + p.counted
	p.limit, p.hw, p.lastTS = p.base, p.base, ts
	p.sweepAt = ts + p.retention
	p.done = make(chan struct{})
	p.mu.Unlock()
	go p.maintain()
}

// Durable is called by the runtime, in order, for every batch of records
// the store has made durable, with the time. It only queues the batch:
// the commit path does not wait for the topic.
func (p *Partition) Durable(now time.Time, recs []machine.Record) {
	p.qmu.Lock()
	if !p.qclosed {
		p.queue = append(p.queue, durable{ts: now.UnixMilli(), recs: recs})
	}
	p.qmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Close stops the partition: reads fail with ErrClosed and waiting
// fetches wake. Batches queued and not yet applied are dropped (their
// records are in the store, and the next load shows them).
func (p *Partition) Close() {
	p.qmu.Lock()
	already := p.qclosed
	p.qclosed = true
	p.queue = nil
	p.qmu.Unlock()
	if already {
		return
	}
	close(p.stop)
	if p.done != nil {
		<-p.done
	}
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.notify)
	}
	p.mu.Unlock()
}

// maintain applies queued batches until Close, and puts a lazy
// partition no one reads to sleep.
func (p *Partition) maintain() {
	defer close(p.done)
	var idle <-chan time.Time
	if p.opts.Scan != nil {
		// A check a second at most (the clock may be a test's), and
		// four in an Idle.
		t := time.NewTicker(min(max(p.opts.Idle/4, time.Millisecond), time.Second))
		defer t.Stop()
		idle = t.C
	}
	for {
		select {
		case <-p.stop:
			return
		case <-idle:
			p.sleepIfIdle()
			continue
		case <-p.wake:
		}
		p.qmu.Lock()
		q := p.queue
		p.queue = nil
		p.qmu.Unlock()
		for _, d := range q {
			p.apply(d)
		}
	}
}

// apply gives the shown records of a durable batch the next offsets and
// takes up a reservation it carries.
func (p *Partition) apply(d durable) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := max(d.ts, p.lastTS)
	p.lastTS = ts
	for _, r := range d.recs {
		if record.IsOffsetsTopicKey(r.Key) {
			if o, err := record.DecodeOffsetsTopic(r.Value); err == nil {
				p.limit = max(p.limit, o.Reserved)
			}
			continue
		}
		if !shown(r.Key) {
			continue
		}
		if !p.awake {
			p.next++
			continue
		}
		var k string
		if off, ok := p.index[string(r.Key)]; ok {
			// Superseded: its entry dies, and its key (the same bytes)
			// serves the new one, so that a key is allocated once.
			k = p.kill(p.search(off), false)
		} else {
			k = string(r.Key)
		}
		if r.Value == nil {
			p.tombs++
		}
		p.index[k] = p.next
		p.entries = append(p.entries, entry{off: p.next, ts: ts, key: k, value: r.Value})
		p.next++
	}
	if ts >= p.sweepAt {
		p.sweep(ts)
	}
	if p.dead > 1024 && p.dead > len(p.entries)/2 {
		p.compact()
	}
	p.applied++
	p.advance()
}

// advance moves the high watermark up to the next offset as far as the
// durable reservation allows, and wakes the waiting fetches. The caller
// holds mu.
func (p *Partition) advance() {
	if hw := min(p.next, p.limit); hw > p.hw {
		p.hw = hw
		close(p.notify)
		p.notify = make(chan struct{})
	}
}

// awaken is where every read starts: it notes the read and, if the
// partition is lazy and asleep, wakes it. Awake, it holds the shard's
// records: read from the store, they are shown again from the next
// offset on, as a load shows them (a compacted prefix above every offset
// shown before), and awaken returns how many, for the caller to reserve
// (reserve) once it has let mu go. The caller holds mu.
//
// The scan may see the records of a batch the store has made durable
// and Durable has not handed over yet. That batch is applied after
// the prefix, as usual: its records appear again, and the last record
// of every key is still its current state.
func (p *Partition) awaken() (int64, error) {
	p.lastRead = p.opts.Now()
	if p.awake {
		return 0, nil
	}
	var loaded []entry
	err := p.opts.Scan(func(k, v []byte) error {
		if shown(k) {
			loaded = append(loaded, entry{key: string(k), value: bytes.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("shard %d: reading its records: %w", p.shard, err)
	}
	ts := max(p.lastRead.UnixMilli(), p.lastTS)
	p.lastTS = ts
	p.index = make(map[string]int64, len(loaded))
	for i := range loaded {
		loaded[i].off, loaded[i].ts = p.next+int64(i), ts
		p.index[loaded[i].key] = loaded[i].off
	}
	p.entries = loaded
	p.next += int64(len(loaded))
	p.dead, p.tombs = 0, 0
	p.sweepAt = ts + p.retention
	p.awake = true
	p.wakes++
	p.advance()
	return int64(len(loaded)), nil
}

// reserve asks the shard to reserve offsets for the n records awaken
// showed again. The caller does not hold mu.
func (p *Partition) reserve(n int64) {
	if n > 0 && p.opts.Reserve != nil {
		p.opts.Reserve(n)
	}
}

// sleepIfIdle drops a lazy partition's records once no one has read
// them for Idle: from then on it counts offsets, and the next reader
// wakes it.
func (p *Partition) sleepIfIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.awake || p.opts.Scan == nil || p.opts.Now().Sub(p.lastRead) < p.opts.Idle {
		return
	}
	p.awake = false
	p.entries, p.index = nil, nil
	p.dead, p.tombs = 0, 0
}

// kill marks entries[i] dead, because a later record has its key or it
// is a tombstone past its retention (forget: its key leaves the index
// too), and returns its key. The caller holds mu.
func (p *Partition) kill(i int, forget bool) string {
	e := &p.entries[i]
	k := e.key
	if e.value == nil {
		p.tombs--
	}
	if forget {
		delete(p.index, k)
	}
	e.key, e.value = "", nil
	p.dead++
	return k
}

// sweep drops the tombstones older than the retention. The caller holds
// mu.
func (p *Partition) sweep(now int64) {
	p.sweepAt = now + max(p.retention/4, 1000)
	if p.tombs == 0 {
		return
	}
	for i := range p.entries {
		e := &p.entries[i]
		if e.ts > now-p.retention {
			break // timestamps ascend
		}
		if e.key != "" && e.value == nil {
			p.kill(i, true)
		}
	}
}

// compact drops the dead entries, in place: the index holds offsets,
// not positions, so it does not change. The caller holds mu.
func (p *Partition) compact() {
	live := p.entries[:0]
	for _, e := range p.entries {
		if e.key != "" {
			live = append(live, e)
		}
	}
	clear(p.entries[len(live):]) // drop the dead values' references
	if cap(live) > 4*len(live)+1024 {
		live = append([]entry(nil), live...) // most of it died: give the room back
	}
	p.entries, p.dead = live, 0
}

// ReadResult is what a fetch gets from the partition.
type ReadResult struct {
	// Batches are whole record batches holding the live records from the
	// offset asked for on; nil at the high watermark.
	Batches       []byte
	LogStart      int64
	HighWatermark int64
}

// batchRecords caps the records of one batch a read returns, so that a
// reader that stops part way through a response re-reads little.
const batchRecords = 500

// Read returns the records from offset on, in batches of at most
// maxBytes in all, or one record beyond that if atLeastOne and none fits
// (KIP-74). The log start is always 0: offsets below the first record
// were compacted away, as in a Kafka compacted topic, and a read there
// starts at the next record.
func (p *Partition) Read(offset int64, maxBytes int, atLeastOne bool) (ReadResult, error) {
	p.mu.Lock()
	res := ReadResult{HighWatermark: p.hw}
	if p.closed {
		p.mu.Unlock()
		return res, ErrClosed
	}
	if offset < 0 || offset > p.hw {
		p.mu.Unlock()
		return res, ErrOffsetOutOfRange
	}
	woke, err := p.awaken()
	if err != nil {
		p.mu.Unlock()
		return res, err
	}
	res.HighWatermark = p.hw
	var picked []entry
	size := 0
	for i := p.search(offset); i < len(p.entries) && p.entries[i].off < p.hw; i++ {
		e := p.entries[i]
		if e.key == "" {
			continue
		}
		n := recordSize(len(e.key), len(e.value))
		if size+n > maxBytes && (len(picked) > 0 || !atLeastOne) {
			break
		}
		size += n
		picked = append(picked, e)
	}
	p.mu.Unlock()
	p.reserve(woke)
	// Translate outside the lock: an entry's key and value never change.
	var batch []recbatch.Record
	for _, e := range picked {
		k, v, _, err := Translate([]byte(e.key), e.value)
		if err != nil {
			return res, fmt.Errorf("shard %d offset %d: %w", p.shard, e.off, err)
		}
		batch = append(batch, recbatch.Record{Offset: e.off, Timestamp: e.ts, Key: k, Value: v})
		if len(batch) == batchRecords {
			res.Batches = recbatch.Append(res.Batches, batch)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		res.Batches = recbatch.Append(res.Batches, batch)
	}
	return res, nil
}

// Touch notes a reader's arrival without a read (ListOffsets): a lazy
// partition asleep wakes, so that the offsets it answers next count
// the records it shows.
func (p *Partition) Touch() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	woke, err := p.awaken()
	p.mu.Unlock()
	p.reserve(woke)
	return err
}

// search returns the position of the first entry at offset or above. The
// caller holds mu.
func (p *Partition) search(offset int64) int {
	return sort.Search(len(p.entries), func(i int) bool { return p.entries[i].off >= offset })
}

// Offsets returns the log start offset (always 0) and the high watermark.
func (p *Partition) Offsets() (logStart, highWatermark int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return 0, p.hw
}

// LeaderEpoch is the partition's leader epoch: always 0, as its records
// are the coordinator's and carry no epoch of their own.
func (p *Partition) LeaderEpoch() int32 { return 0 }

// EpochAt is the epoch an offset was written in: 0.
func (p *Partition) EpochAt(int64) int32 { return 0 }

// EndOffsetFor answers OffsetForLeaderEpoch: epoch 0 ends at the high
// watermark; any other is undefined (-1, -1), as Kafka's
// LeaderEpochFileCache answers an epoch above every one it has.
func (p *Partition) EndOffsetFor(epoch int32) (int32, int64) {
	if epoch != 0 {
		return -1, -1
	}
	_, hw := p.Offsets()
	return 0, hw
}

// Wait returns a channel closed when the high watermark next moves, or
// the partition closes. Take it before reading, so that a move between
// the read and the wait is not missed.
func (p *Partition) Wait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notify
}

// OffsetForTimestamp returns the first record whose timestamp is at or
// after ts (Unix ms), and that timestamp, as ListOffsets asks.
func (p *Partition) OffsetForTimestamp(ts int64) (offset, at int64, found bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, 0, false, ErrClosed
	}
	woke, err := p.awaken()
	if err == nil {
		offset, at, found = p.atOrAfter(ts)
	}
	p.mu.Unlock()
	p.reserve(woke)
	return offset, at, found, err
}

// MaxTimestamp returns the first record with the largest timestamp
// (ListOffsets' -3, KIP-734): timestamps ascend with offsets here, so it
// is the first record stamped as the last one shown.
func (p *Partition) MaxTimestamp() (offset, at int64, found bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, 0, false, ErrClosed
	}
	woke, err := p.awaken()
	if err == nil {
		i := p.search(p.hw) - 1
		for ; i >= 0 && p.entries[i].key == ""; i-- {
		}
		if i >= 0 {
			offset, at, found = p.atOrAfter(p.entries[i].ts)
		}
	}
	p.mu.Unlock()
	p.reserve(woke)
	return offset, at, found, err
}

// atOrAfter is the first live record shown stamped ts or later. The
// caller holds mu.
func (p *Partition) atOrAfter(ts int64) (offset, at int64, found bool) {
	i := sort.Search(len(p.entries), func(i int) bool { return p.entries[i].ts >= ts })
	for ; i < len(p.entries) && p.entries[i].off < p.hw; i++ {
		if e := p.entries[i]; e.key != "" {
			return e.off, e.ts, true
		}
	}
	return 0, 0, false
}

// Stats is what the partition holds, for tests and metrics.
type Stats struct {
	// Live records (tombstones included), the records superseded but not
	// yet dropped, and the live tombstones.
	Live, Dead, Tombstones int
	// Next is the next offset; HighWatermark the first not shown.
	Next, HighWatermark int64
	// Applied counts the durable batches applied.
	Applied uint64
	// Awake: the partition holds its records (always, unless lazy);
	// Wakes counts how often a lazy one was woken by a reader.
	Awake bool
	Wakes uint64
}

// Stats returns what the partition holds now.
func (p *Partition) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Live: len(p.entries) - p.dead, Dead: p.dead, Tombstones: p.tombs, Next: p.next, HighWatermark: p.hw, Applied: p.applied, Awake: p.awake, Wakes: p.wakes}
}
