// Package e2e runs real Kafka clients, which nobody here wrote, against the
// real Cohort server on 127.0.0.1.
package e2e

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"
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
