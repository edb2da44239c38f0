package topics

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCheckRecords: on a topic whose cleanup.policy includes compact,
// every record without a key is named by its index in the batch, the
// batch decompressed first, as Kafka's LogValidator.validateKey; an
// empty key is a key; another policy, or a batch Append refuses as a
// whole, is let through for Append to answer.
func TestCheckRecords(t *testing.T) {
	e := newEnv(t)
	compacted := e.create("cmp", 2, map[string]string{"cleanup.policy": "delete, compact"})
	deleted := e.create("del", 1, map[string]string{"cleanup.policy": "delete"})
	if !compacted.Compacted() || deleted.Compacted() {
		t.Fatalf("Compacted: %v for compact, %v for delete", compacted.Compacted(), deleted.Compacted())
	}

	// keys: nil is a null key, "" an empty one.
	batchOf := func(codec kgo.CompressionCodec, compressed bool, transactional bool, keys ...[]byte) []byte {
		o := noProducer()
		if transactional {
			o.producerID, o.epoch, o.seq, o.transactional = 7, 0, 0, true
		}
		o.codec, o.compressed = codec, compressed
		for i, k := range keys {
			o.records = append(o.records, testRecord{Key: k, Value: fmt.Appendf(nil, "v%d", i), TS: 1000})
		}
		return makeBatch(t, o)
	}
	indexes := func(err error) []int32 {
		var re *RecordsError
		if !errors.As(err, &re) {
			return nil
		}
		var out []int32
		for _, r := range re.Records {
			out = append(out, r.Index)
		}
		return out
	}
	k := []byte("k")
	codecs := []struct {
		name       string
		codec      kgo.CompressionCodec
		compressed bool
	}{
		{"none", kgo.NoCompression(), false},
		{"gzip", kgo.GzipCompression(), true},
		{"snappy", kgo.SnappyCompression(), true},
		{"lz4", kgo.Lz4Compression(), true},
		{"zstd", kgo.ZstdCompression(), true},
	}
	for _, c := range codecs {
		b := batchOf(c.codec, c.compressed, false, nil, k, k, nil, []byte{}, nil)
		err := compacted.CheckRecords(1, b)
		if got := indexes(err); !slices.Equal(got, []int32{0, 3, 5}) {
			t.Fatalf("%s: keyless records %v (%v), want [0 3 5]", c.name, got, err)
		}
		if !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("%s: %v is not ErrInvalidRecord", c.name, err)
		}
		if err := deleted.CheckRecords(0, b); err != nil {
			t.Fatalf("%s: cleanup.policy=delete refused %v", c.name, err)
		}
	}

	var re *RecordsError
	errors.As(compacted.CheckRecords(1, batchOf(kgo.NoCompression(), false, false, nil, k, nil, nil, nil)), &re)
	if re == nil || len(re.Records) != 4 {
		t.Fatalf("four keyless records: %+v", re)
	}
	want := "Compacted topic cannot accept message without key in topic partition cmp-1"
	if re.Records[2].Message != want {
		t.Fatalf("record message %q, want %q", re.Records[2].Message, want)
	}
	// Kafka's summary names the count and at most the first three.
	if msg := re.Error(); !strings.HasPrefix(msg, "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=0, message='"+want+"'), RecordError(batchIndex=2, ") ||
		!strings.Contains(msg, "batchIndex=3") || strings.Contains(msg, "batchIndex=4") {
		t.Fatalf("summary %q", msg)
	}

	if err := compacted.CheckRecords(0, batchOf(kgo.NoCompression(), false, false, k, []byte{}, k)); err != nil {
		t.Fatalf("every record keyed (one empty key): %v", err)
	}
	// As Kafka: a transactional batch's records are checked alike.
	if got := indexes(compacted.CheckRecords(0, batchOf(kgo.NoCompression(), false, true, k, nil))); !slices.Equal(got, []int32{1}) {
		t.Fatalf("transactional batch: keyless records %v, want [1]", got)
	}

	// What Append refuses as a whole, it answers: not a record error.
	bad := batchOf(kgo.NoCompression(), false, false, nil, k)
	bad[len(bad)-1] ^= 0xff // the CRC no longer matches
	if err := compacted.CheckRecords(0, bad); err != nil {
		t.Fatalf("a corrupt batch got record errors: %v", err)
	}
	if _, err := compacted.Partitions[0].Append(bad, compacted.MaxBatchBytes()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Append of the corrupt batch: %v, want ErrCorrupt", err)
	}
	small := e.create("cmp-small", 1, map[string]string{"cleanup.policy": "compact", "max.message.bytes": "100"})
	over := batchOf(kgo.NoCompression(), false, false, nil, nil, nil, nil, nil, nil, nil, nil)
	if len(over) <= 100 {
		t.Fatalf("the batch has %d bytes, not over 100", len(over))
	}
	if err := small.CheckRecords(0, over); err != nil {
		t.Fatalf("a batch over max.message.bytes got record errors: %v", err)
	}
}
