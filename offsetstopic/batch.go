package offsetstopic

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
)

// A record as a fetch returns it: the encoded key and value, its offset
// and its timestamp (Unix ms).
type kafkaRecord struct {
	off, ts int64
	key     []byte
	value   []byte // nil: a tombstone
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Offsets of a RecordBatch v2 header's fields.
const (
	batchHeaderSize = 61
	offLength       = 8
	offCRC          = 17
	offAttributes   = 21
)

// appendBatch appends recs (ascending offsets, at least one) as one
// RecordBatch v2 the way Kafka's compacted __consumer_offsets holds them:
// no compression, CreateTime, no producer (id and epoch -1), and offsets
// that may skip the ones compaction removed (a record's offset delta
// counts from the batch's base offset, and the last offset delta names
// the batch's last record).
func appendBatch(dst []byte, recs []kafkaRecord) []byte {
	start := len(dst)
	base, first := recs[0].off, recs[0].ts
	maxTS := first
	for _, r := range recs {
		maxTS = max(maxTS, r.ts)
	}
	dst = kbin.AppendInt64(dst, base)
	dst = kbin.AppendInt32(dst, 0) // length, below
	dst = kbin.AppendInt32(dst, 0) // partition leader epoch: Cohort's is 0
	dst = kbin.AppendInt8(dst, 2)  // magic
	dst = kbin.AppendInt32(dst, 0) // CRC, below
	dst = kbin.AppendInt16(dst, 0) // attributes: no compression, CreateTime
	dst = kbin.AppendInt32(dst, int32(recs[len(recs)-1].off-base))
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
		body = kbin.AppendVarlong(body, r.ts-first)
		body = kbin.AppendVarint(body, int32(r.off-base))
		body = kbin.AppendVarintBytes(body, r.key)
		body = kbin.AppendVarintBytes(body, r.value)
		body = kbin.AppendVarint(body, 0) // headers
		dst = kbin.AppendVarint(dst, int32(len(body)))
		dst = append(dst, body...)
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst
}

// recordSize is about what a record of a shard's key and value lengths
// takes in a batch once translated: Kafka's encoding of the same fields
// is within a few bytes of the shard's, and a record's framing is at most
// 20 bytes.
func recordSize(key, value int) int { return key + value + 20 }
