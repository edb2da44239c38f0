package topics

import "math"

// producerState is what a partition remembers of one idempotent producer:
// its epoch and the sequence ranges of its last few batches, as Kafka's
// ProducerStateManager does. It is derived from the batch headers in the
// log, so it needs no storage of its own and survives restarts.
type producerState struct {
	epoch  int16
	recent []seqRange // oldest first, at most maxRecentBatches
	// marker is the epoch of the producer's last transaction marker, -1
	// if none; committed says whether it was a commit (txn.go).
	marker    int16
	committed bool
}

type seqRange struct {
	first, last int32
	offset      int64
}

// maxRecentBatches matches the five in-flight requests an idempotent
// producer may have, so any retry of an acknowledged batch is recognised.
const maxRecentBatches = 5

// check applies Kafka's sequence rules to a batch from this producer. It
// returns the original offset and true for a retry of a batch already in the
// log; ErrInvalidProducerEpoch for a fenced (older) epoch;
// ErrOutOfOrderSequence for a gap. As Kafka, a producer the partition has
// never seen may start at any sequence, and a new epoch must start at 0.
func (s *producerState) check(epoch int16, first, last int32) (int64, bool, error) {
	if s == nil {
		return 0, false, nil
	}
	switch {
	case epoch < s.epoch:
		return 0, false, ErrInvalidProducerEpoch
	case epoch > s.epoch:
		if first != 0 {
			return 0, false, ErrOutOfOrderSequence
		}
		return 0, false, nil
	}
	for _, r := range s.recent {
		if r.first == first && r.last == last {
			return r.offset, true, nil
		}
	}
	if len(s.recent) > 0 {
		prev := s.recent[len(s.recent)-1].last
		next := prev + 1
		if prev == 1<<31-1 {
			next = 0
		}
		if first != next {
			return 0, false, ErrOutOfOrderSequence
		}
	}
	return 0, false, nil
}

// record notes a batch written at offset.
func (s *producerState) record(epoch int16, first, last int32, offset int64) {
	if epoch != s.epoch {
		s.epoch = epoch
		s.recent = s.recent[:0]
	}
	if len(s.recent) == maxRecentBatches {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:maxRecentBatches-1]
	}
	s.recent = append(s.recent, seqRange{first: first, last: last, offset: offset})
}

// lastSequence is the sequence of a batch's last record. Sequences wrap from
// MaxInt32 to 0, as Kafka's DefaultRecordBatch.incrementSequence.
func lastSequence(first, lastOffsetDelta int32) int32 {
	if lastOffsetDelta > math.MaxInt32-first {
		return lastOffsetDelta - (math.MaxInt32 - first) - 1
	}
	return first + lastOffsetDelta
}
