// Package offsets is the committed offsets of a group-coordinator shard's
// groups, and the transactional offsets still pending (the state of
// Kafka's OffsetMetadataManager): their records, their replay, and the
// writes that emit them. It knows nothing of group protocols: whether a
// commit is allowed, which topics a group still subscribes to and when an
// offset's retention starts are the group type's answers, which the shard
// (coordinator/groups) asks before it calls in here.
//
// Durable state follows the one record rule (coordinator/machine): the
// Replay methods are the only code that changes it; a write emits its
// record through the shard's Recorder, which hands it back to Replay, or,
// for a committed offset (the hot path), applies it with the same code
// and queues the record (Recorder.Applied).
//
// It must not do I/O, read a clock, log or start goroutines.
package offsets

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
)

// Group names a group: two tenants' groups of one name are two groups.
type Group struct {
	Tenant, Name string
}

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// Book is one shard's offsets. Its methods are called from the shard's
// loop only.
type Book struct {
	shard uint16
	rec   *machine.Recorder
	// idx holds each group's committed offsets, by topic (sorted by
	// name); a group with none has an empty Slot or none. They are kept
	// compact, not as maps of maps, because a node holds the offsets of
	// up to a million mostly quiet groups (issue 34): an offset costs its
	// entry and no allocation of its own.
	idx Index
	// names interns the topic and tenant names that committed holds, so
	// that the groups committing to one topic share one copy of its name.
	names map[string]interned
	// topics is the table of the topics (a name and an id) that groups'
	// offsets refer to (topicOffsets.ref), so that a million groups
	// committing to one topic hold it once, not a million times: an
	// entry is counted by the groups' topics that refer to it and freed
	// when none do, as names are.
	topics []sharedTopic
	// topicRefs is the index in topics of each topic held there.
	topicRefs map[topicKey]uint32
	// free holds the indexes of the entries freed, for the next topics
	// added: the table is as long as the most topics held at once.
	free []uint32
	// pending is each group's transactional offsets by producer.
	pending map[Group]map[int64]map[TP]record.Offset
	// loading: between StartLoad and Loaded, when the offsets a load
	// replays come a group's in a row, a topic's in partition order.
	loading bool
	// build is, while loading, the topic the last offset replayed went
	// to, whose entries are (alias) scratch until another topic's come:
	// then they get an array of their own of just their size (settle).
	// Growing each topic's array as its offsets came allocated three
	// times for ten partitions, and cost a copy of them all at Loaded.
	build   *topicOffsets
	scratch []entry
}

// StartLoad says that the offsets replayed until Loaded are a load's.
func (b *Book) StartLoad() { b.loading = true }

// Loaded ends a load.
func (b *Book) Loaded() {
	b.settle()
	b.loading, b.scratch = false, nil
}

// settle gives the topic the load was building an array of its own.
// Called before anything but the build changes a group's topics, the
// build's pointer still points at it.
func (b *Book) settle() {
	if t := b.build; t != nil {
		t.parts = slices.Clone(t.parts)
		b.build = nil
	}
}

// Slot is where an Index keeps a group's offsets.
type Slot struct{ g *groupOffsets }

// Empty reports whether the slot holds no offsets.
func (s *Slot) Empty() bool { return s.g == nil }

// Index is where a Book keeps each group's offsets: a map of its own
// (New), or the shard's registry of groups, whose entries hold their
// group's Slot (NewIn), so that a node of a million groups keeps one map
// of them, not two.
type Index interface {
	// Slot returns g's slot, or nil if it has none; with add, it makes
	// one (g's names may alias a request's frame: copied unless kept
	// says the caller keeps them).
	Slot(g Group, add, kept bool) *Slot
	// Emptied says that g's slot holds no offsets any more.
	Emptied(g Group)
	// Range calls fn for every group whose slot holds offsets.
	Range(fn func(g Group, s *Slot))
}

// mapIndex is a Book's own Index.
type mapIndex struct {
	b *Book
	m map[Group]*Slot
}

