package record

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

func randString(rng *rand.Rand, max int) string {
	b := make([]byte, rng.Intn(max+1))
	for i := range b {
		b[i] = byte(rng.Intn(256))
	}
	return string(b)
}

func randNullable(rng *rand.Rand) *string {
	if rng.Intn(3) == 0 {
		return nil
	}
	s := randString(rng, 20)
	return &s
}

func randGroup(rng *rand.Rand) ClassicGroup {
	g := ClassicGroup{
		ID:             "cgp_" + randString(rng, 26),
		ProtocolType:   randString(rng, 10),
		Generation:     rng.Int31() - 1<<30,
		Protocol:       randNullable(rng),
		Leader:         randNullable(rng),
		StateTimestamp: rng.Int63(),
	}
	for i := rng.Intn(6); i > 0; i-- {
		g.Members = append(g.Members, ClassicMember{
			MemberID:         randString(rng, 40),
			InstanceID:       randNullable(rng),
			ClientID:         randString(rng, 10),
			ClientHost:       randString(rng, 16),
			RebalanceTimeout: rng.Int31(),
			SessionTimeout:   rng.Int31(),
			Subscription:     []byte(randString(rng, 300)),
			Assignment:       []byte(randString(rng, 300)),
		})
	}
	return g
}

func TestValuesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		o := Offset{Offset: rng.Int63(), LeaderEpoch: rng.Int31() - 1, Metadata: randString(rng, 5000), CommitTimestamp: rng.Int63()}
		rng.Read(o.TopicID[:])
		got, err := DecodeOffset(o.Encode())
		if err != nil || !reflect.DeepEqual(got, o) {
			t.Fatalf("offset round trip: %+v, %v; want %+v", got, err, o)
		}

		g := randGroup(rng)
		enc := g.Encode()
		dg, err := DecodeClassicGroup(enc)
		if err != nil {
			t.Fatalf("decode classic group: %v", err)
		}
		// Empty and nil byte slices encode alike.
		for i := range g.Members {
			for _, b := range []*[]byte{&g.Members[i].Subscription, &g.Members[i].Assignment} {
				if len(*b) == 0 {
					*b = []byte{}
				}
			}
		}
		if !reflect.DeepEqual(dg, g) {
			t.Fatalf("classic group round trip:\n got %+v\nwant %+v", dg, g)
		}
		enc[len(enc)-1] ^= 0xff // decoded slices must not alias the input
		if !reflect.DeepEqual(dg.Members, g.Members) && len(g.Members) > 0 {
			t.Fatal("decoded group aliases the encoded bytes")
		}
	}
}

func TestKeysRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		g := GroupKey{Shard: uint16(rng.Intn(1 << 16)), Tenant: randString(rng, 10), Group: randString(rng, 300)}
		o := OffsetKey{GroupKey: g, Topic: randString(rng, 249), Partition: rng.Int31() - 1<<30}
		if kind, got, err := ParseKey(g.Key()); err != nil || kind != KindClassicGroup || got != g {
			t.Fatalf("group key: %v %+v %v, want %+v", kind, got, err, g)
		}
		if kind, got, err := ParseKey(o.Key()); err != nil || kind != KindOffset || got != o {
			t.Fatalf("offset key: %v %+v %v, want %+v", kind, got, err, o)
		}
	}
}

