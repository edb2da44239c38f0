package offsetstopic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// got is one record a read returned, decoded.
type got struct {
	off, ts int64
	key     any
	value   any // nil: a tombstone
}

// decodeBatches parses every batch (checking its CRC and framing) and
// decodes every record with ReadKey and ReadValue.
func decodeBatches(t *testing.T, b []byte) []got {
	t.Helper()
	var out []got
	for len(b) > 0 {
		if len(b) < batchHeaderSize {
			t.Fatalf("%d bytes left, not a batch", len(b))
		}
		size := 12 + int(binary.BigEndian.Uint32(b[offLength:]))
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			t.Fatal(err)
		}
		if crc := crc32.Checksum(b[offAttributes:size], castagnoli); int32(crc) != rb.CRC {
			t.Fatalf("batch at %d: CRC %x, want %x", rb.FirstOffset, uint32(rb.CRC), crc)
		}
		if rb.Magic != 2 || rb.Attributes != 0 || rb.ProducerID != -1 {
			t.Fatalf("batch header %+v", rb)
		}
		recs := rb.Records
		last := int64(-1)
		for range rb.NumRecords {
			r := kbin.Reader{Src: recs}
			n := int(r.Varint())
			whole := recs[:len(recs)-len(r.Src)+n]
			recs = recs[len(whole):]
			var kr kmsg.Record
			if err := kr.ReadFrom(whole); err != nil {
				t.Fatal(err)
			}
			k, err := ReadKey(kr.Key)
			if err != nil {
				t.Fatal(err)
			}
			v, err := ReadValue(k, kr.Value)
			if err != nil {
				t.Fatal(err)
			}
			last = rb.FirstOffset + int64(kr.OffsetDelta)
			out = append(out, got{off: last, ts: rb.FirstTimestamp + kr.TimestampDelta64, key: k, value: v})
		}
		if len(recs) != 0 || last != rb.FirstOffset+int64(rb.LastOffsetDelta) {
			t.Fatalf("batch at %d: %d bytes left over, last offset %d, want %d", rb.FirstOffset, len(recs), last, rb.FirstOffset+int64(rb.LastOffsetDelta))
		}
		b = b[size:]
	}
	return out
}

func offsetRec(group, topic string, p int32, offset int64) machine.Record {
	return machine.Record{
		Key:   record.OffsetKey{GroupKey: record.GroupKey{Shard: 0, Group: group}, Topic: topic, Partition: p}.Key(),
		Value: record.Offset{Offset: offset, LeaderEpoch: -1}.Encode(),
	}
}

// rig drives a Partition as the runtime and a group shard do: the
// shard's reservation policy (grouptype.Reserver) before every batch,
// written with it, Durable after.
type rig struct {
	t   *testing.T
	p   *Partition
	res grouptype.Reserver
	now time.Time
	// store is what a restart would load: the latest value of every key.
	store map[string][]byte
}

func newRig(t *testing.T, opts Options) *rig {
	r := &rig{t: t, now: time.UnixMilli(1_700_000_000_000), store: map[string][]byte{}}
	r.start(opts)
	return r
}

// start loads a fresh partition from the store, as a shard load does.
func (r *rig) start(opts Options) { r.startBlock(opts, ReserveBlock) }

func (r *rig) startBlock(opts Options, block int64) {
	r.p = NewPartition(0, opts)
	r.res = grouptype.Reserver{Block: block}
	r.t.Cleanup(r.p.Close)
	// The store's order: by key.
	keys := make([]string, 0, len(r.store))
	for k := range r.store {
		keys = append(keys, k)
	}
	sortStrings(keys)
	others := int64(0)
	for _, k := range keys {
		if err := r.p.Load([]byte(k), r.store[k]); err != nil {
			r.t.Fatal(err)
		}
		if record.IsOffsetsTopicKey([]byte(k)) {
			if err := r.res.Replay(r.store[k]); err != nil {
				r.t.Fatal(err)
			}
		} else {
			others++
		}
	}
	r.p.Loaded(r.now)
	r.res.Start(others)
	if rec, ok := r.reserve(0); ok {
		r.durable(rec) // the shard emits it first thing
	} else {
		r.t.Fatal("no reservation at load")
	}
}

