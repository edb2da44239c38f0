// Package recbatch builds Kafka RecordBatch v2 bytes (KIP-98's format)
// the way Cohort writes batches of its own rather than a producer's: the
// records of __consumer_offsets as a fetch returns them (offsetstopic)
// and share groups' dead letters (kafka).
package recbatch

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record is one record of a batch.
type Record struct {
	// Offset is the record's offset: ascending in a batch, and may skip
	// (a compacted log's). Timestamp is Unix milliseconds.
	Offset, Timestamp int64
	// Key and Value: nil is null (a tombstone's value).
	Key, Value []byte
	Headers    []Header
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Offsets of a RecordBatch v2 header's fields.
const (
	offLength     = 8
	offCRC        = 17
	offAttributes = 21
)

// Append appends recs (at least one) as one RecordBatch v2 whose base
// offset is the first record's: no compression, CreateTime, no producer
// (id and epoch -1), partition leader epoch 0 (Cohort's), each record's
// offset and timestamp deltas from the first's, the last offset delta
// naming the last record.
func Append(dst []byte, recs []Record) []byte {
	start := len(dst)
	base, first := recs[0].Offset, recs[0].Timestamp
	maxTS := first
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	dst = kbin.AppendInt64(dst, base)
	dst = kbin.AppendInt32(dst, 0) // length, below
	dst = kbin.AppendInt32(dst, 0) // partition leader epoch
	dst = kbin.AppendInt8(dst, 2)  // magic
	dst = kbin.AppendInt32(dst, 0) // CRC, below
	dst = kbin.AppendInt16(dst, 0) // attributes: no compression, CreateTime
	dst = kbin.AppendInt32(dst, int32(recs[len(recs)-1].Offset-base))
	dst = kbin.AppendInt64(dst, first)
	dst = kbin.AppendInt64(dst, maxTS)
	dst = kbin.AppendInt64(dst, -1) // producer id
	dst = kbin.AppendInt16(dst, -1) // producer epoch
	dst = kbin.AppendInt32(dst, -1) // base sequence
	dst = kbin.AppendInt32(dst, int32(len(recs)))
	var body []byte
	for _, r := range recs {
		body = body[:0]
		body = kbin.AppendInt8(body, 0) // attributes
		body = kbin.AppendVarlong(body, r.Timestamp-first)
		body = kbin.AppendVarint(body, int32(r.Offset-base))
		body = kbin.AppendVarintBytes(body, r.Key)
		body = kbin.AppendVarintBytes(body, r.Value)
		body = kbin.AppendVarint(body, int32(len(r.Headers)))
		for _, h := range r.Headers {
			body = kbin.AppendVarintString(body, h.Key)
			body = kbin.AppendVarintBytes(body, h.Value)
		}
		dst = kbin.AppendVarint(dst, int32(len(body)))
		dst = append(dst, body...)
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst
}
