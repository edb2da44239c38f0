package kafka_test

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// keyedBatch is an uncompressed, non-idempotent RecordBatch v2 with one
// record per key; a nil key is a null key.
func keyedBatch(keys ...[]byte) []byte {
	var recs []byte
	for i, k := range keys {
		r := kmsg.Record{OffsetDelta: int32(i), Key: k, Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // less the one-byte varint of 0
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(keys) - 1),
		FirstTimestamp:       1000,
		MaxTimestamp:         1000,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(keys)),
		Records:              recs,
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	fixCRC(out)
	return out
}

// TestProduceCompactedKeyless: as Kafka's broker, a batch with records
// without a key, produced to a topic whose cleanup.policy includes
// compact, is refused whole with INVALID_RECORD; from Produce v8 on the
// response names each keyless record by its index in the batch
// (RecordErrors, KIP-467) with its message, and the summary as the
// ErrorMessage. Nothing of the batch is appended, and the request's
// other partitions are not affected.
func TestProduceCompactedKeyless(t *testing.T) {
	addr := startNode(t, false)
	c := dial(t, addr)
	id := createTopic(c, "cmp", 1, map[string]string{"cleanup.policy": "compact,delete"})
	createTopic(c, "plain", 1, nil)
	k := []byte("k")
	keyless := keyedBatch(k, nil, k, nil, []byte{}) // an empty key is a key

	// One request, two topics: the compacted one refused, the other kept.
	req := produceReq("cmp", [16]byte{}, 0, -1, keyless)
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "plain"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = keyless
	pt.Partitions = append(pt.Partitions, pp)
	req.Topics = append(req.Topics, pt)
	resp := roundTrip[*kmsg.ProduceResponse](c, 11, req)
	if len(resp.Topics) != 2 {
		t.Fatalf("response topics %+v", resp.Topics)
	}
	sp := resp.Topics[0].Partitions[0]
	wantCode(t, "compacted topic", sp.ErrorCode, kerr.InvalidRecord)
	var idx []int32
	for _, er := range sp.ErrorRecords {
		idx = append(idx, er.RelativeOffset)
		if want := "Compacted topic cannot accept message without key in topic partition cmp-0"; er.ErrorMessage == nil || *er.ErrorMessage != want {
			t.Errorf("record %d: message %v, want %q", er.RelativeOffset, er.ErrorMessage, want)
		}
	}
	if !slices.Equal(idx, []int32{1, 3}) {
		t.Fatalf("record errors at %v, want [1 3]", idx)
	}
	if sp.ErrorMessage == nil || !strings.HasPrefix(*sp.ErrorMessage, "One or more records have been rejected due to 2 record errors in total") {
		t.Fatalf("error message %v", sp.ErrorMessage)
	}
	if sp.BaseOffset != -1 || sp.LogStartOffset != 0 {
		t.Fatalf("base offset %d, log start %d; want -1 and 0", sp.BaseOffset, sp.LogStartOffset)
	}
	if op := resp.Topics[1].Partitions[0]; op.ErrorCode != 0 || op.BaseOffset != 0 || len(op.ErrorRecords) != 0 {
		t.Fatalf("the other topic: %s at %d, record errors %v", codeName(op.ErrorCode), op.BaseOffset, op.ErrorRecords)
	}

	// Below v8 the response has no record errors: INVALID_RECORD alone.
	old := produceAt(c, 7, produceReq("cmp", [16]byte{}, 0, -1, keyless))
	wantCode(t, "v7", old.ErrorCode, kerr.InvalidRecord)
	if len(old.ErrorRecords) != 0 || old.ErrorMessage != nil {
		t.Fatalf("v7 carries record errors %v, message %v", old.ErrorRecords, old.ErrorMessage)
	}
	// By topic id (v13) alike.
	if sp := produceAt(c, 13, produceReq("", id, 0, -1, keyless)); sp.ErrorCode != kerr.InvalidRecord.Code || len(sp.ErrorRecords) != 2 {
		t.Fatalf("v13: %s, record errors %v", codeName(sp.ErrorCode), sp.ErrorRecords)
	}

	// Nothing of the refused batches was appended: the first keyed batch
	// starts the log, and a fetch reads it alone.
	if off := mustProduce(c, "cmp", 0, keyedBatch(k, []byte{}, k)); off != 0 {
		t.Fatalf("the keyed batch went to offset %d, want 0", off)
	}
	fp := fetchPartition(c, 12, fetchReq("cmp", id, 0, 0, 0, 1))
	if fp.ErrorCode != 0 || fp.HighWatermark != 3 {
		t.Fatalf("fetch: %s, high watermark %d, want 3", codeName(fp.ErrorCode), fp.HighWatermark)
	}
	for _, b := range parseBatches(t, fp.RecordBatches) {
		for _, r := range b.Records {
			if r.Key == nil {
				t.Fatalf("a keyless record was stored at %d", b.FirstOffset+int64(r.OffsetDelta))
			}
		}
	}
}
