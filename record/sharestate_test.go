package record

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand"
	"reflect"
	"testing"
)

func randShareBatches(rng *rand.Rand, from int64) []ShareBatch {
	var bs []ShareBatch
	next := from
	for i := rng.Intn(8); i > 0; i-- {
		first := next + rng.Int63n(5)
		last := first + rng.Int63n(100)
		bs = append(bs, ShareBatch{First: first, Last: last,
			State:         []ShareState{ShareAvailable, ShareAcknowledged, ShareArchiving, ShareArchived}[rng.Intn(4)],
			DeliveryCount: int16(rng.Intn(10))})
		next = last + 1
	}
	return bs
}

func randShareLocks(rng *rand.Rand, from int64) []ShareLock {
	var ls []ShareLock
	next := from
	for i := rng.Intn(4); i > 0; i-- {
		first := next + rng.Int63n(5)
		last := first + rng.Int63n(100)
		limit := int16(1 + rng.Intn(10))
		ls = append(ls, ShareLock{First: first, Last: last, Member: []string{"m1", "a-much-longer-member-id"}[rng.Intn(2)],
			DeliveryCount: 1 + int16(rng.Intn(int(limit))), Limit: limit, Duration: 1 + rng.Int63n(1<<40), Deadline: rng.Int63(), DeadLetter: rng.Intn(2) == 0})
		next = last + 1
	}
	return ls
}

func TestShareStateRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for range 2000 {
		start := rng.Int63n(1 << 40)
		s := ShareSnapshot{StateEpoch: rng.Int31(), SnapshotEpoch: rng.Uint32(), StartOffset: start, Batches: randShareBatches(rng, start), Locks: randShareLocks(rng, start)}
		got, err := DecodeShareSnapshot(s.Encode())
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("snapshot round trip: %+v, %v; want %+v", got, err, s)
		}
		u := ShareUpdate{SnapshotEpoch: rng.Uint32(), StartOffset: rng.Int63n(1<<40) - 1, Batches: randShareBatches(rng, rng.Int63n(1<<40))}
		if u.HasLocks = rng.Intn(2) == 0; u.HasLocks {
			u.LockFirst = rng.Int63n(1 << 30)
			u.Locks = randShareLocks(rng, u.LockFirst)
			u.LockLast = u.LockFirst + rng.Int63n(10)
			if n := len(u.Locks); n > 0 {
				u.LockLast += u.Locks[n-1].Last
			}
		}
		gotU, err := DecodeShareUpdate(u.Encode())
		if err != nil || !reflect.DeepEqual(gotU, u) {
			t.Fatalf("update round trip: %+v, %v; want %+v", gotU, err, u)
		}
	}
}

