package topics

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/cohort-dev/cohort/store/pebble"
)

// testRecord is one record as a test builds and reads it back.
type testRecord struct {
	Key, Value []byte
	TS         int64
}

// batchOpts describes a record batch to build.
type batchOpts struct {
	records       []testRecord
	codec         kgo.CompressionCodec // zero value: none
	compressed    bool                 // use codec
	producerID    int64                // -1 for none; 0 is a valid producer
	epoch         int16
	seq           int32
	transactional bool
	control       bool
}

func noProducer() batchOpts { return batchOpts{producerID: -1, epoch: -1, seq: -1} }

// simpleRecords returns n records with distinct keys and values and
// timestamps ts, ts+1, ...
func simpleRecords(n int, tag string, ts int64) []testRecord {
	rs := make([]testRecord, n)
	for i := range rs {
		rs[i] = testRecord{
			Key:   fmt.Appendf(nil, "k-%s-%d", tag, i),
			Value: fmt.Appendf(nil, "v-%s-%d", tag, i),
			TS:    ts + int64(i),
		}
	}
	return rs
}

// encodeRecord encodes one v2 record with the given deltas.
func encodeRecord(r testRecord, offsetDelta int32, tsDelta int64) []byte {
	rec := kmsg.Record{
		TimestampDelta64: tsDelta,
		OffsetDelta:      offsetDelta,
		Key:              r.Key,
		Value:            r.Value,
	}
	body := rec.AppendTo(nil)[1:] // Length 0 encodes as one varint byte
	rec.Length = int32(len(body))
	return rec.AppendTo(nil)
}

// makeBatch builds one RecordBatch v2, CRC included, as a producer would
// send it (base offset 0, leader epoch -1).
func makeBatch(t testing.TB, o batchOpts) []byte {
	t.Helper()
	if len(o.records) == 0 {
		t.Fatal("makeBatch: no records")
	}
	firstTS, maxTS := o.records[0].TS, o.records[0].TS
	for _, r := range o.records {
		firstTS = min(firstTS, r.TS)
		maxTS = max(maxTS, r.TS)
	}
	var raw []byte
	for i, r := range o.records {
		raw = append(raw, encodeRecord(r, int32(i), r.TS-firstTS)...)
	}
	var attrs int16
	if o.compressed {
		c, err := compressorFor(o.codec)
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			out, codec := c.Compress(new(bytes.Buffer), raw)
			if codec < 0 {
				t.Fatalf("compress: codec error")
			}
			raw = bytes.Clone(out)
			attrs |= int16(codec)
		}
	}
	if o.transactional {
		attrs |= 0x10
	}
	if o.control {
		attrs |= 0x20
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(o.records) - 1),
		FirstTimestamp:       firstTS,
		MaxTimestamp:         maxTS,
		ProducerID:           o.producerID,
		ProducerEpoch:        o.epoch,
		FirstSequence:        o.seq,
		NumRecords:           int32(len(o.records)),
		Records:              raw,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	fixCRC(b)
	return b
}

var (
	compressorsMu sync.Mutex
	compressors   = map[kgo.CompressionCodec]kgo.Compressor{}
)

// compressorFor caches compressors: a zstd encoder is costly to make.
func compressorFor(codec kgo.CompressionCodec) (kgo.Compressor, error) {
	compressorsMu.Lock()
	defer compressorsMu.Unlock()
	if c, ok := compressors[codec]; ok {
		return c, nil
	}
	c, err := kgo.DefaultCompressor(codec)
	if err != nil {
		return nil, err
	}
	compressors[codec] = c
	return c, nil
}

// fixCRC recomputes the CRC of the batch in b after a test edits it.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}

// plainBatch is an uncompressed batch of n records without a producer.
func plainBatch(t testing.TB, n int, tag string) []byte {
	o := noProducer()
	o.records = simpleRecords(n, tag, 1000)
	return makeBatch(t, o)
}

// idemBatch is an idempotent producer's batch of n records.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, tag string) []byte {
	o := batchOpts{producerID: pid, epoch: epoch, seq: seq, records: simpleRecords(n, tag, 1000)}
	return makeBatch(t, o)
}

// readBatch is one batch as read back from the log.
type readBatch struct {
	Base    int64
	Raw     []byte
	Header  kmsg.RecordBatch
	Records []testRecord
}

var testDecompressor = kgo.DefaultDecompressor()

