package topics

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func tsBatch(t *testing.T, codec kgo.CompressionCodec, compressed bool, tss ...int64) []byte {
	t.Helper()
	o := noProducer()
	for i, ts := range tss {
		o.records = append(o.records, testRecord{Key: []byte{byte(i)}, Value: []byte("value value value value value"), TS: ts})
	}
	o.codec, o.compressed = codec, compressed
	return makeBatch(t, o)
}

func TestOffsetForTimestamp(t *testing.T) {
	for _, c := range []struct {
		name       string
		codec      kgo.CompressionCodec
		compressed bool
	}{
		{"none", kgo.NoCompression(), false},
		{"gzip", kgo.GzipCompression(), true},
		{"zstd", kgo.ZstdCompression(), true},
		{"lz4", kgo.Lz4Compression(), true},
		{"snappy", kgo.SnappyCompression(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.create("t", 1, nil)
			p := e.part("t", 0)

			if _, _, ok, err := p.OffsetForTimestamp(0); ok || err != nil {
				t.Fatalf("empty log: %v %v", ok, err)
			}
			if _, _, ok, err := p.MaxTimestamp(); ok || err != nil {
				t.Fatalf("empty log MaxTimestamp: %v %v", ok, err)
			}

			// Offsets 0-2, 3-5 (compressed when the case says so), 6-7
			// uncompressed; timestamps are not monotonic.
			mustAppend(t, p, tsBatch(t, kgo.NoCompression(), false, 100, 300, 200))
			mustAppend(t, p, tsBatch(t, c.codec, c.compressed, 400, 350, 500))
			mustAppend(t, p, tsBatch(t, kgo.NoCompression(), false, 450, 120))

			cases := []struct {
				ts, off, found int64
				ok             bool
			}{
				{-1, 0, 100, true},
				{0, 0, 100, true},
				{100, 0, 100, true},
				{101, 1, 300, true},
				{250, 1, 300, true},
				{300, 1, 300, true},
				{301, 3, 400, true},
				{360, 3, 400, true},
				{401, 5, 500, true},
				{500, 5, 500, true},
				{501, 0, 0, false},
			}
			check := func() {
				t.Helper()
				for _, tc := range cases {
					off, ts, ok, err := p.OffsetForTimestamp(tc.ts)
					if err != nil {
						t.Fatalf("OffsetForTimestamp(%d): %v", tc.ts, err)
					}
					if ok != tc.ok || ok && (off != tc.off || ts != tc.found) {
						t.Fatalf("OffsetForTimestamp(%d) = %d %d %v, want %d %d %v", tc.ts, off, ts, ok, tc.off, tc.found, tc.ok)
					}
				}
				off, ts, ok, err := p.MaxTimestamp()
				if err != nil || !ok || off != 5 || ts != 500 {
					t.Fatalf("MaxTimestamp = %d %d %v %v, want 5 500", off, ts, ok, err)
				}
			}
			check()
			e.reopen()
			p = e.part("t", 0)
			check()
		})
	}
}

func TestMaxTimestampTies(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	mustAppend(t, p, tsBatch(t, kgo.NoCompression(), false, 10, 20))
	mustAppend(t, p, tsBatch(t, kgo.GzipCompression(), true, 5, 90, 30, 90))
	mustAppend(t, p, tsBatch(t, kgo.NoCompression(), false, 90, 1))
	off, ts, ok, err := p.MaxTimestamp()
	if err != nil || !ok || off != 3 || ts != 90 {
		t.Fatalf("MaxTimestamp = %d %d %v %v, want 3 90 (the first of the ties)", off, ts, ok, err)
	}
	// The first record at or after 90 is the same one.
	off, ts, ok, err = p.OffsetForTimestamp(90)
	if err != nil || !ok || off != 3 || ts != 90 {
		t.Fatalf("OffsetForTimestamp(90) = %d %d %v %v", off, ts, ok, err)
	}
	off, _, ok, _ = p.OffsetForTimestamp(21)
	if !ok || off != 3 {
		t.Fatalf("OffsetForTimestamp(21) = %d %v, want 3", off, ok)
	}
}

func TestTimestampsAcrossSegments(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, map[string]string{"segment.bytes": "300"})
	p := e.part("t", 0)
	for i := range 20 {
		ts := int64(1000 + 10*i)
		mustAppend(t, p, tsBatch(t, kgo.GzipCompression(), i%2 == 0, ts, ts+5))
	}
	if len(segFiles(t, p)) < 5 {
		t.Fatalf("%d segments", len(segFiles(t, p)))
	}
	for i := range 20 {
		ts := int64(1000 + 10*i)
		off, got, ok, err := p.OffsetForTimestamp(ts + 1)
		if err != nil || !ok || off != int64(2*i+1) || got != ts+5 {
			t.Fatalf("OffsetForTimestamp(%d) = %d %d %v %v", ts+1, off, got, ok, err)
		}
	}
	off, ts, ok, err := p.MaxTimestamp()
	if err != nil || !ok || off != 39 || ts != 1195 {
		t.Fatalf("MaxTimestamp = %d %d %v %v", off, ts, ok, err)
	}
}