// reserve is the shard's reservation for n more records, if one is due.
func (r *rig) reserve(n int) (machine.Record, bool) {
	at, ok := r.res.Next(n)
	return machine.Record{Key: record.OffsetsTopicKey{Shard: 0}.Key(), Value: record.OffsetsTopic{Reserved: at}.Encode()}, ok
}

// write hands recs to the store and the partition, as one durable batch.
func (r *rig) write(recs ...machine.Record) {
	if rec, ok := r.reserve(len(recs)); ok {
		recs = append(recs, rec)
	}
	r.durable(recs...)
}

// durable makes recs durable without asking for a reservation.
func (r *rig) durable(recs ...machine.Record) {
	for _, rec := range recs {
		if rec.Value == nil {
			delete(r.store, string(rec.Key))
		} else {
			r.store[string(rec.Key)] = rec.Value
		}
	}
	want := r.p.Stats().Applied + 1
	r.p.Durable(r.now, recs)
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.p.Stats().Applied < want {
		if time.Now().After(deadline) {
			r.t.Fatalf("%d batches applied, want %d", r.p.Stats().Applied, want)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (r *rig) read(from int64) []got {
	r.t.Helper()
	res, err := r.p.Read(from, 1<<30, true)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, hw := r.p.Offsets(); res.HighWatermark != hw || res.LogStart != 0 {
		r.t.Fatalf("read: hw %d log start %d, partition's hw %d", res.HighWatermark, res.LogStart, hw)
	}
	return decodeBatches(r.t, res.Batches)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func committed(g got) (group string, p int32, offset int64, tombstone bool) {
	k := g.key.(*kmsg.OffsetCommitKey)
	if g.value == nil {
		return k.Group, k.Partition, 0, true
	}
	return k.Group, k.Partition, g.value.(*kmsg.OffsetCommitValue).Offset, false
}

// TestPartitionCompacts: records take consecutive offsets as they become
// durable; a record superseded by a later one of its key is no longer
// read (a gap, as in a compacted topic), and a deletion reads as a
// tombstone.
func TestPartitionCompacts(t *testing.T) {
	r := newRig(t, Options{})
	r.write(offsetRec("g", "t", 0, 10), offsetRec("g", "t", 1, 20))
	r.write(offsetRec("g", "t", 0, 11))
	r.write(machine.Record{Key: offsetRec("g", "t", 1, 0).Key}) // deleted
	recs := r.read(0)
	var lines []string
	for _, g := range recs {
		group, p, off, tomb := committed(g)
		lines = append(lines, fmt.Sprintf("%d %s/%d=%d tomb=%v", g.off, group, p, off, tomb))
	}
	// Offsets 0 and 1 were g/0=10 and g/1=20, both superseded.
	want := []string{"2 g/0=11 tomb=false", "3 g/1=0 tomb=true"}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("read %v, want %v", lines, want)
	}
	if _, hw := r.p.Offsets(); hw != 4 {
		t.Errorf("high watermark %d, want 4", hw)
	}
	// From inside the gap: the next record.
	if got := r.read(1); len(got) != 2 || got[0].off != 2 {
		t.Errorf("read from 1: %+v", got)
	}
	if got := r.read(4); len(got) != 0 {
		t.Errorf("read at the high watermark: %+v", got)
	}
	if _, err := r.p.Read(5, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("read past the high watermark: %v", err)
	}
	if st := r.p.Stats(); st.Live != 2 || st.Dead != 2 || st.Tombstones != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestPartitionRestart: a partition loaded again starts above every
// offset the last one showed, with the state as a compacted prefix, and
// goes on from there; a reader resuming at its old offset reads on from
// the prefix, never backwards.
func TestPartitionRestart(t *testing.T) {
	r := newRig(t, Options{})
	for i := range 5 {
		r.write(offsetRec("g", "t", int32(i), int64(i)))
	}
	r.write(machine.Record{Key: offsetRec("g", "t", 4, 0).Key})
	_, oldHW := r.p.Offsets()
	r.p.Close()
	if _, err := r.p.Read(0, 1<<20, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}

	r.now = r.now.Add(time.Minute)
	r.start(Options{})
	_, hw := r.p.Offsets()
	if hw < oldHW+4 {
		t.Fatalf("high watermark after the restart %d, want at least %d + the 4 live records", hw, oldHW)
	}
	recs := r.read(oldHW) // a reader resuming where it was
	if len(recs) != 4 {
		t.Fatalf("the prefix holds %d records, want the 4 live ones: %+v", len(recs), recs)
	}
	for i, g := range recs {
		if g.off < oldHW {
			t.Errorf("offset %d is below the old high watermark %d", g.off, oldHW)
		}
		if _, p, off, tomb := committed(g); tomb || int64(p) != off || p != int32(i) {
			t.Errorf("record %d: partition %d offset %d tombstone %v", i, p, off, tomb)
		}
	}
	r.write(offsetRec("g", "t", 0, 100))
	last := r.read(hw)
	if len(last) != 1 || last[0].off != hw {
		t.Fatalf("after the prefix: %+v, want one record at %d", last, hw)
	}
	// Restarting again starts higher still, though the last
	// reservation was far from used: offsets skip, never repeat.
	_, hw2 := r.p.Offsets()
	r.p.Close()
	r.start(Options{})
	if recs := r.read(0); len(recs) == 0 || recs[0].off < hw2 {
		t.Fatalf("second restart: %+v, want every offset at or above %d", recs, hw2)
	}
}

// TestPartitionShowsOnlyReserved: records past the durable reservation
// wait for the one that covers them.
func TestPartitionShowsOnlyReserved(t *testing.T) {
	r := &rig{t: t, now: time.UnixMilli(1_700_000_000_000), store: map[string][]byte{}}
	r.startBlock(Options{}, 100) // the first reservation, at load: 100
	var recs []machine.Record
	for i := range 110 {
		recs = append(recs, offsetRec("g", "t", int32(i), 1))
	}
	rec, ok := r.reserve(len(recs))
	if !ok {
		t.Fatal("no reservation asked for 110 records")
	}
	r.durable(recs...) // the records land, their reservation not yet
	if _, hw := r.p.Offsets(); hw != 100 {
		t.Fatalf("high watermark %d, want the first reservation, 100", hw)
	}
	if got := r.read(0); len(got) != 100 {
		t.Fatalf("read %d records, want the 100 reserved", len(got))
	}
	r.durable(rec)
	if _, hw := r.p.Offsets(); hw != 110 {
		t.Fatalf("high watermark %d, want 110", hw)
	}
}

// TestPartitionReserveCadence: with records flowing, a reservation is
// asked for about once every half block.
func TestPartitionReserveCadence(t *testing.T) {
	res := grouptype.Reserver{Block: ReserveBlock}
	res.Start(0)
	asks := 0
	for range 4 * ReserveBlock / 1000 {
		if _, ok := res.Next(1000); ok {
			asks++
		}
	}
	// The first call asks (the load's); then one per half block.
	if asks < 8 || asks > 10 {
		t.Errorf("%d reservations over 4 blocks of records, want about 9", asks)
	}
}

// TestPartitionTombstoneRetention: a tombstone is dropped once older
// than the retention, when later records come.
func TestPartitionTombstoneRetention(t *testing.T) {
	r := newRig(t, Options{TombstoneRetention: time.Second})
	r.write(offsetRec("g", "t", 0, 1), offsetRec("g", "t", 1, 1))
	r.write(machine.Record{Key: offsetRec("g", "t", 0, 0).Key})
	if st := r.p.Stats(); st.Tombstones != 1 {
		t.Fatalf("stats %+v", st)
	}
	r.now = r.now.Add(2 * time.Second)
	r.write(offsetRec("g", "t", 2, 1))
	if st := r.p.Stats(); st.Tombstones != 0 {
		t.Fatalf("stats after the retention %+v", st)
	}
	for _, g := range r.read(0) {
		if _, _, _, tomb := committed(g); tomb {
			t.Errorf("tombstone at %d still read", g.off)
		}
	}
}

// TestPartitionTimestamps: ListOffsets' lookups. Timestamps never go
// backwards, even if the clock does.
func TestPartitionTimestamps(t *testing.T) {
	r := newRig(t, Options{})
	t0 := r.now.UnixMilli()
	r.now = r.now.Add(time.Second)
	r.write(offsetRec("g", "t", 0, 1)) // offset 0, t0+1s
	r.now = r.now.Add(time.Second)
	r.write(offsetRec("g", "t", 1, 1), offsetRec("g", "t", 2, 1)) // 1, 2 at t0+2s
	r.now = r.now.Add(-time.Hour)
	r.write(offsetRec("g", "t", 3, 1)) // 3, clock went back: t0+2s
	for _, tc := range []struct {
		ts       int64
		off, at  int64
		notFound bool
	}{
		{ts: t0, off: 0, at: t0 + 1000},
		{ts: t0 + 1500, off: 1, at: t0 + 2000},
		{ts: t0 + 3000, notFound: true},
	} {
		off, at, found, err := r.p.OffsetForTimestamp(tc.ts)
		if err != nil || found == tc.notFound || (found && (off != tc.off || at != tc.at)) {
			t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v, %v", tc.ts, off, at, found, err)
		}
	}
	if off, at, found, err := r.p.MaxTimestamp(); err != nil || !found || off != 1 || at != t0+2000 {
		t.Errorf("MaxTimestamp = %d, %d, %v, %v; want the first record of the latest time, 1", off, at, found, err)
	}
	recs := r.read(0)
	for i := 1; i < len(recs); i++ {
		if recs[i].ts < recs[i-1].ts {
			t.Errorf("timestamps go back at %d", recs[i].off)
		}
	}
}

// TestPartitionReadLimits: a read stops at maxBytes, yet returns one
// record when atLeastOne and none fits; batches hold at most
// batchRecords records.
func TestPartitionReadLimits(t *testing.T) {
	r := newRig(t, Options{})
	var recs []machine.Record
	for i := range 1200 {
		recs = append(recs, offsetRec("g", "t", int32(i), 1))
	}
	r.write(recs...)
	res, err := r.p.Read(0, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeBatches(t, res.Batches); len(got) != 1 {
		t.Errorf("atLeastOne: %d records", len(got))
	}
	if res, _ := r.p.Read(0, 1, false); res.Batches != nil {
		t.Errorf("a read of 1 byte returned %d bytes", len(res.Batches))
	}
	res, _ = r.p.Read(0, 1<<30, true)
	if got := decodeBatches(t, res.Batches); len(got) != 1200 {
		t.Errorf("whole read: %d records", len(got))
	}
	n := 0
	for b := res.Batches; len(b) > 0; n++ {
		b = b[12+int(binary.BigEndian.Uint32(b[offLength:])):]
	}
	if n != 3 {
		t.Errorf("%d batches, want 3 of at most %d records", n, batchRecords)
	}
}

// TestPartitionCompactsMemory: entries superseded are dropped from
// memory once they outnumber the live ones.
func TestPartitionCompactsMemory(t *testing.T) {
	r := newRig(t, Options{})
	for round := range 5 {
		var recs []machine.Record
		for i := range 1000 {
			recs = append(recs, offsetRec("g", "t", int32(i), int64(round)))
		}
		r.write(recs...)
	}
	st := r.p.Stats()
	if st.Live != 1000 || st.Dead > 1000+1024 {
		t.Errorf("stats %+v: superseded entries kept", st)
	}
	if got := r.read(0); len(got) != 1000 || got[0].off != 4000 {
		t.Errorf("read %d records from %d", len(got), got[0].off)
	}
}

// TestTopicID: stable for a cluster, different across clusters.
func TestTopicID(t *testing.T) {
	a, b := TopicID("cluster-a"), TopicID("cluster-b")
	if a != TopicID("cluster-a") || a == b || a == ([16]byte{}) {
		t.Errorf("ids %x %x", a, b)
	}
}
