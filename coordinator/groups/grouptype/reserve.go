package grouptype

import (
	"github.com/cohort-dev/cohort/record"
)

// Reserver is how a group shard reserves the offsets of its
// __consumer_offsets partition (package offsetstopic): a record of the
// shard, KindOffsetsTopic, saying that offsets below Reserved may be
// shown. The partition shows an offset only once a reservation above it
// is durable, and a load numbers the shard's records from the largest
// reservation on, so that after a crash no offset is handed out twice
// and none goes backwards. The shard emits a reservation at load (the
// loaded records need covering) and whenever the records it emitted
// since come within half a block of the last one; it is the first record
// of its event's output, so it is in the first batch the runtime writes.
type Reserver struct {
	// Block is how far ahead of the records emitted a reservation
	// reaches (offsetstopic.ReserveBlock); 0: no reservations (the
	// coordinator does not serve the topic).
	Block int64
	// Reserved is the largest reservation replayed: durable state.
	Reserved int64

	upper int64 // the offsets the records emitted so far may take, at most
	asked int64 // the largest reservation emitted
}

// Replay takes up a reservation record's value.
func (r *Reserver) Replay(v []byte) error {
	o, err := record.DecodeOffsetsTopic(v)
	if err != nil {
		return err
	}
	r.Reserved = max(r.Reserved, o.Reserved)
	return nil
}

// Start begins after a load that replayed records records besides the
// reservations: they may take the offsets from Reserved on, and the
// next call of Next asks for a reservation above them.
func (r *Reserver) Start(records int64) {
	r.upper = r.Reserved + records
	r.asked = r.Reserved
}

// Next counts n more records emitted and returns the reservation to
// write with them, if one is due.
func (r *Reserver) Next(n int) (reserve int64, ok bool) {
	if r.Block <= 0 {
		return 0, false
	}
	r.upper += int64(n)
	if r.upper < r.asked-r.Block/2 {
		return 0, false
	}
	r.asked = r.upper + r.Block
	return r.asked, true
}

// Add counts n records the partition shows beyond the ones the shard
// emitted: a lazy partition shows the shard's records again when a
// reader wakes it (offsetstopic.Options.Scan). The next Flush reserves
// above them if they bring the records within half a block of the last
// reservation.
func (r *Reserver) Add(n int64) {
	if n > 0 {
		r.upper += n
	}
}