// TestShareStateKeys: the keys parse back to what they name, a
// partition's snapshot sorts before its updates and its updates in slot
// order, and their bytes stay those of version 1.
func TestShareStateKeys(t *testing.T) {
	k := ShareKey{Shard: ShareStateShardBase + 3, Tenant: "t", Group: "g", TopicID: [16]byte{1, 2, 3}, Partition: 7}
	kind, got, err := ParseKey(k.Key())
	if err != nil || kind != KindShareSnapshot || got != k {
		t.Fatalf("snapshot key: %v %+v %v", kind, got, err)
	}
	var prev []byte = k.Key()
	for _, slot := range []uint32{1, 2, 255, 256, 1 << 20} {
		u := ShareUpdateKey{ShareKey: k, Slot: slot}
		kind, got, err := ParseKey(u.Key())
		if err != nil || kind != KindShareUpdate || got != u {
			t.Fatalf("update key: %v %+v %v", kind, got, err)
		}
		if bytes.Compare(prev, u.Key()) >= 0 {
			t.Fatalf("slot %d does not sort after %x", slot, prev)
		}
		if !bytes.HasPrefix(u.Key(), ShardPrefix(k.Shard)) {
			t.Fatalf("update key %x lacks its shard's prefix", u.Key())
		}
		prev = u.Key()
	}
	for _, bad := range [][]byte{k.Key()[:len(k.Key())-1], append(k.Key(), 0), ShareUpdateKey{k, 1}.Key()[:len(k.Key())+2]} {
		if _, _, err := ParseKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseKey(%x): %v, want ErrCorrupt", bad, err)
		}
	}
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"snapshot key", ShareKey{Shard: 0xc000, Tenant: "", Group: "g", TopicID: [16]byte{9}, Partition: 2}.Key(),
			"63c0002800016709000000000000000000000000000000" + "00000002"},
		{"update key", ShareUpdateKey{ShareKey{Shard: 0xc000, Group: "g", TopicID: [16]byte{9}, Partition: 2}, 3}.Key(),
			"63c0002900016709000000000000000000000000000000" + "00000002" + "00000003"},
		{"snapshot", ShareSnapshot{StateEpoch: 1, SnapshotEpoch: 2, StartOffset: 10, Batches: []ShareBatch{{10, 12, ShareArchived, 5}}}.Encode(),
			"01" + "00000001" + "00000002" + "000000000000000a" + "02" + "000000000000000a" + "000000000000000c" + "04" + "0005"},
		{"update", ShareUpdate{SnapshotEpoch: 2, StartOffset: -1, Batches: nil}.Encode(),
			"01" + "00000002" + "ffffffffffffffff" + "01"},
	} {
		if got := hex.EncodeToString(tc.got); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestShardRanges: the group shards, the assigner's, the transaction
// coordinator's, the share coordinator's and the global unit's never
// share a shard number.
func TestShardRanges(t *testing.T) {
	if !(AssignerShard < TxnShardBase && TxnShardBase < ShareStateShardBase && ShareStateShardBase < GlobalShard) {
		t.Fatalf("shard ranges overlap: assigner %#x, txn %#x, share %#x, global %#x", AssignerShard, TxnShardBase, ShareStateShardBase, GlobalShard)
	}
}

// TestShareStateCorrupt: every truncation, a trailing byte, another
// version, and values no writer makes are ErrCorrupt, never a panic.
func TestShareStateCorrupt(t *testing.T) {
	snap := ShareSnapshot{StateEpoch: 1, SnapshotEpoch: 1, StartOffset: 5, Batches: []ShareBatch{{5, 9, ShareAcknowledged, 1}, {12, 12, ShareAvailable, 2}}}
	upd := ShareUpdate{SnapshotEpoch: 1, StartOffset: 7, Batches: snap.Batches}
	decode := map[string]func([]byte) error{
		"snapshot": func(b []byte) error { _, err := DecodeShareSnapshot(b); return err },
		"update":   func(b []byte) error { _, err := DecodeShareUpdate(b); return err },
	}
	for name, v := range map[string][]byte{"snapshot": snap.Encode(), "update": upd.Encode()} {
		checkCorrupt(t, "share "+name, v, decode[name])
	}
	// Version 2, with locks.
	lock := ShareLock{First: 13, Last: 20, Member: "m", DeliveryCount: 2, Limit: 5, Duration: 1e9, Deadline: 7}
	snap2, upd2 := snap, upd
	snap2.Locks = []ShareLock{lock}
	upd2.HasLocks, upd2.LockFirst, upd2.LockLast, upd2.Locks = true, 13, 25, []ShareLock{lock}
	for name, v := range map[string][]byte{"snapshot": snap2.Encode(), "update": upd2.Encode()} {
		if v[0] != 2 {
			t.Fatalf("%s with locks is version %d", name, v[0])
		}
		for n := range len(v) {
			if err := decode[name](v[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s v2 truncated to %d bytes: %v, want ErrCorrupt", name, n, err)
			}
		}
		if err := decode[name](append(bytes.Clone(v), 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s v2 with a trailing byte: %v", name, err)
		}
		bad := bytes.Clone(v)
		bad[0] = 3
		if err := decode[name](bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s version 3: %v", name, err)
		}
	}
	if v := (ShareUpdate{StartOffset: -1, HasLocks: true, LockFirst: 3, LockLast: 9}).Encode(); v[0] != 2 {
		t.Fatalf("an update clearing the locks is version %d", v[0])
	} else if u, err := DecodeShareUpdate(v); err != nil || !u.HasLocks || len(u.Locks) != 0 {
		t.Fatalf("an update clearing the locks: %+v, %v", u, err)
	}
	// A version 2 snapshot holds a lock: version 1 is the one encoding
	// of none.
	noLocks := ShareSnapshot{StartOffset: 1}.Encode()
	noLocks[0] = 2
	noLocks = append(noLocks, 1) // an empty compact array
	if _, err := DecodeShareSnapshot(noLocks); !errors.Is(err, ErrCorrupt) {
		t.Errorf("version 2 snapshot without a lock: %v", err)
	}
	for _, l := range []ShareLock{
		{First: 5, Last: 4, Member: "m", DeliveryCount: 1, Limit: 5, Duration: 1}, // last before first
		{First: 5, Last: 6, DeliveryCount: 1, Limit: 5, Duration: 1},              // no member
		{First: 5, Last: 6, Member: "m", DeliveryCount: 0, Limit: 5, Duration: 1}, // never delivered
		{First: 5, Last: 6, Member: "m", DeliveryCount: 6, Limit: 5, Duration: 1}, // past the limit
		{First: 5, Last: 6, Member: "m", DeliveryCount: 1, Limit: 5, Duration: 0}, // no duration
	} {
		if _, err := DecodeShareUpdate(ShareUpdate{StartOffset: -1, HasLocks: true, LockLast: 100, Locks: []ShareLock{l}}.Encode()); !errors.Is(err, ErrCorrupt) {
			t.Errorf("update with lock %+v: %v, want ErrCorrupt", l, err)
		}
	}
	overlap := []ShareLock{lock, lock}
	if _, err := DecodeShareUpdate(ShareUpdate{StartOffset: -1, HasLocks: true, LockLast: 100, Locks: overlap}.Encode()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("update with overlapping locks: %v", err)
	}
	for _, span := range [][2]int64{{14, 20}, {13, 19}, {-1, 20}, {5, 4}} {
		u := ShareUpdate{StartOffset: -1, HasLocks: true, LockFirst: span[0], LockLast: span[1], Locks: []ShareLock{lock}}
		if _, err := DecodeShareUpdate(u.Encode()); !errors.Is(err, ErrCorrupt) {
			t.Errorf("update with lock span %v: %v, want ErrCorrupt", span, err)
		}
	}
	for _, bs := range [][]ShareBatch{
		{{5, 4, ShareArchived, 0}},                            // last before first
		{{5, 6, ShareAcquired, 1}},                            // acquired is never stored
		{{5, 6, 5, 1}},                                        // no such state
		{{5, 6, ShareArchived, -1}},                           // negative count
		{{5, 9, ShareArchived, 1}, {9, 10, ShareArchived, 1}}, // overlapping
		{{-1, 2, ShareArchived, 1}},                           // negative offset
	} {
		if _, err := DecodeShareUpdate(ShareUpdate{StartOffset: -1, Batches: bs}.Encode()); !errors.Is(err, ErrCorrupt) {
			t.Errorf("update with %v: %v, want ErrCorrupt", bs, err)
		}
	}
	if _, err := DecodeShareSnapshot(ShareSnapshot{StartOffset: 10, Batches: []ShareBatch{{9, 12, ShareArchived, 1}}}.Encode()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("snapshot with a batch below its start: %v", err)
	}
	if _, err := DecodeShareUpdate(ShareUpdate{StartOffset: -2}.Encode()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("update with start -2: %v", err)
	}
	huge := ShareUpdate{StartOffset: -1}.Encode()
	huge = append(huge[:len(huge)-1], 0xff, 0xff, 0xff, 0xff, 0x07)
	if _, err := DecodeShareUpdate(huge); !errors.Is(err, ErrCorrupt) {
		t.Errorf("absurd batch count: %v", err)
	}
}
