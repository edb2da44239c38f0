package record

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Share-partition state records (kinds 40–49): the durable state of a
// share group's partition (KIP-932), as Kafka keeps it in
// __share_group_state. A share-state shard (ShareStateShardBase+i) holds,
// per (tenant, group, topic id, partition), one KindShareSnapshot record
// (Kafka's ShareSnapshot: the start offset, the state epoch and every
// in-flight batch with its state and delivery count) and up to the
// snapshot interval of KindShareUpdate records (Kafka's ShareUpdate: a
// delta on the snapshot).
//
// The updates of a partition live in numbered slots (ShareUpdateKey.Slot
// 1, 2, …, counting from the snapshot) rather than in one ever-growing
// log: a new snapshot starts the count again and the next updates
// overwrite the old slots, so a partition never has more update records
// than the snapshot interval and no snapshot has to delete any. Each
// update names the snapshot it follows (SnapshotEpoch, as Kafka's); one
// left over from an earlier snapshot is stale and replay skips it. Keys
// sort snapshots before updates and slots in order, so a load replays a
// partition's snapshot and then its updates oldest first.
const (
	// KindShareSnapshot is a share partition's whole durable state.
	KindShareSnapshot Kind = 40
	// KindShareUpdate is a change to the state since the snapshot.
	KindShareUpdate Kind = 41
)

// ShareStateShardBase is the first share-state shard: shard i of the
// share coordinator writes its records under ShareStateShardBase+i. The
// shards above the assigner's are split in two: the transaction
// coordinator's below this one (so at most ShareStateShardBase -
// TxnShardBase of them), the share coordinator's from it.
const ShareStateShardBase uint16 = 0xC000

// ShareKey names a share partition's snapshot record: the group (its
// tenant and id) and the partition, by topic id as Kafka's
// ShareSnapshotKey, so that a topic deleted and created again under the
// same name starts afresh.
type ShareKey struct {
	Shard     uint16
	Tenant    string
	Group     string
	TopicID   [16]byte
	Partition int32
}

// Key encodes the snapshot's key.
func (k ShareKey) Key() []byte { return k.appendTo(KindShareSnapshot, 0) }

