package record

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// shareGroupSamples are one value of each share group record kind.
func shareGroupSamples() map[string][]byte {
	rack := "r1"
	tps := []TopicPartitions{{TopicID: [16]byte{9}, Partitions: []int32{0, 2}}, {TopicID: [16]byte{8}, Partitions: []int32{5}}}
	return map[string][]byte{
		"share group":        ShareGroup{ID: "cgp_1", Epoch: 5, MetadataHash: 1 << 63}.Encode(),
		"share member":       ShareMember{RackID: &rack, ClientID: "c", ClientHost: "/h", Topics: []string{"a", "b"}}.Encode(),
		"share target epoch": ShareTargetEpoch{Epoch: 4}.Encode(),
		"share target":       ShareTarget{Topics: tps}.Encode(),
		"share current":      ShareCurrent{MemberEpoch: 4, PreviousMemberEpoch: 3, Assigned: tps}.Encode(),
		"share group partitions": ShareGroupPartitions{
			Initialized: []ShareStateTopic{{TopicID: [16]byte{9}, Name: "t", Partitions: []int32{0, 1, 2}, Timestamp: 17}},
			Deleting:    []ShareStateTopic{{TopicID: [16]byte{8}, Name: "u", Partitions: []int32{5}}},
		}.Encode(),
	}
}

// shareGroupReencoders decode a value of each kind and encode it again.
var shareGroupReencoders = map[string]func([]byte) ([]byte, bool){
	"share group": func(b []byte) ([]byte, bool) {
		v, err := DecodeShareGroup(b)
		return v.Encode(), err == nil
	},
	"share member": func(b []byte) ([]byte, bool) {
		v, err := DecodeShareMember(b)
		return v.Encode(), err == nil
	},
	"share target epoch": func(b []byte) ([]byte, bool) {
		v, err := DecodeShareTargetEpoch(b)
		return v.Encode(), err == nil
	},
	"share target": func(b []byte) ([]byte, bool) {
		v, err := DecodeShareTarget(b)
		return v.Encode(), err == nil
	},
	"share current": func(b []byte) ([]byte, bool) {
		v, err := DecodeShareCurrent(b)
		return v.Encode(), err == nil
	},
	"share group partitions": func(b []byte) ([]byte, bool) {
		v, err := DecodeShareGroupPartitions(b)
		return v.Encode(), err == nil
	},
}

// TestShareGroupValues: the share group values round-trip, decode to what
// was encoded, and are corrupt truncated, with a trailing byte or as
// another version.
func TestShareGroupValues(t *testing.T) {
	for name, v := range shareGroupSamples() {
		re, ok := shareGroupReencoders[name](v)
		if !ok || !bytes.Equal(re, v) {
			t.Fatalf("%s does not round-trip: %x → %x", name, v, re)
		}
		checkCorrupt(t, name, v, func(b []byte) error {
			if _, ok := shareGroupReencoders[name](b); !ok {
				return ErrCorrupt
			}
			return nil
		})
	}
	m, err := DecodeShareMember(shareGroupSamples()["share member"])
	if err != nil || *m.RackID != "r1" || !reflect.DeepEqual(m.Topics, []string{"a", "b"}) || m.ClientHost != "/h" {
		t.Fatalf("member decoded as %+v, %v", m, err)
	}
	p, err := DecodeShareGroupPartitions(shareGroupSamples()["share group partitions"])
	if err != nil || len(p.Initializing) != 0 || len(p.Initialized) != 1 || p.Initialized[0].Name != "t" ||
		p.Initialized[0].Timestamp != 17 || !reflect.DeepEqual(p.Deleting[0].Partitions, []int32{5}) {
		t.Fatalf("partitions decoded as %+v, %v", p, err)
	}
	// The decoders check their counts against the bytes left before
	// allocating, so a corrupt count is an error, not a huge allocation.
	huge := append([]byte{1}, 0xff, 0xff, 0xff, 0xff, 0x07)
	if _, err := DecodeShareGroupPartitions(huge); !errors.Is(err, ErrCorrupt) {
		t.Errorf("absurd topic count: %v", err)
	}
	// Pin version 1's bytes.
	if got := hex.EncodeToString(ShareCurrent{MemberEpoch: 2, PreviousMemberEpoch: 1, Assigned: []TopicPartitions{{TopicID: [16]byte{1}, Partitions: []int32{3}}}}.Encode()); got !=
		"01"+"00000002"+"00000001"+"00"+"02"+"01000000000000000000000000000000"+"02"+"00000003" {
		t.Errorf("share current v1 bytes: %s", got)
	}
	if got := hex.EncodeToString(ShareGroup{ID: "g", Epoch: 1, MetadataHash: 2}.Encode()); got != "01"+"0267"+"00000001"+"0000000000000002" {
		t.Errorf("share group v1 bytes: %s", got)
	}
}

// TestShareGroupKeys: the share group keys parse back to the group or
// member they name, sit under their group's prefix, sort the group's
// epoch record before the members' and are kinds 50–55.
func TestShareGroupKeys(t *testing.T) {
	g := GroupKey{7, "t", "g"}
	for _, kind := range []Kind{KindShareGroup, KindShareTargetEpoch, KindShareGroupPartitions} {
		if got, v, err := ParseKey(g.KindKey(kind)); err != nil || got != kind || v != g {
			t.Fatalf("group key %v: %v %+v %v", kind, got, v, err)
		}
		if !IsShareGroupKind(kind) {
			t.Errorf("%v is not a share group kind", kind)
		}
	}
	for _, kind := range []Kind{KindShareMember, KindShareTarget, KindShareCurrent} {
		k := MemberKey{g, kind, "member-1"}
		if got, v, err := ParseKey(k.Key()); err != nil || got != kind || v != k {
			t.Fatalf("member key %v: %v %+v %v", kind, got, v, err)
		}
		if !bytes.HasPrefix(k.Key(), GroupPrefix(kind, g)) {
			t.Fatalf("member key %v lacks its group prefix", kind)
		}
		if bytes.Compare(g.KindKey(KindShareGroup), k.Key()) >= 0 {
			t.Errorf("member key %v sorts before the group's epoch record", kind)
		}
	}
	for _, kind := range []Kind{KindShareSnapshot, KindShareUpdate, KindConsumerGroup, KindTxnOffset} {
		if IsShareGroupKind(kind) {
			t.Errorf("%v counted as a share group kind", kind)
		}
	}
	if KindShareGroup != 50 || KindShareGroupPartitions != 55 || KindShareCurrent.String() != "share-current" {
		t.Errorf("share group kinds moved: %d…%d", KindShareGroup, KindShareGroupPartitions)
	}
}
