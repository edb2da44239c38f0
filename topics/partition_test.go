package topics

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAppendAssignsOffsetsAndKeepsBytes(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)

	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		on    bool
	}{
		{"none", kgo.NoCompression(), false},
		{"gzip", kgo.GzipCompression(), true},
		{"snappy", kgo.SnappyCompression(), true},
		{"lz4", kgo.Lz4Compression(), true},
		{"zstd", kgo.ZstdCompression(), true},
	}
	var sent [][]byte
	var want int64
	for i, c := range codecs {
		o := noProducer()
		o.records = simpleRecords(i+2, c.name, int64(1000*i))
		o.codec, o.compressed = c.codec, c.on
		b := makeBatch(t, o)
		if c.on && b[offAttributes+1]&7 == 0 {
			t.Fatalf("%s: batch is not compressed", c.name)
		}
		orig := bytes.Clone(b)
		sent = append(sent, orig)
		res := mustAppend(t, p, b)
		if res.BaseOffset != want || res.Duplicate {
			t.Fatalf("%s: BaseOffset %d (dup %v), want %d", c.name, res.BaseOffset, res.Duplicate, want)
		}
		want += int64(len(o.records))
		if res.End != want || res.LogStart != 0 {
			t.Fatalf("%s: End %d LogStart %d, want %d 0", c.name, res.End, res.LogStart, want)
		}
	}
	if ls, hw := p.Offsets(); ls != 0 || hw != want {
		t.Fatalf("Offsets = %d %d, want 0 %d", ls, hw, want)
	}

	res, err := p.Read(0, 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.HighWatermark != want || res.LogStart != 0 {
		t.Fatalf("Read offsets %d %d", res.LogStart, res.HighWatermark)
	}
	got := splitBatches(t, res.Batches)
	if len(got) != len(sent) {
		t.Fatalf("read %d batches, want %d", len(got), len(sent))
	}
	var base int64
	for i, g := range got {
		if g.Base != base {
			t.Fatalf("batch %d at %d, want %d", i, g.Base, base)
		}
		// Only the base offset and the leader epoch may differ.
		w := bytes.Clone(sent[i])
		binary.BigEndian.PutUint64(w[offBaseOffset:], uint64(base))
		binary.BigEndian.PutUint32(w[offLeaderEpoch:], 0)
		if !bytes.Equal(g.Raw, w) {
			t.Fatalf("batch %d (%s) bytes changed", i, codecs[i].name)
		}
		if !sameRecords(g.Records, simpleRecords(i+2, codecs[i].name, int64(1000*i))) {
			t.Fatalf("batch %d records differ", i)
		}
		base += int64(len(g.Records))
	}
}