func (k ShareKey) appendTo(kind Kind, extra int) []byte {
	b := groupKey(kind, GroupKey{Shard: k.Shard, Tenant: k.Tenant, Group: k.Group}, 20+extra)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// ShareUpdateKey names one of a share partition's update slots.
type ShareUpdateKey struct {
	ShareKey
	// Slot is the update's number since its snapshot, from 1.
	Slot uint32
}

// Key encodes the key.
func (k ShareUpdateKey) Key() []byte {
	return binary.BigEndian.AppendUint32(k.appendTo(KindShareUpdate, 4), k.Slot)
}

// parseShareKey decodes the rest of a share-state key after the group
// part (ParseKey's cases).
func parseShareKey(kind Kind, g GroupKey, r *keyReader) any {
	k := ShareKey{Shard: g.Shard, Tenant: g.Tenant, Group: g.Group}
	if len(r.b) < 16 {
		r.err, r.b = ErrCorrupt, nil
		return k
	}
	copy(k.TopicID[:], r.b)
	r.b = r.b[16:]
	k.Partition = int32(r.uint32())
	if kind == KindShareSnapshot {
		return k
	}
	return ShareUpdateKey{ShareKey: k, Slot: r.uint32()}
}

// ShareState is a record's delivery state, Kafka's RecordState; the
// numbers are Kafka's and part of the on-disk format. Acquired is never a
// batch's state: an acquisition is a ShareLock over available records.
type ShareState int8

const (
	ShareAvailable    ShareState = 0
	ShareAcquired     ShareState = 1
	ShareAcknowledged ShareState = 2
	// ShareArchiving is a record on its way to the group's dead-letter
	// topic (KIP-1191): never delivered again, archived once written
	// there, and the start offset does not pass it until then.
	ShareArchiving ShareState = 3
	ShareArchived  ShareState = 4
)

// String is the state's name as Kafka spells it.
func (s ShareState) String() string {
	switch s {
	case ShareAvailable:
		return "AVAILABLE"
	case ShareAcquired:
		return "ACQUIRED"
	case ShareAcknowledged:
		return "ACKNOWLEDGED"
	case ShareArchiving:
		return "ARCHIVING"
	case ShareArchived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("ShareState(%d)", int8(s))
}

// ShareBatch is a run of offsets, First to Last inclusive, in one state
// with one delivery count (Kafka's StateBatch).
type ShareBatch struct {
	First, Last   int64
	State         ShareState
	DeliveryCount int16
}

// ShareSnapshot is a share partition's snapshot value, as Kafka's
// ShareSnapshotValue.
type ShareSnapshot struct {
	// StateEpoch is bumped when the state is reset
	// (AlterShareGroupOffsets).
	StateEpoch int32
	// SnapshotEpoch numbers the partition's snapshots; the updates
	// after this one carry it.
	SnapshotEpoch uint32
	// StartOffset is the share-partition start offset (SPSO).
	StartOffset int64
	// Batches are the offsets at or above StartOffset whose state is
	// not "available, never delivered", sorted and disjoint.
	Batches []ShareBatch
	// Locks are the acquisitions in force, sorted and disjoint (version
	// 2; none in version 1).
	Locks []ShareLock
}

// ShareLock is an acquisition: offsets First to Last delivered to Member
// for the DeliveryCount-th time, held until Deadline (Unix nanoseconds);
// Limit and Duration (nanoseconds) are the delivery limit and lock
// duration it was taken under, DeadLetter whether its group had a
// dead-letter topic then (its rejection or last release sends the
// records there). Kafka keeps acquisitions in the
// share-partition leader's memory only; Cohort's share state may live on
// another node than the partition's leader, and a lock must outlive that
// node (coordinator/sharestate).
type ShareLock struct {
	First, Last          int64
	Member               string
	DeliveryCount, Limit int16
	Duration, Deadline   int64
	DeadLetter           bool
}

// ShareUpdate is a share partition's update value, as Kafka's
// ShareUpdateValue: Batches replace the state of their offsets, then the
// start offset moves to StartOffset (-1: it does not move).
type ShareUpdate struct {
	SnapshotEpoch uint32
	StartOffset   int64
	Batches       []ShareBatch
	// HasLocks: Locks replace the partition's locks within offsets
	// LockFirst to LockLast, where they all lie (version 2). A version 1
	// update leaves the locks as they were.
	HasLocks            bool
	LockFirst, LockLast int64
	Locks               []ShareLock
}

// shareBatchLen is the encoded size of a ShareBatch.
const shareBatchLen = 8 + 8 + 1 + 2

// Encode returns the value's bytes.
func (s ShareSnapshot) Encode() []byte {
	b := make([]byte, 0, 1+4+4+8+5+len(s.Batches)*shareBatchLen)
	version := byte(valueVersion1)
	if len(s.Locks) > 0 {
		version = valueVersion2
	}
	b = append(b, version)
	b = kbin.AppendInt32(b, s.StateEpoch)
	b = kbin.AppendUint32(b, s.SnapshotEpoch)
	b = kbin.AppendInt64(b, s.StartOffset)
	b = appendShareBatches(b, s.Batches)
	if version == valueVersion2 {
		b = appendShareLocks(b, s.Locks)
	}
	return b
}

// DecodeShareSnapshot decodes a ShareSnapshot value.
func DecodeShareSnapshot(v []byte) (ShareSnapshot, error) {
	var s ShareSnapshot
	r, v2, err := shareValueReader(v)
	if err != nil {
		return s, err
	}
	s.StateEpoch = r.Int32()
	s.SnapshotEpoch = r.Uint32()
	s.StartOffset = r.Int64()
	if s.Batches, err = readShareBatches(r, "share snapshot"); err != nil {
		return s, err
	}
	if v2 {
		if s.Locks, err = readShareLocks(r, "share snapshot"); err != nil {
			return s, err
		}
		if len(s.Locks) == 0 {
			return s, fmt.Errorf("%w: share snapshot version 2 without a lock", ErrCorrupt)
		}
	}
	if err := complete(r, "share snapshot"); err != nil {
		return s, err
	}
	if s.StartOffset < 0 || len(s.Batches) > 0 && s.Batches[0].First < s.StartOffset {
		return s, fmt.Errorf("%w: share snapshot batches below its start offset %d", ErrCorrupt, s.StartOffset)
	}
	return s, nil
}

// Encode returns the value's bytes.
func (u ShareUpdate) Encode() []byte {
	b := make([]byte, 0, 1+4+8+5+len(u.Batches)*shareBatchLen)
	version := byte(valueVersion1)
	if u.HasLocks {
		version = valueVersion2
	}
	b = append(b, version)
	b = kbin.AppendUint32(b, u.SnapshotEpoch)
	b = kbin.AppendInt64(b, u.StartOffset)
	b = appendShareBatches(b, u.Batches)
	if u.HasLocks {
		b = kbin.AppendInt64(b, u.LockFirst)
		b = kbin.AppendInt64(b, u.LockLast)
		b = appendShareLocks(b, u.Locks)
	}
	return b
}

// DecodeShareUpdate decodes a ShareUpdate value.
func DecodeShareUpdate(v []byte) (ShareUpdate, error) {
	var u ShareUpdate
	r, v2, err := shareValueReader(v)
	if err != nil {
		return u, err
	}
	u.SnapshotEpoch = r.Uint32()
	u.StartOffset = r.Int64()
	if u.Batches, err = readShareBatches(r, "share update"); err != nil {
		return u, err
	}
	if u.HasLocks = v2; v2 {
		u.LockFirst, u.LockLast = r.Int64(), r.Int64()
		if u.Locks, err = readShareLocks(r, "share update"); err != nil {
			return u, err
		}
		if u.LockFirst < 0 || u.LockLast < u.LockFirst {
			return u, fmt.Errorf("%w: share update lock span %d-%d", ErrCorrupt, u.LockFirst, u.LockLast)
		}
		if n := len(u.Locks); n > 0 && (u.Locks[0].First < u.LockFirst || u.Locks[n-1].Last > u.LockLast) {
			return u, fmt.Errorf("%w: share update locks outside their span %d-%d", ErrCorrupt, u.LockFirst, u.LockLast)
		}
	}
	if err := complete(r, "share update"); err != nil {
		return u, err
	}
	if u.StartOffset < -1 {
		return u, fmt.Errorf("%w: share update start offset %d", ErrCorrupt, u.StartOffset)
	}
	return u, nil
}

func appendShareBatches(b []byte, bs []ShareBatch) []byte {
	b = kbin.AppendCompactArrayLen(b, len(bs))
	for _, x := range bs {
		b = kbin.AppendInt64(b, x.First)
		b = kbin.AppendInt64(b, x.Last)
		b = kbin.AppendInt8(b, int8(x.State))
		b = kbin.AppendInt16(b, x.DeliveryCount)
	}
	return b
}

// readShareBatches reads the batches and checks what every writer
// guarantees: offsets not negative, each batch First ≤ Last, in a stored
// state, with a delivery count not negative, sorted and disjoint.
func readShareBatches(r *kbin.Reader, what string) ([]ShareBatch, error) {
	n := r.CompactArrayLen()
	// A bound before allocating, so that a corrupt count cannot ask for
	// gigabytes.
	if n < 0 || int(n) > len(r.Src)/shareBatchLen {
		return nil, fmt.Errorf("%w: %s with %d batches in %d bytes", ErrCorrupt, what, n, len(r.Src))
	}
	var bs []ShareBatch
	if n > 0 {
		bs = make([]ShareBatch, n)
	}
	for i := range bs {
		x := &bs[i]
		x.First, x.Last = r.Int64(), r.Int64()
		x.State, x.DeliveryCount = ShareState(r.Int8()), r.Int16()
		switch {
		case x.First < 0 || x.Last < x.First:
			return nil, fmt.Errorf("%w: %s batch %d-%d", ErrCorrupt, what, x.First, x.Last)
		case x.State != ShareAvailable && x.State != ShareAcknowledged && x.State != ShareArchiving && x.State != ShareArchived:
			return nil, fmt.Errorf("%w: %s batch state %d", ErrCorrupt, what, x.State)
		case x.DeliveryCount < 0:
			return nil, fmt.Errorf("%w: %s delivery count %d", ErrCorrupt, what, x.DeliveryCount)
		case i > 0 && x.First <= bs[i-1].Last:
			return nil, fmt.Errorf("%w: %s batches out of order at %d", ErrCorrupt, what, x.First)
		}
	}
	return bs, nil
}

// shareValueReader reads a share-state value's version byte: 1, or 2,
// which appends the locks.
func shareValueReader(v []byte) (*kbin.Reader, bool, error) {
	if len(v) == 0 || v[0] != valueVersion1 && v[0] != valueVersion2 {
		return nil, false, fmt.Errorf("%w: share state value version", ErrCorrupt)
	}
	return &kbin.Reader{Src: v[1:]}, v[0] == valueVersion2, nil
}

// shareLockMin is the least encoded size of a ShareLock (an empty
// member).
const shareLockMin = 8 + 8 + 1 + 2 + 2 + 8 + 8 + 1

func appendShareLocks(b []byte, ls []ShareLock) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ls))
	for _, l := range ls {
		b = kbin.AppendInt64(b, l.First)
		b = kbin.AppendInt64(b, l.Last)
		b = kbin.AppendCompactString(b, l.Member)
		b = kbin.AppendInt16(b, l.DeliveryCount)
		b = kbin.AppendInt16(b, l.Limit)
		b = kbin.AppendInt64(b, l.Duration)
		b = kbin.AppendInt64(b, l.Deadline)
		b = kbin.AppendBool(b, l.DeadLetter)
	}
	return b
}

