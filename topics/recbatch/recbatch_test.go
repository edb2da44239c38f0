package recbatch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzReadsIt: franz-go's own fetch decoding (CRC check included)
// reads a batch back as written: offsets that skip, timestamps, null and
// empty keys and values, headers.
func TestFranzReadsIt(t *testing.T) {
	recs := []Record{
		{Offset: 10, Timestamp: 1000, Key: []byte("a"), Value: []byte("one"), Headers: []Header{{"h1", []byte("x")}, {"h2", nil}}},
		{Offset: 12, Timestamp: 1005, Key: nil, Value: nil},
		{Offset: 13, Timestamp: 999, Key: []byte{}, Value: []byte("three")},
	}
	b := Append([]byte("prefix"), recs)[len("prefix"):]
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = b
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, &rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil || len(fp.Records) != len(recs) {
		t.Fatalf("read %d records, err %v", len(fp.Records), fp.Err)
	}
	for i, r := range fp.Records {
		w := recs[i]
		if r.Offset != w.Offset || r.Timestamp.UnixMilli() != w.Timestamp || string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) ||
			(w.Key == nil) != (r.Key == nil) || (w.Value == nil) != (r.Value == nil) || len(r.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %+v, wrote %+v", i, r, w)
		}
		for j, h := range r.Headers {
			if h.Key != w.Headers[j].Key || string(h.Value) != string(w.Headers[j].Value) {
				t.Fatalf("record %d header %d: %+v", i, j, h)
			}
		}
	}
	b[30] ^= 1 // a byte under the CRC
	if fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, &rp, kgo.DefaultDecompressor(), nil); fp.Err == nil {
		t.Fatal("a corrupt batch read without error")
	}
}