// TestKeyPrefixes: a group's prefix matches exactly its own keys, and keys
// sort by shard, then kind, so one scan loads one shard.
func TestKeyPrefixes(t *testing.T) {
	groups := []GroupKey{
		{0, "", "g1"}, {0, "", "g10"}, {0, "", "g"}, {0, "t", "g1"}, {0, "t1", ""},
		{1, "", "g1"}, {256, "", "g1"}, {0, "", ""},
	}
	var keys [][]byte
	owner := map[string]int{}
	for gi, g := range groups {
		for _, k := range [][]byte{
			g.Key(),
			OffsetKey{g, "topic", 0}.Key(),
			OffsetKey{g, "topic", -1}.Key(),
			OffsetKey{g, "", 7}.Key(),
		} {
			if _, dup := owner[string(k)]; dup {
				t.Fatalf("key %x encodes two records", k)
			}
			owner[string(k)] = gi
			keys = append(keys, k)
		}
	}
	for gi, g := range groups {
		for _, kind := range []Kind{KindOffset, KindClassicGroup} {
			p := GroupPrefix(kind, g)
			for _, k := range keys {
				kk, _, _ := ParseKey(k)
				mine := owner[string(k)] == gi && kk == kind
				if bytes.HasPrefix(k, p) != mine {
					t.Errorf("group %+v kind %v: prefix match of %x is %v, want %v", g, kind, k, !mine, mine)
				}
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
	var prev struct {
		shard uint16
		kind  Kind
	}
	for _, k := range keys {
		kind, v, _ := ParseKey(k)
		var shard uint16
		switch v := v.(type) {
		case GroupKey:
			shard = v.Shard
		case OffsetKey:
			shard = v.Shard
		}
		if shard < prev.shard || (shard == prev.shard && kind < prev.kind) {
			t.Fatalf("keys do not sort by shard, then kind: %x", k)
		}
		if !bytes.HasPrefix(k, ShardPrefix(shard)) || !bytes.HasPrefix(k, KindPrefix(shard, kind)) {
			t.Fatalf("key %x lacks its shard or kind prefix", k)
		}
		prev.shard, prev.kind = shard, kind
	}
}

// TestFormatV1 pins the bytes of version 1. If it fails, the on-disk
// format changed: add a version instead (see the package doc).
func TestFormatV1(t *testing.T) {
	proto, leader, inst := "range", "m-1", "i-1"
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"offset key", OffsetKey{GroupKey{3, "t", "g"}, "orders", 5}.Key(), "6300030101740167066f726465727300000005"},
		{"group key", GroupKey{3, "t", "g"}.Key(), "6300030201740167"},
		{"offsets topic key", OffsetsTopicKey{Shard: 3}.Key(), "6300030d"},
		{"offsets topic", OffsetsTopic{Reserved: 1 << 20}.Encode(), "010000000000100000"},
		{"offset", Offset{Offset: 42, LeaderEpoch: -1, Metadata: "m", CommitTimestamp: 1700000000000, TopicID: [16]byte{1, 2}}.Encode(),
			"01000000000000002affffffff026d0000018bcfe5680001020000000000000000000000000000"},
		{"classic group", ClassicGroup{ID: "cgp_X", ProtocolType: "consumer", Generation: 7, Protocol: &proto, Leader: &leader, StateTimestamp: 9,
			Members: []ClassicMember{{MemberID: "m-1", InstanceID: &inst, ClientID: "c", ClientHost: "/127.0.0.1", RebalanceTimeout: 60000, SessionTimeout: 45000, Subscription: []byte{1}, Assignment: []byte{2, 3}}}}.Encode(),
			"01066367705f5809636f6e73756d6572000000070672616e6765046d2d310000000000000009" +
				"02046d2d3104692d3102630b2f3132372e302e302e310000ea600000afc802010302" + "03"},
	} {
		if got := hex.EncodeToString(tc.got); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestCorruptValues: every truncation, trailing bytes, an unknown version
// and an absurd member count are ErrCorrupt, never a panic.
func TestCorruptValues(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	g := randGroup(rng)
	for len(g.Members) == 0 {
		g = randGroup(rng)
	}
	values := map[string][]byte{
		"offset": Offset{Offset: 1, Metadata: "meta"}.Encode(),
		"group":  g.Encode(),
	}
	decode := map[string]func([]byte) error{
		"offset": func(b []byte) error { _, err := DecodeOffset(b); return err },
		"group":  func(b []byte) error { _, err := DecodeClassicGroup(b); return err },
	}
	for name, v := range values {
		checkCorrupt(t, name, v, decode[name])
	}
	huge := ClassicGroup{}.Encode()
	huge = append(huge[:len(huge)-1], 0xff, 0xff, 0xff, 0xff, 0x07) // member count ~2^31
	if _, err := DecodeClassicGroup(huge); !errors.Is(err, ErrCorrupt) {
		t.Errorf("absurd member count: %v", err)
	}
	for _, v := range [][]byte{nil, {1}, {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {2, 0, 0, 0, 0, 0, 0, 0, 1}, {1, 0, 0, 0, 0, 0, 0, 0, 1, 0}} {
		if _, err := DecodeOffsetsTopic(v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeOffsetsTopic(%x): %v, want ErrCorrupt", v, err)
		}
	}
	for _, k := range [][]byte{nil, []byte("topic/x"), {'c', 0, 0, 9, 0, 0}, {'c', 0, 0, 1, 5, 'a'}, append(GroupKey{0, "", "g"}.Key(), 0), {'c', 0, 0, 13, 0}} {
		if _, _, err := ParseKey(k); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseKey(%x): %v, want ErrCorrupt", k, err)
		}
	}
}

// checkCorrupt checks that decode finds every truncation of a version 1
// value v, v with a trailing byte, and v as version 2 corrupt.
func checkCorrupt(t *testing.T, name string, v []byte, decode func([]byte) error) {
	t.Helper()
	for n := range len(v) {
		if err := decode(v[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s truncated to %d bytes: %v, want ErrCorrupt", name, n, err)
		}
	}
	if err := decode(append(bytes.Clone(v), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s with a trailing byte: %v", name, err)
	}
	bad := bytes.Clone(v)
	bad[0] = 2
	if err := decode(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s version 2: %v", name, err)
	}
}

// FuzzDecode: no input panics the decoders, and whatever decodes
// re-encodes to the same bytes (the encoding is canonical), so replay
// cannot silently change a record.
func FuzzDecode(f *testing.F) {
	proto := "range"
	f.Add(Offset{Offset: 5, Metadata: "x"}.Encode())
	f.Add(ClassicGroup{ID: "cgp_1", Protocol: &proto, Members: []ClassicMember{{MemberID: "m", Subscription: []byte{1}}}}.Encode())
	f.Add(OffsetKey{GroupKey{1, "t", "g"}, "topic", 3}.Key())
	f.Add(GroupKey{2, "", "group"}.Key())
	for _, v := range consumerSamples() {
		f.Add(v)
	}
	for _, v := range shareGroupSamples() {
		f.Add(v)
	}
	f.Add(MemberKey{GroupKey{1, "", "g"}, KindShareCurrent, "m"}.Key())
	f.Add(GroupKey{1, "t", "g"}.KindKey(KindShareGroupPartitions))
	f.Add(MemberKey{GroupKey{1, "", "g"}, KindConsumerCurrent, "m"}.Key())
	f.Add(PartitionKey{GroupKey{1, "", "g"}, KindAssignerHandoff, "t", 7}.Key())
	f.Add(OffsetsTopicKey{Shard: 3}.Key())
	f.Add(OffsetsTopic{Reserved: 1 << 20}.Encode())
	f.Add(Topic{ID: [16]byte{1}, Leaders: []int32{0, 1}, Configs: map[string]string{"a": "b"}}.Encode())
	f.Add(MetaValue([]byte("cluster")))
	f.Add(Topic{ID: [16]byte{2}, Leaders: []int32{0, 1}, Epochs: []int32{0, 3}}.Encode())
	f.Add(EncodeConfigs(map[string]string{"consumer.session.timeout.ms": "50000"}))
	f.Add(ConfigResource{Type: 32, Name: "g"}.Key())
	f.Add([]byte(`{"v":2,"name":"t","id":"0102030405060708090a0b0c0d0e0f10","partitions":1,"leaders":[1]}`))
	share := ShareKey{Shard: ShareStateShardBase, Group: "g", TopicID: [16]byte{7}, Partition: 1}
	f.Add(share.Key())
	f.Add(ShareUpdateKey{ShareKey: share, Slot: 3}.Key())
	f.Add(ShareSnapshot{StateEpoch: 1, SnapshotEpoch: 2, StartOffset: 10, Batches: []ShareBatch{{10, 19, ShareAcknowledged, 1}, {25, 25, ShareAvailable, 3}}}.Encode())
	f.Add(ShareUpdate{SnapshotEpoch: 2, StartOffset: -1, Batches: []ShareBatch{{20, 24, ShareArchived, 5}}}.Encode())
	lock := ShareLock{First: 26, Last: 30, Member: "m", DeliveryCount: 1, Limit: 5, Duration: 30e9, Deadline: 1e18}
	f.Add(ShareSnapshot{StartOffset: 10, Locks: []ShareLock{lock}}.Encode())
	f.Add(ShareUpdate{SnapshotEpoch: 2, StartOffset: -1, HasLocks: true, LockFirst: 20, LockLast: 30, Locks: []ShareLock{lock}}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		if tp, err := DecodeTopic(b); err == nil {
			// Configs re-encode sorted, so compare what decodes.
			if again, err := DecodeTopic(tp.Encode()); err != nil || !reflect.DeepEqual(again, tp) {
				t.Fatalf("topic %x decodes as %+v, re-encoded as %+v (%v)", b, tp, again, err)
			}
		}
		if c, err := DecodeConfigs(b); err == nil {
			if again, err := DecodeConfigs(EncodeConfigs(c)); err != nil || !reflect.DeepEqual(again, c) {
				t.Fatalf("configs %x decode as %v, re-encoded as %v (%v)", b, c, again, err)
			}
		}
		if c, err := ParseConfigKey(b); err == nil && !bytes.Equal(c.Key(), b) {
			t.Fatalf("config key %x parses as %+v, encodes as %x", b, c, c.Key())
		}
		if m, err := DecodeMetaValue(b); err == nil {
			if again, err := DecodeMetaValue(MetaValue(m)); err != nil || !bytes.Equal(again, m) {
				t.Fatalf("meta %x decodes as %x, re-encoded as %x (%v)", b, m, again, err)
			}
		}
		for _, p := range LegacyGlobalPrefixes() {
			UpgradeGlobal(append(p, b...), b) // must not panic
		}
		// ParseOffsetKey agrees with ParseKey on every key.
		kind, key, perr := ParseKey(b)
		ok, oerr := ParseOffsetKey(b)
		if wantOK := perr == nil && kind == KindOffset; (oerr == nil) != wantOK || (wantOK && key.(OffsetKey) != ok) {
			t.Fatalf("key %x: ParseOffsetKey %+v %v, ParseKey %v %+v %v", b, ok, oerr, kind, key, perr)
		}
		// ParseOffsetKeyAfter agrees with ParseOffsetKey whatever names
		// it is given to reuse: its own, another key's, none.
		for _, prev := range []*OffsetKey{nil, &ok, {GroupKey: GroupKey{Tenant: "t", Group: "g"}, Topic: "x"}} {
			if after, aerr := ParseOffsetKeyAfter(b, prev); (aerr == nil) != (oerr == nil) || after != ok {
				t.Fatalf("key %x: ParseOffsetKeyAfter(%+v) %+v %v, ParseOffsetKey %+v %v", b, prev, after, aerr, ok, oerr)
			}
		}
		// What decodes re-encodes to bytes that decode the same and
		// re-encode the same (not always to b itself: kbin reads a
		// varint written longer than it needs).
		if o, err := DecodeOffset(b); err == nil {
			if again, err := DecodeOffset(o.Encode()); err != nil || !reflect.DeepEqual(again, o) {
				t.Fatalf("offset %x decodes as %+v, re-encoded as %+v (%v)", b, o, again, err)
			}
		}
		if g, err := DecodeClassicGroup(b); err == nil {
			if again, err := DecodeClassicGroup(g.Encode()); err != nil || !bytes.Equal(again.Encode(), g.Encode()) {
				t.Fatalf("classic group %x re-encodes as %x, then %x (%v)", b, g.Encode(), again.Encode(), err)
			}
		}
		if o, err := DecodeOffsetsTopic(b); err == nil {
			if again, err := DecodeOffsetsTopic(o.Encode()); err != nil || again != o {
				t.Fatalf("offsets topic %x decodes as %+v, re-encoded as %+v (%v)", b, o, again, err)
			}
		}
		for _, reencoders := range []map[string]func([]byte) ([]byte, bool){consumerReencoders, shareGroupReencoders} {
			for name, re := range reencoders {
				if got, ok := re(b); ok {
					if again, ok := re(got); !ok || !bytes.Equal(again, got) {
						t.Fatalf("%s %x re-encodes as %x, then %x", name, b, got, again)
					}
				}
			}
		}
		if v, err := DecodeShareSnapshot(b); err == nil {
			if again, err := DecodeShareSnapshot(v.Encode()); err != nil || !reflect.DeepEqual(again, v) {
				t.Fatalf("share snapshot %x decodes as %+v, re-encoded as %+v (%v)", b, v, again, err)
			}
		}
		if v, err := DecodeShareUpdate(b); err == nil {
			if again, err := DecodeShareUpdate(v.Encode()); err != nil || !reflect.DeepEqual(again, v) {
				t.Fatalf("share update %x decodes as %+v, re-encoded as %+v (%v)", b, v, again, err)
			}
		}
		if kind, k, err := ParseKey(b); err == nil {
			var re []byte
			switch k := k.(type) {
			case GroupKey:
				re = k.KindKey(kind)
			case interface{ Key() []byte }:
				re = k.Key()
			}
			if !bytes.Equal(re, b) {
				t.Fatalf("%v key %x re-encodes as %x", kind, b, re)
			}
		}
	})
}

func Example() {
	k := OffsetKey{GroupKey: GroupKey{Shard: 3, Tenant: "", Group: "orders-app"}, Topic: "orders", Partition: 0}
	v := Offset{Offset: 1042, LeaderEpoch: -1, CommitTimestamp: 1700000000000}.Encode()
	kind, parsed, _ := ParseKey(k.Key())
	o, _ := DecodeOffset(v)
	fmt.Println(kind, parsed.(OffsetKey).Group, o.Offset)
	// Output: offset orders-app 1042
}

func consumerSamples() map[string][]byte {
	inst := "i-1"
	tps := []TopicPartitions{{TopicID: [16]byte{9}, Partitions: []int32{0, 2}}, {TopicID: [16]byte{8}, Partitions: []int32{}}}
	return map[string][]byte{
		"consumer group":  ConsumerGroup{ID: "cgp_1", Epoch: 5, MetadataHash: 1 << 63}.Encode(),
		"consumer member": ConsumerMember{InstanceID: &inst, ClientID: "c", ClientHost: "/h", Topics: []string{"a", "b"}, Regex: "x.*", RebalanceTimeout: 300000, Assignor: "uniform"}.Encode(),
		"classic member": ConsumerMember{ClientID: "c", ClientHost: "/h", Topics: []string{"a"}, RebalanceTimeout: 300000,
			Classic: &ClassicMeta{SessionTimeout: 45000, Protocols: []ClassicProtocol{{Name: "range", Metadata: []byte{0, 1, 2}}, {Name: "cooperative-sticky"}}}}.Encode(),
		"target epoch": ConsumerTargetEpoch{Epoch: 4, Timestamp: 17}.Encode(),
		"target":       ConsumerTarget{Topics: tps}.Encode(),
		"current":      ConsumerCurrent{MemberEpoch: 4, PreviousMemberEpoch: 3, State: 1, Assigned: tps, Revoking: tps[:1]}.Encode(),

		"assigner consumer": AssignerConsumer{Topic: "events"}.Encode(),
		"assigner owner":    AssignerOwner{Owner: "c-1"}.Encode(),
		"assigner handoff":  AssignerHandoff{From: "c-1", To: "c-2", Complete: true}.Encode(),
		"assigner topic":    AssignerTopic{Partitions: 12}.Encode(),
	}
}

var consumerDecoders = map[string]func([]byte) error{
	"consumer group":  func(b []byte) error { _, err := DecodeConsumerGroup(b); return err },
	"consumer member": func(b []byte) error { _, err := DecodeConsumerMember(b); return err },
	"classic member":  func(b []byte) error { _, err := DecodeConsumerMember(b); return err },
	"target epoch":    func(b []byte) error { _, err := DecodeConsumerTargetEpoch(b); return err },
	"target":          func(b []byte) error { _, err := DecodeConsumerTarget(b); return err },
	"current":         func(b []byte) error { _, err := DecodeConsumerCurrent(b); return err },

	"assigner consumer": func(b []byte) error { _, err := DecodeAssignerConsumer(b); return err },
	"assigner owner":    func(b []byte) error { _, err := DecodeAssignerOwner(b); return err },
	"assigner handoff":  func(b []byte) error { _, err := DecodeAssignerHandoff(b); return err },
	"assigner topic":    func(b []byte) error { _, err := DecodeAssignerTopic(b); return err },
}

var consumerReencoders = map[string]func([]byte) ([]byte, bool){
	"consumer group": func(b []byte) ([]byte, bool) {
		v, err := DecodeConsumerGroup(b)
		return v.Encode(), err == nil
	},
	"consumer member": func(b []byte) ([]byte, bool) {
		v, err := DecodeConsumerMember(b)
		return v.Encode(), err == nil
	},
	"classic member": func(b []byte) ([]byte, bool) {
		v, err := DecodeConsumerMember(b)
		return v.Encode(), err == nil && v.Classic != nil
	},
	"target epoch": func(b []byte) ([]byte, bool) {
		v, err := DecodeConsumerTargetEpoch(b)
		return v.Encode(), err == nil
	},
	"target": func(b []byte) ([]byte, bool) {
		v, err := DecodeConsumerTarget(b)
		return v.Encode(), err == nil
	},
	"current": func(b []byte) ([]byte, bool) {
		v, err := DecodeConsumerCurrent(b)
		return v.Encode(), err == nil
	},
	"assigner consumer": func(b []byte) ([]byte, bool) {
		v, err := DecodeAssignerConsumer(b)
		return v.Encode(), err == nil
	},
	"assigner owner": func(b []byte) ([]byte, bool) {
		v, err := DecodeAssignerOwner(b)
		return v.Encode(), err == nil
	},
	"assigner handoff": func(b []byte) ([]byte, bool) {
		v, err := DecodeAssignerHandoff(b)
		return v.Encode(), err == nil
	},
	"assigner topic": func(b []byte) ([]byte, bool) {
		v, err := DecodeAssignerTopic(b)
		return v.Encode(), err == nil
	},
}

// TestAssignerKeys: the warm-handoff assigner's keys parse back to what
// they name, sit under their group's prefix, and keep their version 1
// bytes.
func TestAssignerKeys(t *testing.T) {
	g := GroupKey{3, "", "g"}
	for _, kind := range []Kind{KindAssignerOwner, KindAssignerHandoff} {
		k := PartitionKey{g, kind, "events", 11}
		if got, v, err := ParseKey(k.Key()); err != nil || got != kind || v != k {
			t.Fatalf("partition key %v: %v %+v %v", kind, got, v, err)
		}
		if !bytes.HasPrefix(k.Key(), GroupPrefix(kind, g)) {
			t.Fatalf("partition key %v lacks its group prefix", kind)
		}
	}
	for _, kind := range []Kind{KindAssignerConsumer, KindAssignerTopic} {
		k := MemberKey{g, kind, "name"}
		if got, v, err := ParseKey(k.Key()); err != nil || got != kind || v != k {
			t.Fatalf("key %v: %v %+v %v", kind, got, v, err)
		}
	}
	if got := hex.EncodeToString(PartitionKey{g, KindAssignerHandoff, "t", 2}.Key()); got != "6300030b0001670174"+"00000002" {
		t.Errorf("handoff key bytes: %s", got)
	}
	if got := hex.EncodeToString(AssignerHandoff{From: "a", To: "b", Complete: true}.Encode()); got != "01"+"0261"+"0262"+"01" {
		t.Errorf("handoff v1 bytes: %s", got)
	}
}

// TestConsumerValues: the KIP-848 values round-trip, reject every
// truncation, a trailing byte and another version, and their keys parse
// back to the member they name.
func TestConsumerValues(t *testing.T) {
	for name, v := range consumerSamples() {
		re, ok := consumerReencoders[name](v)
		if !ok || !bytes.Equal(re, v) {
			t.Fatalf("%s does not round-trip: %x → %x", name, v, re)
		}
		for n := 0; n < len(v); n++ {
			if err := consumerDecoders[name](v[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s truncated to %d bytes: %v, want ErrCorrupt", name, n, err)
			}
		}
		if err := consumerDecoders[name](append(bytes.Clone(v), 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s with a trailing byte: %v", name, err)
		}
		bad := bytes.Clone(v)
		bad[0]++
		if err := consumerDecoders[name](bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s version %d: %v", name, bad[0], err)
		}
	}
	c, err := DecodeConsumerCurrent(consumerSamples()["current"])
	if err != nil || c.MemberEpoch != 4 || c.State != 1 || len(c.Assigned) != 2 || c.Assigned[0].Partitions[1] != 2 {
		t.Fatalf("current decoded as %+v, %v", c, err)
	}
	g := GroupKey{7, "t", "g"}
	for _, kind := range []Kind{KindConsumerMember, KindConsumerTarget, KindConsumerCurrent} {
		k := MemberKey{g, kind, "member-1"}
		if got, v, err := ParseKey(k.Key()); err != nil || got != kind || v != k {
			t.Fatalf("member key %v: %v %+v %v", kind, got, v, err)
		}
		if !bytes.HasPrefix(k.Key(), GroupPrefix(kind, g)) {
			t.Fatalf("member key %v lacks its group prefix", kind)
		}
	}
	for _, kind := range []Kind{KindConsumerGroup, KindConsumerTargetEpoch} {
		if got, v, err := ParseKey(g.KindKey(kind)); err != nil || got != kind || v != g {
			t.Fatalf("group key %v: %v %+v %v", kind, got, v, err)
		}
	}
	// Pin version 1 of the member-level values.
	if got := hex.EncodeToString(ConsumerCurrent{MemberEpoch: 2, PreviousMemberEpoch: 1, Assigned: []TopicPartitions{{TopicID: [16]byte{1}, Partitions: []int32{3}}}}.Encode()); got !=
		"0100000002000000010002010000000000000000000000000000000200000003"+"01" {
		t.Errorf("current v1 bytes: %s", got)
	}
}

func TestACLKeyRoundTrip(t *testing.T) {
	a := ACL{ResourceType: 2, PatternType: 4, Name: "pay-", Principal: "User:alice", Host: "*", Operation: 3, Permission: 3}
	got, err := ParseACLKey(a.Key())
	if err != nil || got != a {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := ParseACLKey(append(a.Key(), 0)); err == nil {
		t.Fatal("a key with a byte too many parsed")
	}
	// An organisation's binding: the tenant goes at the end, so that the
	// default organisation's keys (all keys written before organisations)
	// are unchanged.
	b := a
	b.Tenant = "acme"
	if !bytes.HasPrefix(b.Key(), a.Key()) || bytes.Equal(b.Key(), a.Key()) {
		t.Fatalf("tenant key %x does not extend the default key %x", b.Key(), a.Key())
	}
	if got, err := ParseACLKey(b.Key()); err != nil || got != b {
		t.Fatalf("tenant round trip: %+v, %v", got, err)
	}
	if _, err := ParseACLKey(append(b.Key(), 'x')); err == nil {
		t.Fatal("a tenant key with a byte too many parsed")
	}
}

// FuzzACLKey: an ACL key that parses re-encodes to itself (one encoding
// per binding, the tenant only when not ""), and no input panics.
func FuzzACLKey(f *testing.F) {
	a := ACL{ResourceType: 2, PatternType: 3, Name: "events", Principal: "User:alice", Host: "*", Operation: 3, Permission: 3}
	f.Add(a.Key())
	a.Tenant = "acme"
	f.Add(a.Key())
	f.Add(append(a.Key(), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		if acl, err := ParseACLKey(b); err == nil && !bytes.Equal(acl.Key(), b) {
			t.Fatalf("ACL key %x re-encodes as %x", b, acl.Key())
		}
	})
}

func TestQuotaRecordRoundTrip(t *testing.T) {
	for _, q := range []Quota{
		{EntityType: "org", Name: "acme", KeyName: "producer_byte_rate"},
		{EntityType: "org", Default: true, KeyName: "max_groups"},
		{EntityType: "org", Name: "", KeyName: "request_rate"}, // a named empty name is not the default
	} {
		got, err := ParseQuotaKey(q.Key())
		if err != nil || got != q {
			t.Fatalf("round trip of %+v: %+v, %v", q, got, err)
		}
		if _, err := ParseQuotaKey(append(q.Key(), 0)); err == nil {
			t.Fatalf("%+v: a key with a byte too many parsed", q)
		}
	}
	// The default entity sorts before every named one of its type.
	if d, n := (Quota{EntityType: "org", Default: true, KeyName: "z"}).Key(), (Quota{EntityType: "org", KeyName: "a"}).Key(); string(d) >= string(n) {
		t.Fatal("default entity does not sort first")
	}
	v, err := DecodeQuotaValue(QuotaValue(1.5e6))
	if err != nil || v != 1.5e6 {
		t.Fatalf("value: %v, %v", v, err)
	}
	if _, err := DecodeQuotaValue([]byte{1, 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short value: %v", err)
	}
}

// TestTopicEpochs: a topic whose leader epochs are all 0 keeps version
// 1's bytes (so older versions read it); one with an epoch above 0 is
// version 2 and round-trips, partitions grown since reading epoch 0.
func TestTopicEpochs(t *testing.T) {
	v1 := Topic{ID: [16]byte{1}, Leaders: []int32{0, 1}}
	if b := (Topic{ID: v1.ID, Leaders: v1.Leaders, Epochs: []int32{0, 0}}).Encode(); !bytes.Equal(b, v1.Encode()) || b[0] != 1 {
		t.Fatalf("zero epochs changed the encoding: %x vs %x", b, v1.Encode())
	}
	v2 := Topic{ID: [16]byte{1}, Leaders: []int32{0, 1, 1}, Epochs: []int32{2}}
	got, err := DecodeTopic(v2.Encode())
	if err != nil || got.Epoch(0) != 2 || got.Epoch(1) != 0 || got.Epoch(2) != 0 || len(got.Epochs) != 3 {
		t.Fatalf("version 2: %+v, %v", got, err)
	}
}

// TestConfigRecord: a config record's key and value round-trip, and what
// is not one is refused.
func TestConfigRecord(t *testing.T) {
	for _, c := range []ConfigResource{{Type: 4}, {Type: 4, Name: "1"}, {Type: 32, Name: "org/group"}, {Type: 8, Name: "0"}} {
		if got, err := ParseConfigKey(c.Key()); err != nil || got != c {
			t.Errorf("ParseConfigKey(%+v.Key()) = %+v, %v", c, got, err)
		}
	}
	if _, err := ParseConfigKey(TopicKey("t")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a topic key parsed as a config key: %v", err)
	}
	want := map[string]string{"b": "2", "a": "1"}
	if got, err := DecodeConfigs(EncodeConfigs(want)); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("configs round trip: %v, %v", got, err)
	}
	if _, err := DecodeConfigs(EncodeConfigs(nil)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("an empty config value decoded: %v", err)
	}
}

// TestParseOffsetKeyAfterReuses: a key of the group and topic of the
// key before it parses without allocating (a load replays ten million).
func TestParseOffsetKeyAfterReuses(t *testing.T) {
	prev, err := ParseOffsetKey(OffsetKey{GroupKey: GroupKey{Shard: 3, Tenant: "acme", Group: "orders-consumer"}, Topic: "orders", Partition: 1}.Key())
	if err != nil {
		t.Fatal(err)
	}
	next := OffsetKey{GroupKey: GroupKey{Shard: 3, Tenant: "acme", Group: "orders-consumer"}, Topic: "orders", Partition: 2}.Key()
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseOffsetKeyAfter(next, &prev) }); n != 0 {
		t.Errorf("ParseOffsetKeyAfter allocates %v times for a key of the same names", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseOffsetKey(next) }); n == 0 {
		t.Error("ParseOffsetKey allocates nothing: the test measures nothing")
	}
	if k, err := ParseOffsetKeyAfter(next, &prev); err != nil || k.Partition != 2 || k.Group != "orders-consumer" {
		t.Fatalf("%+v %v", k, err)
	}
}
