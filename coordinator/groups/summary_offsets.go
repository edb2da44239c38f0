package groups

import (
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
)

// Offsets is a group's committed offsets in a Summary, compact: a
// reading holds one for each of a million groups, most of them quiet,
// and a slice of OffsetSummary (40 bytes an offset) was most of what it
// cost. The topic names are shared, not copied (the shard's
// offsets.Book interns them; groups of one set of topics share one list
// of them); the rest is one slice of varints, each partition, offset and
// commit time against the one before it in the group, as offsets of one
// commit share their commit time and partitions ascend: 4 offsets of one
// topic take 56 bytes, these 32 and 24 of varints, not 184. The zero
// Offsets is empty. An Offsets is never changed once built.
type Offsets struct {
	// topics are the names of the topic runs, in order.
	topics *[]string
	// enc is the number of offsets, the number of each topic run's, then
	// the zigzag deltas of each offset's partition, offset and commit
	// time, all varints.
	enc []byte
}

// Len is the number of offsets.
func (o Offsets) Len() int {
	n, _ := binary.Uvarint(o.enc)
	return int(n)
}

// All yields the offsets in order: by topic, then partition, as the
// shard reads them (MakeOffsets': as listed).
func (o Offsets) All() iter.Seq[OffsetSummary] {
	return func(yield func(OffsetSummary) bool) {
		if len(o.enc) == 0 {
			return
		}
		names, enc := *o.topics, o.enc
		_, runs := uvarintAt(enc, 0)
		at := runs // the entries follow the runs' counts
		for range names {
			_, at = uvarintAt(enc, at)
		}
		var cur OffsetSummary
		var d uint64
		for _, name := range names {
			var left uint64
			left, runs = uvarintAt(enc, runs)
			cur.Topic = name
			for ; left > 0; left-- {
				d, at = uvarintAt(enc, at)
				cur.Partition += int32(unzigzag(d))
				d, at = uvarintAt(enc, at)
				cur.Offset += unzigzag(d)
				d, at = uvarintAt(enc, at)
				cur.CommitTimestamp += unzigzag(d)
				if !yield(cur) {
					return
				}
			}
		}
	}
}

// uvarintAt is the uvarint at enc[at:] and the position after it; most
// are a byte (deltas within a group are small), read without a call.
func uvarintAt(enc []byte, at int) (uint64, int) {
	if b := enc[at]; b < 0x80 {
		return uint64(b), at + 1
	}
	x, k := binary.Uvarint(enc[at:])
	return x, at + k
}

// unzigzag is the int64 a varint's zigzag encoding x holds
// (binary.AppendVarint's).
func unzigzag(x uint64) int64 {
	return int64(x>>1) ^ -int64(x&1)
}

// Same reports whether o and p are one Offsets: the same build, which a
// reading keeps while its group does not change (the admin API's
// sampler tells a quiet group by it). Two builds of equal offsets are
// not the same.
func (o Offsets) Same(p Offsets) bool {
	return o.topics == p.topics && len(o.enc) == len(p.enc) && (len(o.enc) == 0 || &o.enc[0] == &p.enc[0])
}

// MakeOffsets is list as an Offsets, in list's order, for tests and
// fakes (a shard builds its own, sharing topic names).
func MakeOffsets(list []OffsetSummary) Offsets {
	var b offsetsBuilder
	for _, o := range list {
		b.add(o.Topic, o.Partition, o.Offset, o.CommitTimestamp)
	}
	return b.build()
}

// offsetsBuilder builds one group's Offsets at a time, into scratch
// space it keeps, so that each costs one allocation: its varints (and
// one for its topics' list, the first time a set of topics is seen).
type offsetsBuilder struct {
	n       int
	entries []byte   // the entries' varints
	runs    []int    // each topic run's count
	names   []string // each topic run's name
	// prev is the last offset added.
	prev OffsetSummary
	// lists are the topic lists built so far, by name (one topic) or by
	// key (several), for groups of the same topics to share; nil in a
	// builder of one Offsets (MakeOffsets).
	one, many map[string]*[]string
	key       []byte
}

// newOffsetsBuilder is a builder of many groups' Offsets, whose groups of
// the same topics share one list of them.
func newOffsetsBuilder() offsetsBuilder {
	return offsetsBuilder{one: map[string]*[]string{}, many: map[string]*[]string{}}
}

// maxLists bounds the lists a builder keeps: past it they are forgotten
// (those Offsets hold stay), so that topics deleted long ago are not.
const maxLists = 1 << 12

// add appends an offset.
func (b *offsetsBuilder) add(topic string, p int32, offset, commitTimestamp int64) {
	if b.n == 0 || topic != b.names[len(b.names)-1] {
		b.names = append(b.names, topic)
		b.runs = append(b.runs, 0)
	}
	b.n++
	b.runs[len(b.runs)-1]++
	// Deltas wrap as int64 arithmetic does, and so back: any value
	// round-trips.
	b.entries = binary.AppendVarint(b.entries, int64(p)-int64(b.prev.Partition))
	b.entries = binary.AppendVarint(b.entries, offset-b.prev.Offset)
	b.entries = binary.AppendVarint(b.entries, commitTimestamp-b.prev.CommitTimestamp)
	b.prev = OffsetSummary{Partition: p, Offset: offset, CommitTimestamp: commitTimestamp}
}

// build returns the offsets added since the last build, and starts
// afresh.
func (b *offsetsBuilder) build() Offsets {
	if b.n == 0 {
		return Offsets{}
	}
	size := uvarintLen(uint64(b.n)) + len(b.entries)
	for _, k := range b.runs {
		size += uvarintLen(uint64(k))
	}
	enc := make([]byte, 0, size)
	enc = binary.AppendUvarint(enc, uint64(b.n))
	for _, k := range b.runs {
		enc = binary.AppendUvarint(enc, uint64(k))
	}
	enc = append(enc, b.entries...)
	o := Offsets{topics: b.list(), enc: enc}
	b.n, b.entries, b.runs, b.names, b.prev = 0, b.entries[:0], b.runs[:0], b.names[:0], OffsetSummary{}
	return o
}

// list is the shared list of b.names.
func (b *offsetsBuilder) list() *[]string {
	if b.one == nil {
		names := append([]string(nil), b.names...)
		return &names
	}
	if len(b.one) >= maxLists || len(b.many) >= maxLists {
		clear(b.one)
		clear(b.many)
	}
	if len(b.names) == 1 {
		l, ok := b.one[b.names[0]]
		if !ok {
			l = &[]string{b.names[0]}
			b.one[b.names[0]] = l
		}
		return l
	}
	b.key = b.key[:0]
	for _, name := range b.names {
		b.key = binary.AppendUvarint(b.key, uint64(len(name)))
		b.key = append(b.key, name...)
	}
	l, ok := b.many[string(b.key)]
	if !ok {
		names := append([]string(nil), b.names...)
		l = &names
		b.many[string(b.key)] = l
	}
	return l
}

// uvarintLen is the length of x as a uvarint.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// String is the offsets as a slice of them prints, for tests' messages.
func (o Offsets) String() string {
	return fmt.Sprintf("%+v", slices.Collect(o.All()))
}
