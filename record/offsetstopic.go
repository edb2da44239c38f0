package record

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// KindOffsetsTopic is a shard's one record of its __consumer_offsets
// partition (package offsetstopic): the offsets reserved so far. It is
// the runtime's, not the machine's: a group machine's replay ignores it.
const KindOffsetsTopic Kind = 13

// OffsetsTopicKey names a shard's KindOffsetsTopic record: the kind
// prefix alone, no tenant or group, so that it sorts after every group
// record of the shard and before the next shard.
type OffsetsTopicKey struct {
	Shard uint16
}

// Key encodes the key.
func (k OffsetsTopicKey) Key() []byte { return KindPrefix(k.Shard, KindOffsetsTopic) }

// IsOffsetsTopicKey reports whether key is a shard's KindOffsetsTopic
// record, without allocating: the load path asks it of every record.
func IsOffsetsTopicKey(key []byte) bool {
	return len(key) == 4 && key[0] == namespace && Kind(key[3]) == KindOffsetsTopic
}

// OffsetsTopic is the value of a KindOffsetsTopic record.
//
// Reserved bounds the offsets the shard's __consumer_offsets partition
// has handed out: every offset a reader was ever shown is below it. A
// shard that loads starts its partition at Reserved, so that offsets
// never go backwards across restarts and failovers, and it shows no
// offset until a larger reservation covering it is durable.
type OffsetsTopic struct {
	Reserved int64
}

// Encode returns the value's bytes.
func (o OffsetsTopic) Encode() []byte {
	return kbin.AppendInt64([]byte{valueVersion1}, o.Reserved)
}

// DecodeOffsetsTopic decodes an OffsetsTopic value.
func DecodeOffsetsTopic(v []byte) (OffsetsTopic, error) {
	var o OffsetsTopic
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return o, err
	}
	o.Reserved = r.Int64()
	if err := complete(r, "offsets topic"); err != nil {
		return o, err
	}
	if o.Reserved < 0 {
		return o, fmt.Errorf("%w: offsets topic reservation %d", ErrCorrupt, o.Reserved)
	}
	return o, nil
}
