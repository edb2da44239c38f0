package topics

// Transactions in the log (KIP-98), as Kafka's ProducerStateManager and
// LogSegment keep them: a transactional producer's batches open a
// transaction in the partition, a control batch (a commit or abort
// marker, which the transaction coordinator writes) closes it, the last
// stable offset (LSO) is the first offset of the oldest open transaction
// (the log end if none), and every aborted transaction's offset range is
// kept so that read_committed consumers can drop its records. All of it
// is derived from the batches at recovery, so it needs no storage of its
// own.

import (
	"encoding/binary"
	"hash/crc32"
	"sort"
)

// AbortedTxn is an aborted transaction's range in a partition: the
// producer, its first offset and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// Control record types (the key of a control batch's record).
const (
	controlAbort  = 0
	controlCommit = 1
)

// controlType returns the type of a control batch's record (b is the
// whole batch, uncompressed, as markers are written), or -1.
func controlType(b []byte, h header) int16 {
	data := b[batchHeaderSize:h.size]
	_, n := binary.Varint(data) // record length
	if n <= 0 || len(data) < n+1 {
		return -1
	}
	rec := data[n+1:] // after the attributes byte
	for range 2 {     // timestamp delta, offset delta
		_, m := binary.Varint(rec)
		if m <= 0 {
			return -1
		}
		rec = rec[m:]
	}
	klen, m := binary.Varint(rec)
	if m <= 0 || klen < 4 || int64(len(rec)-m) < klen {
		return -1
	}
	return int16(binary.BigEndian.Uint16(rec[m+2:]))
}

// markerBatch builds a control batch holding one end-transaction marker,
// as Kafka's EndTransactionMarker: key (version 0, type), value (version
// 0, coordinator epoch).
func markerBatch(pid int64, epoch int16, commit bool, ts int64) []byte {
	typ := int16(controlAbort)
	if commit {
		typ = controlCommit
	}
	var rec []byte
	rec = append(rec, 0)              // attributes
	rec = binary.AppendVarint(rec, 0) // timestamp delta
	rec = binary.AppendVarint(rec, 0) // offset delta
	rec = binary.AppendVarint(rec, 4) // key length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint16(rec, uint16(typ))
	rec = binary.AppendVarint(rec, 6) // value length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint32(rec, 0) // coordinator epoch
	rec = binary.AppendVarint(rec, 0)           // headers
	body := binary.AppendVarint(nil, int64(len(rec)))
	body = append(body, rec...)

	b := make([]byte, batchHeaderSize, batchHeaderSize+len(body))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(batchHeaderSize-logOverhead+len(body)))
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], 0x30) // transactional, control
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0)
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xFFFFFFFF) // -1
	binary.BigEndian.PutUint32(b[offNumRecords:], 1)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
	return b
}

// indexTxn folds a batch into the transaction state. Callers hold mu.
func (p *Partition) indexTxn(base int64, h header, ctrl int16) {
	if !h.transactional() || h.producerID < 0 {
		return
	}
	if !h.control() {
		if _, open := p.ongoing[h.producerID]; !open {
			p.ongoing[h.producerID] = base
		}
		return
	}
	first, open := p.ongoing[h.producerID]
	delete(p.ongoing, h.producerID)
	if ctrl == controlAbort && open {
		p.aborted = append(p.aborted, AbortedTxn{ProducerID: h.producerID, FirstOffset: first, LastOffset: base})
	}
	// The marker carries the producer's current epoch (bumped by the
	// coordinator when it fenced the producer): older batches are
	// refused from now on.
	ps := p.producers[h.producerID]
	if ps == nil {
		ps = &producerState{epoch: h.producerEpoch, marker: -1}
		p.producers[h.producerID] = ps
	}
	if h.producerEpoch > ps.epoch {
		ps.epoch, ps.recent = h.producerEpoch, ps.recent[:0]
	}
	ps.marker, ps.committed = h.producerEpoch, ctrl == controlCommit
}