func (x *mapIndex) Slot(g Group, add, kept bool) *Slot {
	s := x.m[g]
	if s == nil && add {
		if !kept {
			g.Name = strings.Clone(g.Name)
		}
		s = &Slot{}
		x.m[Group{x.b.intern(g.Tenant), g.Name}] = s
	}
	return s
}

func (x *mapIndex) Emptied(g Group) {
	x.b.release(g.Tenant)
	delete(x.m, g)
}

func (x *mapIndex) Range(fn func(Group, *Slot)) {
	for g, s := range x.m {
		if s.g != nil {
			fn(g, s)
		}
	}
}

// offsetsOf returns g's offsets, nil if none.
func (b *Book) offsetsOf(g Group) *groupOffsets {
	if s := b.idx.Slot(g, false, false); s != nil {
		return s.g
	}
	return nil
}

// groupOffsets is a group's committed offsets, by topic sorted by name
// (topics). A group nearly always commits to one topic, which it holds
// itself: 48 bytes in all, where its topics' slice in an object of its
// own and their array took 24 and 48. (The Slot holds a pointer to it,
// not the slice, so as to fit in a registry entry.)
type groupOffsets struct {
	// one is the group's topic when it has only one.
	one [1]topicOffsets
	// many are its topics when it has more, nil when it has one.
	many *[]topicOffsets
}

// topics returns the group's topics: one or more.
func (gs *groupOffsets) topics() []topicOffsets {
	if gs.many != nil {
		return *gs.many
	}
	return gs.one[:]
}

// setTopics makes ts, one topic or more (a group with none is not
// kept), the group's topics, in place of those topics returned.
func (gs *groupOffsets) setTopics(ts []topicOffsets) {
	switch {
	case len(ts) == 1:
		gs.one[0], gs.many = ts[0], nil
	case gs.many == nil:
		// ts is a new array (one's has room for one): one's topic
		// is in it, and must not stay referred to from here.
		gs.one[0] = topicOffsets{}
		gs.many = &ts
	default:
		*gs.many = ts
	}
}

// topicOffsets is a group's committed offsets of one topic, sorted by
// partition; a topic with none is not kept.
type topicOffsets struct {
	// ref is the topic's name and id in the Book's table (Book.topics):
	// 4 bytes, where the two were 32 in each group. The id is that of
	// its offsets but those odd names another for: a group's partitions
	// of one topic nearly always have the same.
	ref   uint32
	parts []entry
	// odd holds what few offsets have: nil in the normal case.
	odd *oddities
}

// topicKey is a topic as its offsets name it: its name and id.
type topicKey struct {
	name string // interned
	id   [16]byte
}

// sharedTopic is an entry of a Book's table of topics, and how many
// groups' topics refer to it.
type sharedTopic struct {
	topicKey
	refs int
}

// oddities are what the offsets of a topic rarely carry, by partition:
// ids other than the topic's (the offsets of a topic deleted and created
// again under its name, until their tombstones), and metadata other than
// "" (clients almost always commit none).
type oddities struct {
	ids  map[int32][16]byte
	meta map[int32]string
}

// entry is a partition's committed offset, held inline: 24 bytes. Its
// topic id and metadata are its topic's (Book.offset).
type entry struct {
	offset, ts int64 // record.Offset's Offset and CommitTimestamp
	epoch, p   int32 // its LeaderEpoch, and the partition
}

// topic returns the name and id t refers to, where the table holds
// them: until share next adds to it.
func (b *Book) topic(t *topicOffsets) *topicKey { return &b.topics[t.ref].topicKey }

// offset returns the committed offset e, of t, holds.
func (b *Book) offset(t *topicOffsets, e entry) record.Offset {
	o := record.Offset{Offset: e.offset, LeaderEpoch: e.epoch, CommitTimestamp: e.ts, TopicID: b.topic(t).id}
	if x := t.odd; x != nil {
		if id, ok := x.ids[e.p]; ok {
			o.TopicID = id
		}
		o.Metadata = x.meta[e.p]
	}
	return o
}

