package record

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Transaction records (kinds 30–39). A transaction coordinator shard
// (TxnShard) holds one KindTxn record per transactional id, Kafka's
// __transaction_state TransactionLogValue; a group coordinator shard holds
// the pending transactional offsets of its groups (KindTxnOffset), which a
// transaction's commit turns into KindOffset records and its abort
// deletes, as Kafka's group coordinator does on a transaction marker.
const (
	// KindTxn is a transactional id's metadata: producer id and epoch,
	// state, partitions and groups of the transaction in progress.
	KindTxn Kind = 30
	// KindTxnOffset is one pending transactional offset of a group: a
	// TxnOffsetCommit of a producer whose transaction has not ended.
	KindTxnOffset Kind = 31
)

// TxnShardBase is the first transaction coordinator shard: shard i of the
// transaction coordinator writes its records under TxnShardBase+i, above
// the assigner's shard, so that no other machine loads them.
const TxnShardBase uint16 = AssignerShard + 1

// TxnKey names a transactional id's record: the tenant and the id stand
// where a group's tenant and name do.
type TxnKey struct {
	Shard  uint16
	Tenant string
	TxnID  string
}

// Key encodes the key.
func (k TxnKey) Key() []byte {
	return GroupPrefix(KindTxn, GroupKey{Shard: k.Shard, Tenant: k.Tenant, Group: k.TxnID})
}

// TxnOffsetKey names a pending transactional offset: the group, the
// producer whose transaction holds it, the partition.
type TxnOffsetKey struct {
	GroupKey
	ProducerID int64
	Topic      string
	Partition  int32
}

// Key encodes the key.
func (k TxnOffsetKey) Key() []byte {
	b := GroupPrefix(KindTxnOffset, k.GroupKey)
	b = binary.BigEndian.AppendUint64(b, uint64(k.ProducerID))
	b = appendKeyString(b, k.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// parseTxnKey decodes the rest of a KindTxn or KindTxnOffset key after
// the group part (ParseKey's cases).
func parseTxnKey(kind Kind, g GroupKey, r *keyReader) any {
	if kind == KindTxn {
		return TxnKey{Shard: g.Shard, Tenant: g.Tenant, TxnID: g.Group}
	}
	k := TxnOffsetKey{GroupKey: g}
	if len(r.b) < 8 {
		r.err, r.b = ErrCorrupt, nil
		return k
	}
	k.ProducerID = int64(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	k.Topic = r.string()
	k.Partition = int32(r.uint32())
	return k
}

// TxnState is a transaction's state, Kafka's TransactionState; the
// numbers are Kafka's transaction log's and part of the on-disk format.
type TxnState int8

const (
	TxnEmpty          TxnState = 0
	TxnOngoing        TxnState = 1
	TxnPrepareCommit  TxnState = 2
	TxnPrepareAbort   TxnState = 3
	TxnCompleteCommit TxnState = 4
	TxnCompleteAbort  TxnState = 5
	TxnDead           TxnState = 6
)

// String is Kafka's name of the state, as DescribeTransactions and
// ListTransactions give it.
func (s TxnState) String() string {
	switch s {
	case TxnEmpty:
		return "Empty"
	case TxnOngoing:
		return "Ongoing"
	case TxnPrepareCommit:
		return "PrepareCommit"
	case TxnPrepareAbort:
		return "PrepareAbort"
	case TxnCompleteCommit:
		return "CompleteCommit"
	case TxnCompleteAbort:
		return "CompleteAbort"
	case TxnDead:
		return "Dead"
	}
	return fmt.Sprintf("TxnState(%d)", int8(s))
}

// TxnPartition is a partition of a transaction.
type TxnPartition struct {
	Topic     string
	Partition int32
}

// Txn is a transactional id's record value, as Kafka's
// TransactionLogValue.
type Txn struct {
	ProducerID int64
	// PrevProducerID is the producer id before the last one was
	// exhausted (-1: none), so that a retried InitProducerId that
	// crossed over is recognised (KIP-360).
	PrevProducerID int64
	ProducerEpoch  int16
	// LastProducerEpoch is the epoch before the last bump (-1: none): a
	// retry of the bump (InitProducerId, KIP-360; EndTxn v5, KIP-890)
	// names it.
	LastProducerEpoch int16
	TimeoutMs         int32
	State             TxnState
	// Partitions and Groups are the transaction's data partitions and
	// the groups it commits offsets to, sorted.
	Partitions []TxnPartition
	Groups     []string
	// StartTimestamp is when the transaction became Ongoing, and
	// UpdateTimestamp when the record was written (Unix ms).
	StartTimestamp  int64
	UpdateTimestamp int64
	// Bumped is set when the transaction ends with a KIP-890 epoch bump
	// (EndTxn v5+): its markers carry the bumped epoch.
	Bumped bool
}

// Encode returns the value's bytes.
func (t Txn) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendInt64(b, t.ProducerID)
	b = kbin.AppendInt64(b, t.PrevProducerID)
	b = kbin.AppendInt16(b, t.ProducerEpoch)
	b = kbin.AppendInt16(b, t.LastProducerEpoch)
	b = kbin.AppendInt32(b, t.TimeoutMs)
	b = kbin.AppendInt8(b, int8(t.State))
	b = kbin.AppendCompactArrayLen(b, len(t.Partitions))
	for _, p := range t.Partitions {
		b = kbin.AppendCompactString(b, p.Topic)
		b = kbin.AppendInt32(b, p.Partition)
	}
	b = kbin.AppendCompactArrayLen(b, len(t.Groups))
	for _, g := range t.Groups {
		b = kbin.AppendCompactString(b, g)
	}
	b = kbin.AppendInt64(b, t.StartTimestamp)
	b = kbin.AppendInt64(b, t.UpdateTimestamp)
	return kbin.AppendBool(b, t.Bumped)
}

// DecodeTxn decodes a Txn value.
func DecodeTxn(v []byte) (Txn, error) {
	var t Txn
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return t, err
	}
	t.ProducerID = r.Int64()
	t.PrevProducerID = r.Int64()
	t.ProducerEpoch = r.Int16()
	t.LastProducerEpoch = r.Int16()
	t.TimeoutMs = r.Int32()
	t.State = TxnState(r.Int8())
	n := r.CompactArrayLen()
	// Each partition takes at least 5 bytes, each group 1: bounds before
	// allocating, so that a corrupt count cannot ask for gigabytes.
	if n < 0 || int(n) > len(r.Src)/5 {
		return t, fmt.Errorf("%w: transaction with %d partitions in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	for range n {
		t.Partitions = append(t.Partitions, TxnPartition{Topic: r.CompactString(), Partition: r.Int32()})
	}
	n = r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return t, fmt.Errorf("%w: transaction with %d groups in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	for range n {
		t.Groups = append(t.Groups, r.CompactString())
	}
	t.StartTimestamp = r.Int64()
	t.UpdateTimestamp = r.Int64()
	t.Bumped = readBool(r)
	if err := complete(r, "transaction"); err != nil {
		return t, err
	}
	if t.State < TxnEmpty || t.State > TxnDead {
		return t, fmt.Errorf("%w: transaction state %d", ErrCorrupt, t.State)
	}
	return t, nil
}