// lastStable is the LSO. Callers hold mu. It is never below the log
// start, which may have passed an open transaction's first offset
// (DeleteRecords, retention), as Kafka's UnifiedLog.updateFirstUnstableOffset.
func (p *Partition) lastStable() int64 {
	lso := p.end
	for _, first := range p.ongoing {
		lso = min(lso, first)
	}
	return max(lso, p.logStart)
}

// LastStable returns the partition's last stable offset: the first offset
// of its oldest open transaction, else the high watermark.
func (p *Partition) LastStable() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastStable()
}

// WriteMarker appends a commit (or abort) marker of a producer's
// transaction, as Kafka's WriteTxnMarkers does on a partition leader, and
// returns the log end to Sync. It writes nothing if the producer has no
// open transaction here and the marker's epoch is not newer than the one
// the partition knows (a marker written again after a restart). A marker
// of an epoch older than the partition's is ErrInvalidProducerEpoch.
//
// above says the marker's epoch is above every batch of its transaction
// (an end with an epoch bump, KIP-890): batches open at the marker's
// epoch are then the producer's next transaction's, which a marker
// written again after a restart must not close; it writes nothing.
func (p *Partition) WriteMarker(pid int64, epoch int16, commit, above bool, ts int64) (int64, error) {
	b := markerBatch(pid, epoch, commit, ts)
	h, err := parseHeader(b)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrDeleted
	}
	ps := p.producers[pid]
	_, open := p.ongoing[pid]
	switch {
	case ps != nil && epoch < ps.epoch:
		return 0, ErrInvalidProducerEpoch
	case !open && ps != nil && epoch == ps.epoch:
		return p.end, nil
	case above && open && ps != nil && epoch == ps.epoch:
		return p.end, nil // the next transaction's batches
	}
	ctrl := int16(controlAbort)
	if commit {
		ctrl = controlCommit
	}
	if err := p.appendLocked(b, h, ctrl); err != nil {
		return 0, err
	}
	return p.end, nil
}

// ReadCommitted is Read for a read_committed consumer (isolation level
// 1): it returns only batches below the last stable offset, and the
// aborted transactions that overlap what it returns, for the consumer to
// drop (Kafka's FetchResponse AbortedTransactions).
func (p *Partition) ReadCommitted(offset int64, maxBytes int, atLeastOne bool) (ReadResult, []AbortedTxn, error) {
	return p.ReadCommittedOffsets(offset, maxBytes, 0, atLeastOne)
}

// ReadCommittedOffsets is ReadCommitted with ReadOffsets' maxOffsets.
func (p *Partition) ReadCommittedOffsets(offset int64, maxBytes int, maxOffsets int64, atLeastOne bool) (ReadResult, []AbortedTxn, error) {
	res, err := p.read(offset, maxBytes, maxOffsets, atLeastOne, true)
	if err != nil || len(res.Batches) == 0 {
		return res, nil, err
	}
	upper := res.upper
	p.mu.Lock()
	defer p.mu.Unlock()
	i := sort.Search(len(p.aborted), func(i int) bool { return p.aborted[i].LastOffset >= offset })
	var out []AbortedTxn
	for _, a := range p.aborted[i:] {
		if a.FirstOffset < upper {
			out = append(out, a)
		}
	}
	return res, out, nil
}

// ProducerInfo is one producer of a partition as DescribeProducers gives
// it.
type ProducerInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	LastSequence  int32
	// TxnStartOffset is the first offset of its open transaction, -1 if
	// none.
	TxnStartOffset int64
	// MarkerEpoch is the epoch of its last transaction marker, -1 if
	// none; MarkerCommit says whether that marker was a commit.
	MarkerEpoch  int16
	MarkerCommit bool
}

// Producers returns the partition's producers, by id.
func (p *Partition) Producers() []ProducerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ProducerInfo, 0, len(p.producers))
	for id, ps := range p.producers {
		pi := ProducerInfo{ProducerID: id, ProducerEpoch: ps.epoch, LastSequence: -1, TxnStartOffset: -1, MarkerEpoch: ps.marker, MarkerCommit: ps.committed}
		if n := len(ps.recent); n > 0 {
			pi.LastSequence = ps.recent[n-1].last
		}
		if first, ok := p.ongoing[id]; ok {
			pi.TxnStartOffset = first
		}
		out = append(out, pi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