// set records partition p's topic id and metadata (apply calls it only
// when either is odd, or was).
func (b *Book) set(t *topicOffsets, p int32, id [16]byte, meta string) {
	if t.odd == nil {
		t.odd = &oddities{}
	}
	x := t.odd
	if id != b.topic(t).id {
		if x.ids == nil {
			x.ids = map[int32][16]byte{}
		}
		x.ids[p] = id
		if len(x.ids) > len(t.parts)/2 {
			b.rebase(t)
		}
	} else {
		delete(x.ids, p)
	}
	if meta != "" {
		if x.meta == nil {
			x.meta = map[int32]string{}
		}
		x.meta[p] = meta
	} else {
		delete(x.meta, p)
	}
	t.tidy()
}

// unset forgets partition p's topic id and metadata, as its entry goes.
func (t *topicOffsets) unset(p int32) {
	if t.odd == nil {
		return
	}
	delete(t.odd.ids, p)
	delete(t.odd.meta, p)
	t.tidy()
}

// tidy drops maps left empty, so that a topic whose oddities went costs
// no more than one that never had any.
func (t *topicOffsets) tidy() {
	x := t.odd
	if len(x.ids) == 0 {
		x.ids = nil
	}
	if len(x.meta) == 0 {
		x.meta = nil
	}
	if x.ids == nil && x.meta == nil {
		t.odd = nil
	}
}

// rebase makes the topic's id the one most of its offsets have, so that
// the offsets of a topic created again, committed afresh, are not all
// kept as exceptions.
func (b *Book) rebase(t *topicOffsets) {
	x := t.odd
	cur := *b.topic(t)
	count := map[[16]byte]int{}
	best, most := cur.id, 0
	for _, e := range t.parts {
		id, ok := x.ids[e.p]
		if !ok {
			id = cur.id
		}
		if count[id]++; count[id] > most {
			best, most = id, count[id]
		}
	}
	if best == cur.id {
		return
	}
	ids := map[int32][16]byte{}
	for _, e := range t.parts {
		id, ok := x.ids[e.p]
		if !ok {
			id = cur.id
		}
		if id != best {
			ids[e.p] = id
		}
	}
	// The new entry first: the old one's name stays interned.
	old := t.ref
	t.ref, x.ids = b.share(cur.name, best), ids
	b.unshare(old)
}

// interned is a name's one copy, and how many uses of it committed holds.
type interned struct {
	s    string
	refs int
}

// New returns the empty offsets of shard, whose records go through rec.
func New(shard uint16, rec *machine.Recorder) *Book {
	b := &Book{shard: shard, rec: rec, names: map[string]interned{}, topicRefs: map[topicKey]uint32{}}
	b.idx = &mapIndex{b: b, m: map[Group]*Slot{}}
	return b
}

// NewIn returns the empty offsets of shard, kept in idx, whose records go
// through rec.
func NewIn(shard uint16, rec *machine.Recorder, idx Index) *Book {
	return &Book{shard: shard, rec: rec, names: map[string]interned{}, topicRefs: map[topicKey]uint32{}, idx: idx}
}

// intern returns the Book's copy of s (cloned if it has none: s may alias
// a request's frame) and counts a use of it.
func (b *Book) intern(s string) string {
	if s == "" {
		return ""
	}
	n, ok := b.names[s]
	if !ok {
		n.s = strings.Clone(s)
	}
	n.refs++
	b.names[n.s] = n
	return n.s
}

// release drops a use of an interned name; the last forgets it, so that
// deleted topics' names do not pile up.
func (b *Book) release(s string) {
	if s == "" {
		return
	}
	n := b.names[s]
	if n.refs--; n.refs <= 0 {
		delete(b.names, s)
	} else {
		b.names[s] = n
	}
}

// share returns the reference to topic name's id in the table, added
// (its name interned) if it is not there, and counts a use of it.
func (b *Book) share(name string, id [16]byte) uint32 {
	ref, ok := b.topicRefs[topicKey{name, id}]
	if !ok {
		k := topicKey{b.intern(name), id}
		if n := len(b.free); n > 0 {
			ref, b.free = b.free[n-1], b.free[:n-1]
		} else {
			ref = uint32(len(b.topics))
			b.topics = append(b.topics, sharedTopic{})
		}
		b.topics[ref].topicKey = k
		b.topicRefs[k] = ref
	}
	b.topics[ref].refs++
	return ref
}