func TestReadSemantics(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	// Batches of 3 records: offsets 0-2, 3-5, 6-8, 9-11.
	var sizes []int
	for i := range 4 {
		b := plainBatch(t, 3, string(rune('a'+i)))
		sizes = append(sizes, len(b))
		mustAppend(t, p, b)
	}

	// Any offset inside a batch returns from that batch's start.
	for off := int64(0); off < 12; off++ {
		res, err := p.Read(off, 1<<20, false)
		if err != nil {
			t.Fatal(err)
		}
		bs := splitBatches(t, res.Batches)
		if len(bs) == 0 || bs[0].Base != off/3*3 {
			t.Fatalf("Read(%d) starts at %v, want %d", off, bs, off/3*3)
		}
		if len(bs) != int(4-off/3) {
			t.Fatalf("Read(%d) got %d batches", off, len(bs))
		}
	}

	// maxBytes admits whole batches only.
	res, err := p.Read(0, sizes[0]+sizes[1]+sizes[2]-1, false)
	if err != nil {
		t.Fatal(err)
	}
	if bs := splitBatches(t, res.Batches); len(bs) != 2 {
		t.Fatalf("maxBytes just short of 3 batches returned %d", len(bs))
	}
	res, _ = p.Read(0, sizes[0]+sizes[1], false)
	if bs := splitBatches(t, res.Batches); len(bs) != 2 {
		t.Fatalf("maxBytes of exactly 2 batches returned %d", len(bs))
	}

	// Smaller than one batch: nothing, unless atLeastOne (KIP-74).
	res, err = p.Read(4, 10, false)
	if err != nil || len(res.Batches) != 0 {
		t.Fatalf("small maxBytes: %d bytes, %v", len(res.Batches), err)
	}
	res, err = p.Read(4, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	if bs := splitBatches(t, res.Batches); len(bs) != 1 || bs[0].Base != 3 {
		t.Fatalf("atLeastOne returned %+v", bs)
	}
	res, _ = p.Read(4, 0, true)
	if bs := splitBatches(t, res.Batches); len(bs) != 1 || bs[0].Base != 3 {
		t.Fatalf("atLeastOne with maxBytes 0 returned %d batches", len(bs))
	}

	// At the end: empty, not an error.
	res, err = p.Read(12, 1<<20, true)
	if err != nil || len(res.Batches) != 0 || res.HighWatermark != 12 {
		t.Fatalf("Read at end: %d bytes, hw %d, %v", len(res.Batches), res.HighWatermark, err)
	}
	// Past the end or negative: out of range.
	for _, off := range []int64{13, 1000, -1} {
		if _, err := p.Read(off, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(%d) = %v, want ErrOffsetOutOfRange", off, err)
		}
	}
}

func TestReadEmptyPartition(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	res, err := p.Read(0, 100, true)
	if err != nil || len(res.Batches) != 0 || res.HighWatermark != 0 {
		t.Fatalf("empty read: %+v %v", res, err)
	}
	if _, err := p.Read(1, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(1) on empty = %v", err)
	}
}

func TestAppendValidation(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	good := func() []byte { return plainBatch(t, 3, "x") }

	cases := []struct {
		name string
		b    func() []byte
		max  int
		want error
	}{
		{"bad crc", func() []byte {
			b := good()
			b[len(b)-1] ^= 0xff
			return b
		}, 0, ErrCorrupt},
		{"bad crc field", func() []byte {
			b := good()
			b[offCRC] ^= 1
			return b
		}, 0, ErrCorrupt},
		{"magic 1", func() []byte {
			b := good()
			b[offMagic] = 1
			return b
		}, 0, ErrMagic},
		{"magic 0", func() []byte {
			b := good()
			b[offMagic] = 0
			return b
		}, 0, ErrMagic},
		{"real v1 message set", func() []byte {
			m := kmsg.MessageV1{Magic: 1, Key: []byte("key"), Value: bytes.Repeat([]byte("v"), 100)}
			body := m.AppendTo(nil)
			m.MessageSize = int32(len(body) - 12)
			return m.AppendTo(nil)
		}, 0, ErrMagic},
		{"small v1 message set", func() []byte {
			m := kmsg.MessageV1{Magic: 1, Key: []byte("k"), Value: []byte("v")}
			body := m.AppendTo(nil)
			m.MessageSize = int32(len(body) - 12)
			return m.AppendTo(nil)
		}, 0, ErrMagic},
		{"two batches", func() []byte { return append(good(), good()...) }, 0, ErrInvalidRecord},
		{"trailing byte", func() []byte { return append(good(), 0) }, 0, ErrInvalidRecord},
		{"truncated", func() []byte { b := good(); return b[:len(b)-1] }, 0, ErrCorrupt},
		{"truncated header", func() []byte { return good()[:40] }, 0, ErrCorrupt},
		{"empty", func() []byte { return nil }, 0, ErrCorrupt},
		{"length too small", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offBatchLength:], 10)
			return b
		}, 0, ErrCorrupt},
		{"negative length", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offBatchLength:], 0xffffffff)
			return b
		}, 0, ErrCorrupt},
		{"too large", good, 50 + batchHeaderSize, ErrMessageTooLarge},
		{"producer without a sequence", func() []byte {
			return idemBatch(t, 9, 0, -1, 2, "noseq")
		}, 0, ErrInvalidRecord},
		{"producer with a negative sequence", func() []byte {
			return idemBatch(t, 9, 0, -5, 2, "noseq")
		}, 0, ErrInvalidRecord},
		{"control", func() []byte {
			o := noProducer()
			o.control = true
			o.records = simpleRecords(1, "c", 1)
			return makeBatch(t, o)
		}, 0, ErrInvalidRecord},
		{"zero records", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offNumRecords:], 0)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xffffffff)
			fixCRC(b)
			return b
		}, 0, ErrCorrupt},
		{"zero records, delta 0", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offNumRecords:], 0)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0)
			fixCRC(b)
			return b
		}, 0, ErrInvalidRecord},
		{"last offset delta mismatch", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 5)
			fixCRC(b)
			return b
		}, 0, ErrInvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.Append(c.b(), c.max)
			if !errors.Is(err, c.want) {
				t.Fatalf("Append = %v, want %v", err, c.want)
			}
		})
	}
	// Nothing was written.
	if _, hw := p.Offsets(); hw != 0 {
		t.Fatalf("high watermark %d after refused appends", hw)
	}
	for _, f := range segFiles(t, p) {
		if n := fileSize(t, f); n != 0 {
			t.Fatalf("%s has %d bytes after refused appends", f, n)
		}
	}
	// A batch at exactly the limit is accepted.
	b := good()
	if _, err := p.Append(b, len(b)); err != nil {
		t.Fatalf("batch at the limit: %v", err)
	}
}

