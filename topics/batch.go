package topics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The RecordBatch v2 header, as Kafka lays it out on the wire and on disk.
// Offsets of each field from the start of the batch:
const (
	offBaseOffset      = 0  // int64
	offBatchLength     = 8  // int32, bytes after this field
	offLeaderEpoch     = 12 // int32
	offMagic           = 16 // int8
	offCRC             = 17 // uint32, CRC-32C of everything from attributes on
	offAttributes      = 21 // int16
	offLastOffsetDelta = 23 // int32
	offBaseTimestamp   = 27 // int64
	offMaxTimestamp    = 35 // int64
	offProducerID      = 43 // int64
	offProducerEpoch   = 51 // int16
	offBaseSequence    = 53 // int32
	offNumRecords      = 57 // int32
	batchHeaderSize    = 61

	// logOverhead is the part of the header not counted by batchLength.
	logOverhead = offBatchLength + 4
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Batch errors, mapped to Kafka error codes by the wire layer.
var (
	// ErrCorrupt: the CRC does not match or the framing is inconsistent
	// (Kafka's CORRUPT_MESSAGE).
	ErrCorrupt = errors.New("corrupt record batch")
	// ErrInvalidRecord: a well-formed batch that Kafka would refuse
	// (INVALID_RECORD), such as more than one batch per partition.
	ErrInvalidRecord = errors.New("invalid record batch")
	// ErrMagic: a batch in a message format older than v2
	// (UNSUPPORTED_FOR_MESSAGE_FORMAT).
	ErrMagic = errors.New("record batch magic is not 2")
)

// header is the decoded part of a batch header Cohort needs.
type header struct {
	lastOffsetDelta int32
	maxTimestamp    int64
	attributes      int16
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
	numRecords      int32
	size            int32 // whole batch, header included
}

func (h header) transactional() bool { return h.attributes&0x10 != 0 }
func (h header) control() bool       { return h.attributes&0x20 != 0 }

// parseHeader reads the header at the start of b without checking the CRC.
// b may hold only the header.
func parseHeader(b []byte) (header, error) {
	// The magic byte is at the same place in every message format, so a
	// short old-format message set is told apart from a torn batch.
	if len(b) > offMagic && b[offMagic] != 2 {
		return header{}, ErrMagic
	}
	if len(b) < batchHeaderSize {
		return header{}, ErrCorrupt
	}
	length := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if length < batchHeaderSize-logOverhead {
		return header{}, ErrCorrupt
	}
	h := header{
		attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		lastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		maxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		producerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		producerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		baseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		numRecords:      int32(binary.BigEndian.Uint32(b[offNumRecords:])),
		size:            length + logOverhead,
	}
	if h.lastOffsetDelta < 0 || h.numRecords < 0 {
		return header{}, ErrCorrupt
	}
	return h, nil
}

// validateBatch checks that b is exactly one well-formed v2 batch, as Kafka's
// LogValidator does for a produce from a v3+ client, and returns its header.
func validateBatch(b []byte) (header, error) { return checkBatch(b, false) }

// checkBatch is validateBatch; stored accepts the control batches that
// only the log itself writes (transaction markers), as recovery reads
// them back.
func checkBatch(b []byte, stored bool) (header, error) {
	h, err := parseHeader(b)
	if err != nil {
		return h, err
	}
	if int(h.size) > len(b) {
		return h, ErrCorrupt
	}
	if int(h.size) < len(b) {
		// Kafka: a v2 produce carries exactly one batch per partition.
		return h, ErrInvalidRecord
	}
	if crc32.Checksum(b[offAttributes:], crc32c) != binary.BigEndian.Uint32(b[offCRC:]) {
		return h, ErrCorrupt
	}
	if h.numRecords == 0 || (h.control() && !stored) {
		// Clients never produce empty or control batches.
		return h, ErrInvalidRecord
	}
	if h.lastOffsetDelta != h.numRecords-1 {
		// Kafka rejects batches whose offsets are not contiguous from 0.
		return h, ErrInvalidRecord
	}
	if h.producerID >= 0 && h.baseSequence < 0 && !h.control() {
		// Kafka's LogValidator: an idempotent batch needs a sequence.
		return h, ErrInvalidRecord
	}
	return h, nil
}

var decompressor = kgo.DefaultDecompressor()

// validateRecords decodes every record of a batch whose header validateBatch
// accepted, decompressing it first, as Kafka's LogValidator does for a
// produce: a payload that does not decompress, a record that does not
// parse, offset deltas that do not count up from 0, or bytes left over are
// refused, so that nothing stored breaks a consumer later.
func validateRecords(b []byte, h header) error {
	return walk(b, h, true, nil)
}

// recordInfo is what a walk reads of each record.
type recordInfo struct {
	offsetDelta int32
	tsDelta     int64
	// keyLen is the key's length, -1 for a null key: Kafka's
	// Record.hasKey is false only then (an empty key is a key).
	keyLen int64
}

// walkRecords calls fn with each record's offset delta and timestamp delta
// until fn returns false; it is walk for the callers that need no more.
func walkRecords(b []byte, h header, full bool, fn func(offsetDelta int32, tsDelta int64) bool) error {
	return walk(b, h, full, func(r recordInfo) bool { return fn(r.offsetDelta, r.tsDelta) })
}

// walk calls fn with what it reads of each record until fn returns false.
// With full set it parses every field of every record and checks the
// batch's framing; otherwise only the fields up to the key's length.
func walk(b []byte, h header, full bool, fn func(recordInfo) bool) error {
	data := b[batchHeaderSize:h.size]
	if codec := kgo.CompressionCodecType(h.attributes & 0x07); codec != kgo.CodecNone {
		if codec > kgo.CodecZstd {
			return fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, codec)
		}
		var err error
		if data, err = decompressor.Decompress(data, codec); err != nil {
			return fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
		}
	}
	for i := int32(0); i < h.numRecords; i++ {
		length, n := binary.Varint(data)
		if n <= 0 || length < 1 || length > int64(len(data)-n) {
			return fmt.Errorf("%w: record %d: bad length", ErrCorrupt, i)
		}
		rec := data[n : n+int(length)]
		if full {
			var r kmsg.Record
			if err := r.ReadFrom(data[:n+int(length)]); err != nil {
				return fmt.Errorf("%w: record %d: %v", ErrCorrupt, i, err)
			}
		}
		data = data[n+int(length):]
		at := 1 // after the attributes byte
		tsDelta, n1 := binary.Varint(rec[at:])
		if n1 <= 0 {
			return fmt.Errorf("%w: record %d: bad timestamp", ErrCorrupt, i)
		}
		at += n1
		offDelta, n2 := binary.Varint(rec[at:])
		if n2 <= 0 {
			return fmt.Errorf("%w: record %d: bad offset delta", ErrCorrupt, i)
		}
		at += n2
		if offDelta != int64(i) {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, offDelta)
		}
		keyLen, n3 := binary.Varint(rec[at:])
		if n3 <= 0 || keyLen < -1 {
			return fmt.Errorf("%w: record %d: bad key length", ErrCorrupt, i)
		}
		if fn != nil && !fn(recordInfo{offsetDelta: int32(offDelta), tsDelta: tsDelta, keyLen: keyLen}) {
			return nil
		}
	}
	if full && len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(data))
	}
	return nil
}

// timestampTypeLogAppend is the attributes bit of a batch whose
// timestamps are the broker's append time (Kafka's TimestampType
// LOG_APPEND_TIME).
const timestampTypeLogAppend = 0x08

// stampAppendTime makes batch b's timestamp the append time now, as
// Kafka's LogValidator does for a LogAppendTime topic: the attributes'
// timestamp type and the max timestamp set (consumers take every
// record's timestamp from it), the CRC computed again. It returns now.
func stampAppendTime(b []byte, now int64) int64 {
	attrs := binary.BigEndian.Uint16(b[offAttributes:])
	binary.BigEndian.PutUint16(b[offAttributes:], attrs|timestampTypeLogAppend)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(now))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
	return now
}
