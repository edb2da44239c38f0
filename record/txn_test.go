package record

import (
	"errors"
	"reflect"
	"testing"
)

func TestTxnRoundTrip(t *testing.T) {
	v := Txn{ProducerID: 7, PrevProducerID: -1, ProducerEpoch: 3, LastProducerEpoch: 2, TimeoutMs: 60000,
		State: TxnOngoing, Partitions: []TxnPartition{{"a", 0}, {"b", 3}}, Groups: []string{"g"},
		StartTimestamp: 10, UpdateTimestamp: 11, Bumped: true}
	got, err := DecodeTxn(v.Encode())
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := DecodeTxn(append(v.Encode(), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	bad := v
	bad.State = 9
	if _, err := DecodeTxn(bad.Encode()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("state 9: %v", err)
	}
}

func TestTxnKeys(t *testing.T) {
	k := TxnKey{Shard: TxnShardBase + 2, Tenant: "t", TxnID: "tx"}
	kind, got, err := ParseKey(k.Key())
	if err != nil || kind != KindTxn || got != k {
		t.Fatalf("txn key: %v %+v %v", kind, got, err)
	}
	o := TxnOffsetKey{GroupKey: GroupKey{Shard: 3, Tenant: "", Group: "g"}, ProducerID: 1 << 40, Topic: "x", Partition: 5}
	kind, got, err = ParseKey(o.Key())
	if err != nil || kind != KindTxnOffset || got != o {
		t.Fatalf("txn offset key: %v %+v %v", kind, got, err)
	}
	if _, _, err := ParseKey(o.Key()[:len(o.Key())-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short key: %v", err)
	}
}