func TestMaxMessageBytesConfig(t *testing.T) {
	e := newEnv(t)
	tp := e.create("t", 1, map[string]string{"max.message.bytes": "200"})
	if tp.MaxBatchBytes() != 200 {
		t.Fatalf("MaxBatchBytes %d", tp.MaxBatchBytes())
	}
	p := tp.Partitions[0]
	if _, err := p.Append(plainBatch(t, 20, "big"), tp.MaxBatchBytes()); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("big batch: %v", err)
	}
	if _, err := p.Append(plainBatch(t, 1, "small"), tp.MaxBatchBytes()); err != nil {
		t.Fatalf("small batch: %v", err)
	}
	def := e.create("d", 1, nil)
	if v, isDef := def.Config("max.message.bytes"); !isDef || v != "1048588" || def.MaxBatchBytes() != 1048588 {
		t.Fatalf("default max.message.bytes %q %v", v, isDef)
	}
	if v, isDef := tp.Config("max.message.bytes"); isDef || v != "200" {
		t.Fatalf("explicit max.message.bytes %q %v", v, isDef)
	}
}

func TestIdempotentDuplicates(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	const pid = 7
	var batches [][]byte
	var offsets []int64
	seq := int32(0)
	for i := range 6 {
		n := i + 1
		b := idemBatch(t, pid, 0, seq, n, "b")
		batches = append(batches, bytes.Clone(b))
		res := mustAppend(t, p, b)
		offsets = append(offsets, res.BaseOffset)
		seq += int32(n)
	}
	_, end := p.Offsets()
	seg := segFiles(t, p)[0]
	size := fileSize(t, seg)

	// The last five are recognised, in any order.
	for _, i := range []int{5, 1, 3, 2, 4} {
		res, err := p.Append(bytes.Clone(batches[i]), 0)
		if err != nil {
			t.Fatalf("retry of batch %d: %v", i, err)
		}
		if !res.Duplicate || res.BaseOffset != offsets[i] || res.End != end {
			t.Fatalf("retry of batch %d = %+v, want duplicate at %d end %d", i, res, offsets[i], end)
		}
	}
	// The sixth-newest is out of the window: Kafka calls it out of order.
	if _, err := p.Append(bytes.Clone(batches[0]), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry of batch 0 = %v, want ErrOutOfOrderSequence", err)
	}
	if _, hw := p.Offsets(); hw != end {
		t.Fatalf("duplicates moved the end from %d to %d", end, hw)
	}
	if got := fileSize(t, seg); got != size {
		t.Fatalf("duplicates wrote %d bytes", got-size)
	}
	// A batch with the same first sequence but a different length is not a
	// duplicate.
	if _, err := p.Append(idemBatch(t, pid, 0, seq-6, 2, "x"), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("overlapping batch = %v", err)
	}

	// Gaps are refused; the right next sequence goes through.
	if _, err := p.Append(idemBatch(t, pid, 0, seq+1, 1, "gap"), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap = %v, want ErrOutOfOrderSequence", err)
	}
	res, err := p.Append(idemBatch(t, pid, 0, seq, 2, "next"), 0)
	if err != nil || res.Duplicate || res.BaseOffset != end {
		t.Fatalf("next batch = %+v %v", res, err)
	}
	// Another producer is independent, and an unknown producer may start
	// at any sequence.
	if _, err := p.Append(idemBatch(t, 8, 3, 42, 1, "other"), 0); err != nil {
		t.Fatalf("unknown producer at seq 42: %v", err)
	}
	if _, err := p.Append(idemBatch(t, 8, 3, 43, 1, "other2"), 0); err != nil {
		t.Fatalf("second batch of producer 8: %v", err)
	}
	// Producer id 0 is a real producer.
	if _, err := p.Append(idemBatch(t, 0, 0, 0, 1, "zero"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(idemBatch(t, 0, 0, 5, 1, "zero"), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("producer 0 gap = %v", err)
	}
	// Batches without a producer are never deduplicated.
	b := plainBatch(t, 1, "plain")
	r1 := mustAppend(t, p, bytes.Clone(b))
	r2 := mustAppend(t, p, bytes.Clone(b))
	if r1.Duplicate || r2.Duplicate || r2.BaseOffset != r1.BaseOffset+1 {
		t.Fatalf("plain batches: %+v %+v", r1, r2)
	}
}

func TestIdempotentEpochs(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	const pid = 3
	mustAppend(t, p, idemBatch(t, pid, 5, 0, 2, "a"))
	mustAppend(t, p, idemBatch(t, pid, 5, 2, 2, "b"))

	if _, err := p.Append(idemBatch(t, pid, 4, 4, 1, "old"), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch = %v", err)
	}
	// A retry under an old epoch is fenced too.
	if _, err := p.Append(idemBatch(t, pid, 4, 0, 2, "a"), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch retry = %v", err)
	}
	// A new epoch must start at sequence 0.
	if _, err := p.Append(idemBatch(t, pid, 6, 4, 1, "new"), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at seq 4 = %v", err)
	}
	res, err := p.Append(idemBatch(t, pid, 6, 0, 1, "new"), 0)
	if err != nil || res.Duplicate {
		t.Fatalf("new epoch at 0 = %+v %v", res, err)
	}
	// Now epoch 5 is fenced and 6's sequence continues.
	if _, err := p.Append(idemBatch(t, pid, 5, 4, 1, "late"), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("fenced epoch = %v", err)
	}
	// Epoch 5's batches are forgotten: their retry is fenced, not a
	// duplicate.
	if _, err := p.Append(idemBatch(t, pid, 6, 1, 1, "more"), 0); err != nil {
		t.Fatal(err)
	}
	// Duplicate under the current epoch.
	res2, err := p.Append(idemBatch(t, pid, 6, 0, 1, "new"), 0)
	if err != nil || !res2.Duplicate || res2.BaseOffset != res.BaseOffset {
		t.Fatalf("duplicate in epoch 6 = %+v %v", res2, err)
	}
}

func TestIdempotentSequenceWrap(t *testing.T) {
	cases := []struct {
		name  string
		first int32
		n     int
		next  int32
	}{
		{"ends at MaxInt32", math.MaxInt32 - 2, 3, 0},
		{"crosses MaxInt32", math.MaxInt32 - 1, 3, 1},
		{"starts at MaxInt32", math.MaxInt32, 4, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.create("t", 1, nil)
			p := e.part("t", 0)
			const pid = 11
			wrap := idemBatch(t, pid, 0, c.first, c.n, "w")
			r0 := mustAppend(t, p, bytes.Clone(wrap))

			check := func(when string) {
				t.Helper()
				// The retry of the wrapping batch is a duplicate.
				res, err := p.Append(bytes.Clone(wrap), 0)
				if err != nil || !res.Duplicate || res.BaseOffset != r0.BaseOffset {
					t.Fatalf("%s: retry of wrapping batch = %+v %v", when, res, err)
				}
				// A sequence that is not next is refused.
				if _, err := p.Append(idemBatch(t, pid, 0, c.next+1, 1, "bad"), 0); !errors.Is(err, ErrOutOfOrderSequence) {
					t.Fatalf("%s: seq %d after wrap = %v", when, c.next+1, err)
				}
			}
			check("live")
			e.reopen()
			p = e.part("t", 0)
			check("after reopen")

			res, err := p.Append(idemBatch(t, pid, 0, c.next, 2, "after"), 0)
			if err != nil || res.Duplicate {
				t.Fatalf("seq %d after wrap = %+v %v", c.next, res, err)
			}
			if _, err := p.Append(idemBatch(t, pid, 0, c.next+2, 1, "after2"), 0); err != nil {
				t.Fatalf("seq %d = %v", c.next+2, err)
			}
		})
	}
}

func TestIdempotenceSurvivesReopen(t *testing.T) {
	e := newEnv(t)
	e.create("t", 2, nil)
	p := e.part("t", 1)
	const pid = 21
	var sent [][]byte
	var offs []int64
	seq := int32(0)
	for i := range 7 {
		b := idemBatch(t, pid, 2, seq, 3, string(rune('a'+i)))
		sent = append(sent, bytes.Clone(b))
		offs = append(offs, mustAppend(t, p, b).BaseOffset)
		seq += 3
	}
	e.reopen()
	p = e.part("t", 1)
	_, end := p.Offsets()
	for i := 2; i < 7; i++ {
		res, err := p.Append(bytes.Clone(sent[i]), 0)
		if err != nil || !res.Duplicate || res.BaseOffset != offs[i] {
			t.Fatalf("retry %d after reopen = %+v %v, want duplicate at %d", i, res, err, offs[i])
		}
	}
	if _, err := p.Append(bytes.Clone(sent[1]), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("old retry after reopen = %v", err)
	}
	if _, err := p.Append(idemBatch(t, pid, 1, seq, 1, "old"), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch after reopen = %v", err)
	}
	if _, err := p.Append(idemBatch(t, pid, 2, seq+1, 1, "gap"), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after reopen = %v", err)
	}
	res, err := p.Append(idemBatch(t, pid, 2, seq, 1, "next"), 0)
	if err != nil || res.BaseOffset != end {
		t.Fatalf("next after reopen = %+v %v", res, err)
	}
	// The other partition knows nothing of this producer.
	if _, err := e.part("t", 0).Append(idemBatch(t, pid, 2, 100, 1, "p0"), 0); err != nil {
		t.Fatal(err)
	}
}

func TestWaitClosedByAppend(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	ch := p.Wait()
	select {
	case <-ch:
		t.Fatal("Wait channel closed before any append")
	default:
	}
	if p.Wait() != ch {
		t.Fatal("Wait returned a different channel without an append")
	}
	// A refused append does not wake waiters.
	if _, err := p.Append([]byte("junk"), 0); err == nil {
		t.Fatal("junk appended")
	}
	select {
	case <-ch:
		t.Fatal("Wait channel closed by a refused append")
	default:
	}

	done := make(chan struct{})
	go func() {
		<-ch
		close(done)
	}()
	mustAppend(t, p, plainBatch(t, 1, "a"))
	select {
	case <-ch:
	default:
		t.Fatal("Wait channel not closed by an append")
	}
	<-done
	ch2 := p.Wait()
	select {
	case <-ch2:
		t.Fatal("new Wait channel already closed")
	default:
	}
	// A duplicate writes nothing and does not wake waiters.
	b := idemBatch(t, 1, 0, 0, 1, "d")
	mustAppend(t, p, bytes.Clone(b))
	ch3 := p.Wait()
	if res := mustAppend(t, p, b); !res.Duplicate {
		t.Fatal("not a duplicate")
	}
	select {
	case <-ch3:
		t.Fatal("Wait channel closed by a duplicate")
	default:
	}
	// Deleting the topic wakes waiters.
	if err := e.log.Delete("t"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch3:
	default:
		t.Fatal("Wait channel not closed by Delete")
	}
}

func TestDeletedPartition(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	res := mustAppend(t, p, plainBatch(t, 2, "a"))
	if err := e.log.Delete("t"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(plainBatch(t, 1, "b"), 0); !errors.Is(err, ErrDeleted) {
		t.Fatalf("Append after delete = %v", err)
	}
	if _, err := p.Read(0, 100, true); !errors.Is(err, ErrDeleted) {
		t.Fatalf("Read after delete = %v", err)
	}
	// Sync of what was already durable at close is fine; beyond, deleted.
	if err := p.Sync(res.End + 1); !errors.Is(err, ErrDeleted) {
		t.Fatalf("Sync after delete = %v", err)
	}
}
