package topics

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestAppendValidatesRecords: as Kafka's LogValidator, Append decodes the
// records inside a batch and refuses what a consumer could not read, even
// when the batch's CRC is right.
func TestAppendValidatesRecords(t *testing.T) {
	e := newEnv(t)
	p := e.create("recs", 1, nil).Partitions[0]

	reframe := func(b []byte) []byte { // fix the length and the CRC
		binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-logOverhead))
		fixCRC(b)
		return b
	}
	for _, tc := range []struct {
		name string
		mod  func(b []byte) []byte
		want error
	}{
		{"payload flagged gzip is not gzip", func(b []byte) []byte {
			b[offAttributes+1] |= 1
			return reframe(b)
		}, ErrCorrupt},
		{"bytes after the last record", func(b []byte) []byte {
			return reframe(append(b, 0, 0, 0))
		}, ErrCorrupt},
		{"fewer records than the header counts", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offNumRecords:], 4)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 3)
			return reframe(b)
		}, ErrCorrupt},
		{"unknown codec", func(b []byte) []byte {
			b[offAttributes+1] |= 6
			return reframe(b)
		}, ErrCorrupt},
	} {
		_, err := p.Append(tc.mod(plainBatch(t, 3, "r")), 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, hw := p.Offsets(); hw != 0 {
		t.Fatalf("refused batches were written: high watermark %d", hw)
	}
	mustAppend(t, p, plainBatch(t, 3, "ok"))
}

// TestTimestampTypeConfig: CreateTime is what Cohort does; LogAppendTime,
// which it does not implement, is refused rather than silently ignored.
func TestTimestampTypeConfig(t *testing.T) {
	if err := ValidateTopicConfigs(map[string]string{"message.timestamp.type": "CreateTime"}); err != nil {
		t.Errorf("CreateTime: %v", err)
	}
	if err := ValidateTopicConfigs(map[string]string{"message.timestamp.type": "LogAppendTime"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("LogAppendTime: %v, want ErrInvalidConfig", err)
	}
}