// unshare drops a use of a table entry; the last frees it, so that the
// table does not keep deleted topics (nor, under their names, their ids
// of before they were created again).
func (b *Book) unshare(ref uint32) {
	s := &b.topics[ref]
	if s.refs--; s.refs > 0 {
		return
	}
	delete(b.topicRefs, s.topicKey)
	b.release(s.name)
	*s = sharedTopic{}
	b.free = append(b.free, ref)
}

// find returns the index of topic in ts, or where it would go.
func (b *Book) find(ts []topicOffsets, topic string) (int, bool) {
	// A group commits to a topic or a few: a scan beats a search.
	if len(ts) <= 8 {
		for i := range ts {
			if n := b.topics[ts[i].ref].name; n >= topic {
				return i, n == topic
			}
		}
		return len(ts), false
	}
	return slices.BinarySearchFunc(ts, topic, func(t topicOffsets, name string) int { return strings.Compare(b.topics[t.ref].name, name) })
}

// findPart returns the index of partition p in es, or where it would go.
// (Written out: slices.BinarySearchFunc's comparison does not inline, and
// this is the commit hot path.)
func findPart(es []entry, p int32) (int, bool) {
	lo, hi := 0, len(es)
	// Commits mostly name partitions in order: try past the last first.
	if hi == 0 || es[hi-1].p < p {
		return hi, false
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].p < p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, es[lo].p == p
}

// lookup returns g's committed offset of topic's partition p, if it has
// one.
func (b *Book) lookup(g Group, topic string, p int32) (record.Offset, bool) {
	gs := b.offsetsOf(g)
	if gs == nil {
		return record.Offset{}, false
	}
	ts := gs.topics()
	i, ok := b.find(ts, topic)
	if !ok {
		return record.Offset{}, false
	}
	t := &ts[i]
	j, ok := findPart(t.parts, p)
	if !ok {
		return record.Offset{}, false
	}
	return b.offset(t, t.parts[j]), true
}

func (b *Book) groupKey(g Group) record.GroupKey {
	return record.GroupKey{Shard: b.shard, Tenant: g.Tenant, Group: g.Name}
}

func (b *Book) offsetKey(g Group, topic string, p int32) []byte {
	return record.OffsetKey{GroupKey: b.groupKey(g), Topic: topic, Partition: p}.Key()
}

func (b *Book) pendingKey(g Group, pid int64, tp TP) []byte {
	return record.TxnOffsetKey{GroupKey: b.groupKey(g), ProducerID: pid, Topic: tp.Topic, Partition: tp.Partition}.Key()
}

