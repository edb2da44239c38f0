package topics

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
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

// TestTimestampTypeConfig: message.timestamp.type is CreateTime or
// LogAppendTime; anything else is refused.
func TestTimestampTypeConfig(t *testing.T) {
	for _, v := range []string{"CreateTime", "LogAppendTime"} {
		if err := ValidateTopicConfigs(map[string]string{"message.timestamp.type": v}); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	if err := ValidateTopicConfigs(map[string]string{"message.timestamp.type": "WallClock"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("WallClock: %v, want ErrInvalidConfig", err)
	}
}

// TestLogAppendTime: a LogAppendTime topic's batches carry the append
// time (the attributes' timestamp type, the max timestamp) with a CRC
// that still checks, so they survive a reopen's recovery; the timestamp
// index and a switch back to CreateTime follow.
func TestLogAppendTime(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	p := e.part("t", 0)
	before := time.Now().UnixMilli()
	mustAppend(t, p, plainBatch(t, 2, "old")) // producer timestamps far in the past
	after := time.Now().UnixMilli()
	check := func(p *Partition) {
		t.Helper()
		res, err := p.Read(0, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		h, err := validateBatch(res.Batches)
		if err != nil {
			t.Fatalf("stamped batch does not validate: %v", err)
		}
		if h.attributes&timestampTypeLogAppend == 0 || h.maxTimestamp < before || h.maxTimestamp > after {
			t.Fatalf("attributes %#x, max timestamp %d, want the append time in [%d, %d]", h.attributes, h.maxTimestamp, before, after)
		}
		if off, ts, found, err := p.OffsetForTimestamp(before); err != nil || !found || off != 0 || ts < before {
			t.Fatalf("timestamp search: %d %d %v %v", off, ts, found, err)
		}
	}
	check(p)
	e.reopen()
	check(e.part("t", 0))
	if err := e.log.AlterConfigs("t", nil, false); err != nil {
		t.Fatal(err)
	}
	p = e.part("t", 0)
	r := mustAppend(t, p, plainBatch(t, 1, "create"))
	res, err := p.Read(r.BaseOffset, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := validateBatch(res.Batches); h.attributes&timestampTypeLogAppend != 0 {
		t.Fatal("back on CreateTime, a batch still got the append time")
	}
}