// splitBatches parses concatenated batches, checking CRCs and decoding the
// records (decompressing them).
func splitBatches(t testing.TB, b []byte) []readBatch {
	t.Helper()
	var out []readBatch
	for len(b) > 0 {
		if len(b) < batchHeaderSize {
			t.Fatalf("trailing %d bytes are not a batch", len(b))
		}
		size := int(binary.BigEndian.Uint32(b[8:])) + 12
		if size > len(b) {
			t.Fatalf("batch of %d bytes in %d", size, len(b))
		}
		raw := b[:size]
		b = b[size:]
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			t.Fatalf("read batch: %v", err)
		}
		if got := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)); got != uint32(rb.CRC) {
			t.Fatalf("batch at %d: bad CRC", rb.FirstOffset)
		}
		data := rb.Records
		if codec := kgo.CompressionCodecType(rb.Attributes & 7); codec != kgo.CodecNone {
			var err error
			if data, err = testDecompressor.Decompress(data, codec); err != nil {
				t.Fatalf("decompress: %v", err)
			}
			data = bytes.Clone(data)
		}
		rbk := readBatch{Base: rb.FirstOffset, Raw: raw, Header: rb}
		for i := int32(0); i < rb.NumRecords; i++ {
			l, n := binary.Varint(data)
			if n <= 0 || int(l) > len(data)-n {
				t.Fatalf("bad record length")
			}
			var r kmsg.Record
			if err := r.ReadFrom(data[:n+int(l)]); err != nil {
				t.Fatalf("read record: %v", err)
			}
			data = data[n+int(l):]
			if r.OffsetDelta != i {
				t.Fatalf("record %d has offset delta %d", i, r.OffsetDelta)
			}
			rbk.Records = append(rbk.Records, testRecord{Key: r.Key, Value: r.Value, TS: rb.FirstTimestamp + r.TimestampDelta64})
		}
		if len(data) != 0 {
			t.Fatalf("%d bytes after the records", len(data))
		}
		out = append(out, rbk)
	}
	return out
}

// readAll reads every batch of p from offset from on, across segments.
func readAll(t testing.TB, p *Partition, from int64) []readBatch {
	t.Helper()
	var out []readBatch
	for {
		res, err := p.Read(from, 1<<20, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		if len(res.Batches) == 0 {
			if from != res.HighWatermark {
				t.Fatalf("empty read at %d below the high watermark %d", from, res.HighWatermark)
			}
			return out
		}
		bs := splitBatches(t, res.Batches)
		out = append(out, bs...)
		last := bs[len(bs)-1]
		from = last.Base + int64(last.Header.LastOffsetDelta) + 1
	}
}

// memStore is an in-memory store.Store whose writes can be made to fail,
// through the store and through write handles (the global unit's).
type memStore struct {
	*memstore.Store
	failPuts atomic.Bool
}

func newMemStore() *memStore { return &memStore{Store: memstore.New(memstore.Options{})} }

var errInjected = errors.New("injected store failure")

func (s *memStore) Apply(b *store.Batch) error {
	if s.failPuts.Load() {
		return errInjected
	}
	return s.Store.Apply(b)
}

func (s *memStore) Acquire(scope []byte) (store.Handle, error) {
	h, err := s.Store.Acquire(scope)
	if err != nil {
		return nil, err
	}
	return &failingHandle{Handle: h, s: s}, nil
}

type failingHandle struct {
	store.Handle
	s *memStore
}

func (h *failingHandle) Apply(b *store.Batch) error {
	if h.s.failPuts.Load() {
		return errInjected
	}
	return h.Handle.Apply(b)
}

func (h *failingHandle) ApplyAsync(b *store.Batch) (func() error, error) {
	if h.s.failPuts.Load() {
		return nil, errInjected
	}
	return h.Handle.ApplyAsync(b)
}

// env is a Log on a Pebble store in a temporary directory, reopenable.
type env struct {
	t   testing.TB
	dir string
	st  store.Store
	log *Log
	// clock and every, if set, are the next open's Clock and
	// RetentionCheckInterval.
	clock coordinator.Clock
	every time.Duration
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, st: st}
	t.Cleanup(func() {
		if e.log != nil {
			e.log.Close()
		}
		st.Close()
	})
	e.open()
	return e
}

func (e *env) dataDir() string { return filepath.Join(e.dir, "topics") }

func (e *env) open() {
	e.t.Helper()
	l, err := Open(Config{Dir: e.dataDir(), Store: e.st, Clock: e.clock, RetentionCheckInterval: e.every})
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.log = l
}

func (e *env) close() {
	e.t.Helper()
	if err := e.log.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.log = nil
}

func (e *env) reopen() {
	e.t.Helper()
	e.close()
	e.open()
}

func (e *env) create(name string, partitions int32, configs map[string]string) *Topic {
	e.t.Helper()
	tp, err := e.log.Create(name, partitions, configs, false)
	if err != nil {
		e.t.Fatalf("Create(%s): %v", name, err)
	}
	return tp
}

// part returns partition i of the named topic as the current Log has it.
func (e *env) part(name string, i int) *Partition {
	e.t.Helper()
	tp := e.log.Topic(name)
	if tp == nil {
		e.t.Fatalf("no topic %s", name)
		return nil
	}
	return tp.Partitions[i]
}

// segFiles lists a partition's segment files, sorted.
func segFiles(t testing.TB, p *Partition) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join(p.dir, "*"+segmentSuffix))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(fs)
	return fs
}

func mustAppend(t testing.TB, p *Partition, b []byte) AppendResult {
	t.Helper()
	res, err := p.Append(b, 0)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func sameRecords(a, b []testRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Key, b[i].Key) || !bytes.Equal(a[i].Value, b[i].Value) || a[i].TS != b[i].TS {
			return false
		}
	}
	return true
}
