// Package e2e runs real Kafka clients, which nobody here wrote, against the
// real Cohort server on 127.0.0.1.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rec is a record as a test produced it or read it back.
type rec struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []hdr
	Timestamp time.Time
}

type hdr struct{ Key, Value string }

// makeRecs returns n records with distinct keys, values of varied sizes,
// headers, and timestamps one millisecond apart from base, so that every
// field can be checked on the way back.
func makeRecs(prefix string, n int, base time.Time) []rec {
	out := make([]rec, n)
	for i := range out {
		val := bytes.Repeat([]byte(fmt.Sprintf("%s-%d;", prefix, i)), 1+i%17)
		out[i] = rec{
			Key:       []byte(fmt.Sprintf("%s-key-%d", prefix, i)),
			Value:     val,
			Headers:   []hdr{{"i", fmt.Sprint(i)}, {"src", prefix}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond).Truncate(time.Millisecond),
		}
	}
	return out
}

// edgeRecs is makeRecs with the edge cases a client must carry through:
// binary bytes in values and headers, a null key now and then, a null
// value (a tombstone) or an empty one, and a record without headers.
func edgeRecs(prefix string, n int, base time.Time) []rec {
	recs := makeRecs(prefix, n, base)
	for i := range recs {
		r := &recs[i]
		r.Value = append(r.Value, 0, 0xff, byte(i))
		r.Headers = append(r.Headers, hdr{"bin", string([]byte{0, 0xfe, byte(i >> 8), byte(i)})})
		switch i % 20 {
		case 3:
			r.Key = nil
		case 5:
			r.Value = nil
		case 7:
			r.Value = []byte{}
		case 11:
			r.Headers = nil
		}
	}
	return recs
}

// checkSame fails unless got holds exactly the records of want, in offset
// order per partition, every field intact. want's offsets must be set (from
// the produce acknowledgements) unless ignoreOffsets.
func checkSame(t *testing.T, want, got []rec, ignoreOffsets bool) {
	t.Helper()
	byPart := func(rs []rec) map[int32][]rec {
		m := map[int32][]rec{}
		for _, r := range rs {
			m[r.Partition] = append(m[r.Partition], r)
		}
		if !ignoreOffsets {
			for _, l := range m {
				sort.SliceStable(l, func(i, j int) bool { return l[i].Offset < l[j].Offset })
			}
		}
		return m
	}
	w, g := byPart(want), byPart(got)
	if len(want) != len(got) {
		t.Errorf("got %d records, want %d", len(got), len(want))
	}
	for p, wl := range w {
		gl := g[p]
		if len(gl) != len(wl) {
			t.Errorf("partition %d: got %d records, want %d", p, len(gl), len(wl))
			continue
		}
		for i := range wl {
			a, b := wl[i], gl[i]
			if !ignoreOffsets && a.Offset != b.Offset {
				t.Fatalf("partition %d record %d: offset %d, want %d", p, i, b.Offset, a.Offset)
			}
			if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("partition %d record %d: key/value %q/%.40q, want %q/%.40q", p, i, b.Key, b.Value, a.Key, a.Value)
			}
			if fmt.Sprint(a.Headers) != fmt.Sprint(b.Headers) {
				t.Fatalf("partition %d record %d: headers %v, want %v", p, i, b.Headers, a.Headers)
			}
			if !a.Timestamp.Equal(b.Timestamp) {
				t.Fatalf("partition %d record %d: timestamp %v, want %v", p, i, b.Timestamp, a.Timestamp)
			}
		}
	}
	if len(g) > len(w) {
		t.Errorf("records in %d partitions, want %d", len(g), len(w))
	}
}

// franzTimeout bounds each franz-go produce or consume helper call.
const franzTimeout = time.Minute

// franzProduce produces recs to topic with franz-go, a slice of them
// with each compression codec, and returns them with the partitions and
// offsets the broker acknowledged.
func franzProduce(t *testing.T, addr, topic string, recs []rec) []rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), franzTimeout)
	defer cancel()
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	out := make([]rec, len(recs))
	per := (len(recs) + len(codecs) - 1) / len(codecs)
	for ci, codec := range codecs {
		lo, hi := ci*per, min((ci+1)*per, len(recs))
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var firstErr error
		var wg sync.WaitGroup
		for i := lo; i < hi; i++ {
			r := recs[i]
			kr := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
			}
			wg.Add(1)
			cl.Produce(ctx, kr, func(kr *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				r.Partition, r.Offset = kr.Partition, kr.Offset
				out[i] = r
			})
		}
		wg.Wait()
		cl.Close()
		if firstErr != nil {
			t.Fatalf("franz-go produce to %s: %v", topic, firstErr)
		}
	}
	return out
}

// franzConsume reads topic from the start with franz-go, groupless,
// until it has n records, and fails on any more that are there.
func franzConsume(t *testing.T, addr, topic string, n int) []rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), franzTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []rec
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consume %s: %d of %d records within %v", topic, len(got), n, franzTimeout)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("franz-go consume %s: %v", topic, errs)
		}
		fs.EachRecord(func(kr *kgo.Record) {
			r := rec{Partition: kr.Partition, Offset: kr.Offset, Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp}
			for _, h := range kr.Headers {
				r.Headers = append(r.Headers, hdr{h.Key, string(h.Value)})
			}
			got = append(got, r)
		})
	}
	// Nothing beyond: the end offsets must be exactly what was read.
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != int64(n) {
		t.Errorf("%s: end offsets sum to %d, want %d records", topic, total, n)
	}
	return got
}
