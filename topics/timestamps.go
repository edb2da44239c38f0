package topics

import (
	"encoding/binary"
	"sort"
)

// recordTimes calls fn with the offset and timestamp of every record in
// batch, decompressing it if needed, until fn returns false. In a batch
// stamped with its append time (LogAppendTime) every record's timestamp
// is the batch's max timestamp, as consumers read it.
func recordTimes(batch []byte, fn func(offset, ts int64) bool) error {
	h, err := parseHeader(batch)
	if err != nil {
		return err
	}
	base := int64(binary.BigEndian.Uint64(batch[offBaseOffset:]))
	baseTS := int64(binary.BigEndian.Uint64(batch[offBaseTimestamp:]))
	appendTime := h.attributes&timestampTypeLogAppend != 0
	return walkRecords(batch, h, false, func(offDelta int32, tsDelta int64) bool {
		if appendTime {
			return fn(base+int64(offDelta), h.maxTimestamp)
		}
		return fn(base+int64(offDelta), baseTS+tsDelta)
	})
}

// OffsetForTimestamp returns the offset and timestamp of the first record
// whose timestamp is at least ts, as ListOffsets does for a timestamp
// query, and false if no record is that late.
func (p *Partition) OffsetForTimestamp(ts int64) (int64, int64, bool, error) {
	p.mu.Lock()
	start := p.logStart
	// Records below the log start (DeleteRecords) are gone: the search
	// starts at the batch that holds it.
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].last >= start })
	for i < len(p.batches) && p.batches[i].maxTS < ts {
		i++
	}
	var e batchEntry
	if i < len(p.batches) {
		e = p.batches[i]
		e.seg.refs++ // released by readBatch
	}
	p.mu.Unlock()
	if e.seg == nil {
		return 0, 0, false, nil
	}
	b, err := p.readBatch(e)
	if err != nil {
		return 0, 0, false, err
	}
	// The batch's max timestamp is at least ts, so some record qualifies.
	off, found := e.last, e.maxTS
	// (e.last is at or above the log start, so the fallback is too.)
	err = recordTimes(b, func(o, t int64) bool {
		if o >= start && t >= ts {
			off, found = o, t
			return false
		}
		return true
	})
	return off, found, true, err
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp (the first such, on ties), for ListOffsets with
// timestamp -3 (KIP-734), and false for an empty log.
func (p *Partition) MaxTimestamp() (int64, int64, bool, error) {
	p.mu.Lock()
	best := -1
	for i, e := range p.batches {
		if best < 0 || e.maxTS > p.batches[best].maxTS {
			best = i
		}
	}
	var e batchEntry
	if best >= 0 {
		e = p.batches[best]
		e.seg.refs++ // released by readBatch
	}
	p.mu.Unlock()
	if best < 0 {
		return 0, 0, false, nil
	}
	b, err := p.readBatch(e)
	if err != nil {
		return 0, 0, false, err
	}
	off, maxTS := e.last, e.maxTS
	err = recordTimes(b, func(o, t int64) bool {
		if t == e.maxTS {
			off = o
			return false
		}
		return true
	})
	return off, maxTS, true, err
}