// readShareLocks reads the locks and checks what every writer
// guarantees: offsets not negative, each First ≤ Last, sorted and
// disjoint, a member, a delivery count from 1 to the limit, a positive
// duration.
func readShareLocks(r *kbin.Reader, what string) ([]ShareLock, error) {
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src)/shareLockMin {
		return nil, fmt.Errorf("%w: %s with %d locks in %d bytes", ErrCorrupt, what, n, len(r.Src))
	}
	var ls []ShareLock
	if n > 0 {
		ls = make([]ShareLock, n)
	}
	for i := range ls {
		l := &ls[i]
		l.First, l.Last = r.Int64(), r.Int64()
		l.Member = r.CompactString()
		l.DeliveryCount, l.Limit = r.Int16(), r.Int16()
		l.Duration, l.Deadline = r.Int64(), r.Int64()
		l.DeadLetter = readBool(r)
		switch {
		case l.First < 0 || l.Last < l.First:
			return nil, fmt.Errorf("%w: %s lock %d-%d", ErrCorrupt, what, l.First, l.Last)
		case l.Member == "" || l.DeliveryCount < 1 || l.DeliveryCount > l.Limit || l.Duration <= 0:
			return nil, fmt.Errorf("%w: %s lock %d-%d: member %q, delivery %d of %d, duration %d", ErrCorrupt, what, l.First, l.Last, l.Member, l.DeliveryCount, l.Limit, l.Duration)
		case i > 0 && l.First <= ls[i-1].Last:
			return nil, fmt.Errorf("%w: %s locks out of order at %d", ErrCorrupt, what, l.First)
		}
	}
	return ls, nil
}