// ReplayOffset applies a committed offset's record (v nil: a tombstone).
func (b *Book) ReplayOffset(k record.OffsetKey, v []byte) error {
	g := Group{k.Tenant, k.Group}
	if v == nil {
		b.remove(g, k.Topic, k.Partition)
		return nil
	}
	o, err := record.DecodeOffset(v)
	if err != nil {
		return fmt.Errorf("offset %s/%s/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	b.apply(g, k.Topic, k.Partition, o, false)
	return nil
}

// ReplayNamed is ReplayOffset for a key whose tenant and group are
// strings the caller keeps for as long as the group's offsets (the
// shard's registry's): the Book keeps them too, rather than copies of
// its own, so that a group's name is held once.
func (b *Book) ReplayNamed(k record.OffsetKey, v []byte) error {
	if v == nil {
		return b.ReplayOffset(k, v)
	}
	o, err := record.DecodeOffset(v)
	if err != nil {
		return fmt.Errorf("offset %s/%s/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	b.apply(Group{k.Tenant, k.Group}, k.Topic, k.Partition, o, true)
	return nil
}

// apply is the replay of a committed offset's record once decoded; Commit
// runs it for the records it writes, without decoding them. The names may
// be a request's, which alias its whole frame: those that start an entry
// are copied, but for a group name the caller keeps (kept).
func (b *Book) apply(g Group, topic string, p int32, o record.Offset, kept bool) {
	slot := b.idx.Slot(g, true, kept)
	gs := slot.g
	if gs == nil {
		gs = &groupOffsets{one: [1]topicOffsets{{ref: b.share(topic, o.TopicID)}}}
		slot.g = gs
	}
	ts := gs.topics()
	i, ok := b.find(ts, topic)
	if !ok {
		b.settle() // before the group's topics move
		gs.setTopics(slices.Insert(ts, i, topicOffsets{ref: b.share(topic, o.TopicID)}))
		ts = gs.topics()
	} else if b.build != &ts[i] {
		b.settle()
	}
	t := &ts[i]
	e := entry{offset: o.Offset, ts: o.CommitTimestamp, epoch: o.LeaderEpoch, p: p}
	j, ok := findPart(t.parts, p)
	switch {
	case ok:
		t.parts[j] = e
	case b.loading && t == b.build:
		b.scratch = slices.Insert(t.parts, j, e) // t.parts aliases scratch
		t.parts = b.scratch
	case b.loading:
		b.scratch = append(append(append(b.scratch[:0], t.parts[:j]...), e), t.parts[j:]...)
		t.parts, b.build = b.scratch, t
	case len(t.parts) < cap(t.parts):
		t.parts = slices.Insert(t.parts, j, e)
	default:
		t.parts = b.grow(t.parts, j, e)
	}
	if t.odd != nil || o.TopicID != b.topic(t).id || o.Metadata != "" {
		b.set(t, p, o.TopicID, o.Metadata) // after the entry is in: set counts them
	}
}

// grow returns es with e inserted at j, in a new array.
func (b *Book) grow(es []entry, j int, e entry) []entry {
	// Grow by a quarter, not by append's doubling: a quiet group's
	// offsets stay as they are for days, and doubling would give a
	// group of a hundred partitions room for 128. (By an eighth saved
	// little more, as the allocator rounds sizes up, and made loading
	// such a group more than twice as slow as the maps did.)
	n := len(es) + max(1, len(es)/4)
	out := slices.Grow([]entry(nil), n)
	out = append(out, es[:j]...)
	out = append(out, e)
	return append(out, es[j:]...)
}

// remove is the replay of a committed offset's tombstone: the entry goes,
// and with its last entry its topic, and with its last topic the group.
func (b *Book) remove(g Group, topic string, p int32) {
	b.settle()
	gs := b.offsetsOf(g)
	if gs == nil {
		return
	}
	ts := gs.topics()
	i, ok := b.find(ts, topic)
	if !ok {
		return
	}
	t := &ts[i]
	j, ok := findPart(t.parts, p)
	if !ok {
		return
	}
	t.parts = slices.Delete(t.parts, j, j+1)
	t.unset(p)
	if n := len(t.parts); n > 0 {
		if cap(t.parts) > 8 && n <= cap(t.parts)/4 {
			t.parts = slices.Clone(t.parts) // expired offsets do not keep their room
		}
		return
	}
	b.unshare(t.ref)
	if ts = slices.Delete(ts, i, i+1); len(ts) > 0 {
		gs.setTopics(ts)
		return
	}
	b.idx.Slot(g, false, false).g = nil
	b.idx.Emptied(g)
}

// Commit writes a committed offset and applies it (the one record rule,
// without decoding what it just encoded).
func (b *Book) Commit(g Group, topic string, p int32, o record.Offset) {
	o.Metadata = strings.Clone(o.Metadata) // kept: not the request's frame
	b.rec.Applied(b.offsetKey(g, topic, p), o.Encode())
	b.apply(g, topic, p, o, false)
}

// Delete tombstones a committed offset, if there is one.
func (b *Book) Delete(g Group, topic string, p int32) {
	if _, ok := b.lookup(g, topic, p); ok {
		b.rec.Emit(b.offsetKey(g, topic, p), nil)
	}
}

// Get returns a committed offset, if there is one.
func (b *Book) Get(g Group, topic string, p int32) (record.Offset, bool) {
	return b.lookup(g, topic, p)
}

// Has reports whether g has a committed offset.
func (b *Book) Has(g Group) bool { return b.offsetsOf(g) != nil }

// Topics returns the topics g has committed offsets of, sorted.
func (b *Book) Topics(g Group) []string {
	gs := b.offsetsOf(g)
	if gs == nil {
		return nil
	}
	ts := gs.topics()
	out := make([]string, len(ts))
	for i := range ts {
		out[i] = b.topic(&ts[i]).name
	}
	return out
}

// Partitions returns the partitions of topic g has committed offsets of,
// sorted.
func (b *Book) Partitions(g Group, topic string) []int32 {
	gs := b.offsetsOf(g)
	if gs == nil {
		return nil
	}
	ts := gs.topics()
	i, ok := b.find(ts, topic)
	if !ok {
		return nil
	}
	out := make([]int32, len(ts[i].parts))
	for j, e := range ts[i].parts {
		out[j] = e.p
	}
	return out
}

// Read calls fn for every committed offset of g, in topic and partition
// order; fn must not change the Book. It is the walk the lag sampler's
// reading makes of every group (Each looks g up again at each offset, so
// that fn may delete).
func (b *Book) Read(g Group, fn func(topic string, p int32, o record.Offset)) {
	gs := b.offsetsOf(g)
	if gs == nil {
		return
	}
	ts := gs.topics()
	for i := range ts {
		t := &ts[i]
		name := b.topic(t).name
		for _, e := range t.parts {
			fn(name, e.p, b.offset(t, e))
		}
	}
}

// Each calls fn for every committed offset of g, in topic and partition
// order. fn may tombstone offsets (its records replay at once): the walk
// goes on from the offset after the one it was given, as it finds the
// Book then.
func (b *Book) Each(g Group, fn func(topic string, p int32, o record.Offset)) {
	i, j := 0, 0
	for {
		gs := b.offsetsOf(g)
		if gs == nil || i >= len(gs.topics()) {
			return
		}
		t := &gs.topics()[i]
		if j >= len(t.parts) {
			i, j = i+1, 0
			continue
		}
		name, p := b.topic(t).name, t.parts[j].p
		fn(name, p, b.offset(t, t.parts[j]))
		i, j = b.after(g, i, j, name, p)
	}
}

// after returns where Each goes on after g's offset of topic's partition p,
// which was at i, j before fn ran.
func (b *Book) after(g Group, i, j int, topic string, p int32) (int, int) {
	gs := b.offsetsOf(g)
	if gs == nil {
		return 0, 0
	}
	ts := gs.topics()
	if i < len(ts) && b.topic(&ts[i]).name == topic {
		if es := ts[i].parts; j < len(es) && es[j].p == p {
			return i, j + 1 // unchanged: the common case
		}
	}
	i, ok := b.find(ts, topic)
	if !ok {
		return i, 0 // the topic went: its successor is now at i
	}
	es := ts[i].parts
	j, ok = findPart(es, p)
	if ok {
		j++
	}
	return i, j
}

// DeleteGroup tombstones every committed offset of g (in topic, partition
// order).
func (b *Book) DeleteGroup(g Group) {
	b.Each(g, func(t string, p int32, _ record.Offset) { b.rec.Emit(b.offsetKey(g, t, p), nil) })
}

// Expire tombstones g's committed offsets whose retention has run out:
// those of topics keep does not keep whose age, counted from since(o),
// is at least retention (all in milliseconds). (Kafka's
// cleanupGroupMetadata; which offsets a group keeps and when their
// retention starts are its type's rules.)
//
// Every sweep asks of every group, and nearly every group has nothing to
// expire: its offsets are read once first (Read), without Each's lookup
// of the group at every offset (Each's fn may change the group), and
// only a group with an offset to expire is gone through again to
// tombstone it.
//
// It returns when the first offset it leaves that it would tombstone
// comes due (NextExpiry, after it), found in the same read.
func (b *Book) Expire(g Group, nowMs, retentionMs int64, keep func(topic string) bool, since func(o record.Offset) int64) (next int64, ok bool) {
	due := false
	b.Read(g, func(t string, _ int32, o record.Offset) {
		if keep(t) {
			return
		}
		switch e := since(o) + retentionMs; {
		case nowMs >= e:
			due = true
		case !ok || e < next:
			next, ok = e, true
		}
	})
	if !due {
		return next, ok
	}
	expired := func(t string, o record.Offset) bool { return !keep(t) && nowMs-since(o) >= retentionMs }
	b.Each(g, func(t string, p int32, o record.Offset) {
		if expired(t, o) {
			b.rec.Emit(b.offsetKey(g, t, p), nil)
		}
	})
	return next, ok
}

// NextExpiry is when the first of g's committed offsets that Expire
// would tombstone comes due, as Unix ms (Expire's rule: retention after
// since(o), for an offset of a topic keep does not keep); ok is false if
// none ever would as things are.
func (b *Book) NextExpiry(g Group, retentionMs int64, keep func(topic string) bool, since func(o record.Offset) int64) (at int64, ok bool) {
	b.Read(g, func(t string, _ int32, o record.Offset) {
		if keep(t) {
			return
		}
		if e := since(o) + retentionMs; !ok || e < at {
			at, ok = e, true
		}
	})
	return at, ok
}

// DeleteTopics tombstones the offsets of topics of every group of tenant,
// so that a topic created again under the same name starts with none.
func (b *Book) DeleteTopics(tenant string, topics []string) {
	for _, g := range b.sortedGroups() {
		if g.Tenant != tenant {
			continue
		}
		for _, t := range topics {
			for _, p := range b.Partitions(g, t) {
				b.rec.Emit(b.offsetKey(g, t, p), nil)
			}
		}
	}
}

// Reconcile tombstones the committed offsets of topics the broker no
// longer has (live: by tenant then name, the topic's id), or has under
// a new id: what a crash between a topic's deletion and its offsets'
// tombstones leaves behind. Offsets without a stamped id (committed
// through an embedding that gives none) are kept while a topic of their
// name exists.
//
// Every start reconciles, and nearly always finds nothing: the groups
// are walked in the index's order with each topic checked once, and
// only those that may hold an offset to delete are sorted and gone
// through offset by offset (the tombstones in the order of the groups).
// At a million groups, sorting every group and looking each offset's
// group up again was a tenth of a node's load.
func (b *Book) Reconcile(live map[string]map[string][16]byte) {
	var stale []Group
	b.idx.Range(func(g Group, s *Slot) {
		if b.mayBeStale(s.g, live[g.Tenant]) {
			stale = append(stale, g)
		}
	})
	slices.SortFunc(stale, compareGroups)
	for _, g := range stale {
		b.Each(g, func(t string, p int32, o record.Offset) {
			id, ok := live[g.Tenant][t]
			if !ok || (o.TopicID != [16]byte{} && o.TopicID != id) {
				b.rec.Emit(b.offsetKey(g, t, p), nil)
			}
		})
	}
}

// mayBeStale reports whether gs may hold an offset of a topic its
// tenant (whose topics are live) no longer has, or has under another
// id: whether Reconcile must go through its offsets.
func (b *Book) mayBeStale(gs *groupOffsets, live map[string][16]byte) bool {
	ts := gs.topics()
	for i := range ts {
		k := b.topic(&ts[i])
		id, ok := live[k.name]
		if !ok || (k.id != [16]byte{} && k.id != id) {
			return true
		}
		if x := ts[i].odd; x != nil {
			for _, odd := range x.ids {
				if odd != [16]byte{} && odd != id {
					return true
				}
			}
		}
	}
	return false
}

func (b *Book) sortedGroups() []Group {
	var out []Group
	b.idx.Range(func(g Group, _ *Slot) { out = append(out, g) })
	slices.SortFunc(out, compareGroups)
	return out
}

func compareGroups(a, b Group) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Name, b.Name))
}

// Durable renders g's committed offsets, a line each, for the shard's
// rendering of its durable state.
func (b *Book) Durable(g Group) []string {
	var lines []string
	b.Each(g, func(t string, p int32, o record.Offset) {
		lines = append(lines, fmt.Sprintf("  offset %s/%d %+v", t, p, o))
	})
	return lines
}
