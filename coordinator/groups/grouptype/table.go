package grouptype

// The registry's table: an open-addressing hash table of entries, with
// linear probing, keyed by each entry's own Key. A Go map of Key to
// *Entry keeps each key beside its pointer, 40 bytes a slot, and with its
// load factor and its doubling a group cost it 101 bytes at 62,500 groups
// (a million over 16 shards) and 63 at 200,000. The entry holds its key
// already, so a slot here is the entry's pointer and a byte of its hash,
// 9 bytes, and between three eighths and three quarters full a group
// costs 12 to 24: 18.9 and 23.6 at those sizes (TestRegistryBytes).
//
// Comparing a key reads the entry and its names, which the map's inline
// keys spare it half of: the hash's byte (tags) lets a probe pass the
// entries of other keys unread, so a lookup reads about one entry, and a
// miss none. Without the tags a miss at 100,000 groups took half as
// long again as the map's (154 ns against 107); with them, and 8 read at
// once (get), a hit takes a sixth to a third less time than the map's,
// and a miss as long or less, from three eighths to three quarters full
// (BenchmarkRegistryLookup at 80,000, 98,000, 100,000 and 114,000).
// Seven eighths full at most, a table of 114,000 groups is 87% full,
// not 43%, and a miss in it took four times as long (265 ns against 67)
// for the 10 bytes a group it saved.

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math/bits"
)

const (
	// minSlots is the table's size once it holds an entry.
	minSlots = 16
	// The table doubles before more than loadNum/loadDen of its slots
	// are full: past that, linear probing's runs grow long. It never
	// shrinks, as a map does not: a shard keeps the slots of the most
	// groups it held, 12 to 24 bytes a group it held then.
	loadNum, loadDen = 3, 4
)

// groupTable is the set of a shard's entries, by key. Its zero value is
// an empty table.
type groupTable struct {
	seed maphash.Seed
	// slots has a power-of-two length (or none): an entry is in the
	// run of full slots that starts at its key's hash, before the first
	// empty one. No slot is a tombstone: remove shifts the run back.
	slots []*Entry
	// tags has a byte of each full slot's hash (never 0), 0 for an empty
	// one: a probe passes the entries of other keys without reading them
	// (a cache miss each, and their names another), 254 in 255 of them.
	tags []uint8
	n    int
}

// hash is k's hash under the table's seed. maphash.Comparable hashes each
// string of the key in turn, as a map does, so ("ab", "c") and ("a",
// "bc") hash apart; it took 7 ns a key, two maphash.String 8.6, a
// maphash.Hash written both strings and a separator 16.
func (t *groupTable) hash(k Key) uint64 { return maphash.Comparable(t.seed, k) }

// tag is a full slot's tag of hash h: its top byte, 1 for 0. The slot's
// index is of the low bits, so the two are apart.
func tag(h uint64) uint8 { return max(1, uint8(h>>56)) }

// len is how many entries the table holds.
func (t *groupTable) len() int { return t.n }

// get returns the entry of k, or nil. Past the key's own slot, where a
// hit mostly is, it reads the tags of 8 slots at once (tags has the
// first 7 again past its end, so any 8 from a slot are there) and finds
// the run's end and the tags that match among them without a branch a
// byte: a loop that tested each byte in turn ended at a byte the CPU
// could not foresee, and that misprediction made a miss 1.8 times as
// slow as the map's.
func (t *groupTable) get(k Key) *Entry {
	if t.n == 0 {
		return nil
	}
	h := t.hash(k)
	want, mask := tag(h), uint64(len(t.slots)-1)
	i := h & mask
	if t.tags[i] == want {
		// The name first: two groups of a tenant differ only there.
		if e := t.slots[i]; e.Name == k.Name && e.Tenant == k.Tenant {
			return e
		}
	}
	for ; ; i = (i + 8) & mask {
		w := binary.LittleEndian.Uint64(t.tags[i:])
		empty := zeroBytes(w)
		// The run ends at the first empty slot: the bits below its
		// own. Past it, tags that match are other keys'.
		run := empty&-empty - 1
		for m := zeroBytes(w^lsb*uint64(want)) & run; m != 0; m &= m - 1 {
			// zeroBytes may flag a byte above a match that is
			// not one: its tag says.
			j := (i + uint64(bits.TrailingZeros64(m)/8)) & mask
			if e := t.slots[j]; t.tags[j] == want && e.Name == k.Name && e.Tenant == k.Tenant {
				return e
			}
		}
		if empty != 0 {
			return nil
		}
	}
}

const lsb, msb = 0x0101010101010101, 0x8080808080808080

// zeroBytes has the top bit set of the lowest byte of w that is 0, and
// maybe of some above it (a byte of 1 above a 0 borrows), none below.
func zeroBytes(w uint64) uint64 { return (w - lsb) &^ w & msb }

// setTag sets slot i's tag, and its copy past the end.
func (t *groupTable) setTag(i uint64, tag uint8) {
	t.tags[i] = tag
	if n := uint64(len(t.slots)); i < 7 {
		t.tags[n+i] = tag
	}
}

// put adds e, whose key the table must not hold.
func (t *groupTable) put(e *Entry) {
	if (t.n+1)*loadDen > len(t.slots)*loadNum {
		t.resize(max(minSlots, 2*len(t.slots)))
	}
	t.place(e)
	t.n++
}

// place puts e in the first empty slot of its run.
func (t *groupTable) place(e *Entry) {
	h := t.hash(e.Key)
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.tags[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = e
	t.setTag(i, tag(h))
}

// resize moves every entry to a table of size slots (a power of two).
// The seed is drawn as the first entry comes: a zero Seed hashes nothing.
func (t *groupTable) resize(size int) {
	old := t.slots
	t.slots, t.tags = make([]*Entry, size), make([]uint8, size+7)
	if t.n == 0 {
		t.seed = maphash.MakeSeed()
	}
	for _, e := range old {
		if e != nil {
			t.place(e)
		}
	}
}

// remove drops e, if the table holds it (this entry, not another of its
// key). Then each entry after it in its run that a lookup would no longer
// reach, past the emptied slot, moves back into it, leaving its own slot
// empty for the next.
func (t *groupTable) remove(e *Entry) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := t.hash(e.Key) & mask
	for t.slots[i] != e {
		if t.tags[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.tags[j] != 0; j = (j + 1) & mask {
		// f stays if its home is cyclically in (i, j], nearer j than
		// the emptied slot is: a lookup of it starts past that slot.
		f := t.slots[j]
		if home := t.hash(f.Key) & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = f
			t.setTag(i, t.tags[j])
			i = j
		}
	}
	t.slots[i] = nil
	t.setTag(i, 0)
	t.n--
}

// all yields every entry once, in no order. The caller must not add or
// remove entries while it ranges: backward shifts and growth move
// entries, so some would be skipped and others seen twice.
func (t *groupTable) all() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		n := t.n
		for _, e := range t.slots {
			if e == nil {
				continue
			}
			if !yield(e) {
				return
			}
			if t.n != n {
				panic("grouptype: the registry changed while ranging over it")
			}
		}
	}
}
