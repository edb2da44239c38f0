package record

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestTopicRoundTrip: a topic record decodes to what was encoded, and a
// truncated one is corrupt.
func TestTopicRoundTrip(t *testing.T) {
	for _, tp := range []Topic{
		{ID: [16]byte{1}, Leaders: []int32{0}},
		{ID: [16]byte{2, 3}, Leaders: []int32{1, 2, 3, 1}, Configs: map[string]string{"cleanup.policy": "compact", "retention.ms": "1000"}},
	} {
		v := tp.Encode()
		got, err := DecodeTopic(v)
		if err != nil || !reflect.DeepEqual(got, tp) {
			t.Fatalf("round trip of %+v: %+v %v", tp, got, err)
		}
		if _, err := DecodeTopic(v[:len(v)-1]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated %+v decoded: %v", tp, err)
		}
	}
	if name, err := ParseTopicKey(TopicKey("acme/orders")); err != nil || name != "acme/orders" {
		t.Fatalf("key round trip: %q %v", name, err)
	}
}

// TestUpgradeGlobal: each kind of record a version before the global unit
// wrote becomes the unit's record of the same content.
func TestUpgradeGlobal(t *testing.T) {
	id := "0102030405060708090a0b0c0d0e0f10"
	k, v, err := UpgradeGlobal([]byte("topic/t"), []byte(`{"v":2,"name":"t","id":"`+id+`","partitions":2,"configs":{"a":"b"},"leaders":[3,4]}`))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := DecodeTopic(v)
	if err != nil || !bytes.Equal(k, TopicKey("t")) || tp.ID != [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} ||
		!reflect.DeepEqual(tp.Leaders, []int32{3, 4}) || tp.Configs["a"] != "b" {
		t.Fatalf("v2 topic: %q %+v %v", k, tp, err)
	}
	_, v, err = UpgradeGlobal([]byte("topic/t"), []byte(`{"v":1,"name":"t","id":"`+id+`","partitions":3}`))
	if tp, _ := DecodeTopic(v); err != nil || !reflect.DeepEqual(tp.Leaders, []int32{0, 0, 0}) || tp.Configs != nil {
		t.Fatalf("v1 topic: %+v %v", tp, err)
	}
	if _, _, err := UpgradeGlobal([]byte("topic/u"), []byte(`{"v":1,"name":"t","id":"`+id+`","partitions":3}`)); err == nil {
		t.Error("a topic record under another name's key upgraded")
	}
	k, v, err = UpgradeGlobal([]byte("meta/cluster-id"), []byte("abc"))
	if m, _ := DecodeMetaValue(v); err != nil || !bytes.Equal(k, MetaKey(MetaClusterID)) || string(m) != "abc" {
		t.Fatalf("meta: %q %q %v", k, m, err)
	}
	acl := ACL{ResourceType: 2, PatternType: 3, Name: "t", Principal: "User:a", Host: "*", Operation: 3, Permission: 3, Tenant: "acme"}
	legacy := append([]byte{'a'}, acl.Key()[len(ShardPrefix(GlobalShard)):]...)
	k, v, err = UpgradeGlobal(legacy, ACLValue())
	if got, perr := ParseACLKey(k); err != nil || perr != nil || got != acl || !bytes.Equal(v, ACLValue()) {
		t.Fatalf("ACL: %+v %v %v", got, err, perr)
	}
	if _, _, err := UpgradeGlobal([]byte("x/unknown"), nil); err == nil {
		t.Error("an unknown key upgraded")
	}
}
