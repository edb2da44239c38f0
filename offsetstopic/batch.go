package offsetstopic

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Offsets of a RecordBatch v2 header's fields (the tests read batches).
const (
	batchHeaderSize = 61
	offLength       = 8
	offCRC          = 17
	offAttributes   = 21
)

// recordSize is about what a record of a shard's key and value lengths
// takes in a batch once translated: Kafka's encoding of the same fields
// is within a few bytes of the shard's, and a record's framing is at most
// 20 bytes.
func recordSize(key, value int) int { return key + value + 20 }
