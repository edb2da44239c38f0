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
	"maps"
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
	// committed is each group's committed offsets by topic and
	// partition; a group with none has no entry.
	committed map[Group]map[string]map[int32]*record.Offset
	// pending is each group's transactional offsets by producer.
	pending map[Group]map[int64]map[TP]record.Offset
}

// New returns the empty offsets of shard, whose records go through rec.
func New(shard uint16, rec *machine.Recorder) *Book {
	return &Book{shard: shard, rec: rec, committed: map[Group]map[string]map[int32]*record.Offset{}}
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
		if ts := b.committed[g]; ts != nil {
			if ps := ts[k.Topic]; ps != nil {
				delete(ps, k.Partition)
				if len(ps) == 0 {
					delete(ts, k.Topic)
				}
			}
			if len(ts) == 0 {
				delete(b.committed, g)
			}
		}
		return nil
	}
	o, err := record.DecodeOffset(v)
	if err != nil {
		return fmt.Errorf("offset %s/%s/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	b.apply(g, k.Topic, k.Partition, o)
	return nil
}

// apply is the replay of a committed offset's record once decoded; Commit
// runs it for the records it writes, without decoding them. The names may
// be a request's, which alias its whole frame: those that start an entry
// are copied.
func (b *Book) apply(g Group, topic string, p int32, o record.Offset) {
	ts := b.committed[g]
	if ts == nil {
		ts = map[string]map[int32]*record.Offset{}
		b.committed[Group{strings.Clone(g.Tenant), strings.Clone(g.Name)}] = ts
	}
	ps := ts[topic]
	if ps == nil {
		ps = map[int32]*record.Offset{}
		ts[strings.Clone(topic)] = ps
	}
	if cur := ps[p]; cur != nil {
		*cur = o
	} else {
		n := o // only a new partition's offset goes to the heap
		ps[p] = &n
	}
}

// Commit writes a committed offset and applies it (the one record rule,
// without decoding what it just encoded).
func (b *Book) Commit(g Group, topic string, p int32, o record.Offset) {
	o.Metadata = strings.Clone(o.Metadata) // kept: not the request's frame
	b.rec.Applied(b.offsetKey(g, topic, p), o.Encode())
	b.apply(g, topic, p, o)
}

// Delete tombstones a committed offset, if there is one.
func (b *Book) Delete(g Group, topic string, p int32) {
	if b.committed[g][topic][p] != nil {
		b.rec.Emit(b.offsetKey(g, topic, p), nil)
	}
}

// Get returns a committed offset, or nil. It must not be changed.
func (b *Book) Get(g Group, topic string, p int32) *record.Offset {
	return b.committed[g][topic][p]
}

// Has reports whether g has a committed offset.
func (b *Book) Has(g Group) bool { return len(b.committed[g]) > 0 }

// Count counts g's committed offsets.
func (b *Book) Count(g Group) int {
	n := 0
	for _, ps := range b.committed[g] {
		n += len(ps)
	}
	return n
}

// Topics returns the topics g has committed offsets of, sorted.
func (b *Book) Topics(g Group) []string { return slices.Sorted(maps.Keys(b.committed[g])) }

// Partitions returns the partitions of topic g has committed offsets of,
// sorted.
func (b *Book) Partitions(g Group, topic string) []int32 {
	return slices.Sorted(maps.Keys(b.committed[g][topic]))
}

// Each calls fn for every committed offset of g, in topic and partition
// order.
func (b *Book) Each(g Group, fn func(topic string, p int32, o *record.Offset)) {
	ts := b.committed[g]
	for _, t := range slices.Sorted(maps.Keys(ts)) {
		for _, p := range slices.Sorted(maps.Keys(ts[t])) {
			fn(t, p, ts[t][p])
		}
	}
}

// DeleteGroup tombstones every committed offset of g (in topic, partition
// order).
func (b *Book) DeleteGroup(g Group) {
	b.Each(g, func(t string, p int32, _ *record.Offset) { b.rec.Emit(b.offsetKey(g, t, p), nil) })
}

// Expire tombstones g's committed offsets whose retention has run out:
// those of topics keep does not keep whose age, counted from since(o),
// is at least retention (all in milliseconds). (Kafka's
// cleanupGroupMetadata; which offsets a group keeps and when their
// retention starts are its type's rules.)
func (b *Book) Expire(g Group, nowMs, retentionMs int64, keep func(topic string) bool, since func(o *record.Offset) int64) {
	b.Each(g, func(t string, p int32, o *record.Offset) {
		if !keep(t) && nowMs-since(o) >= retentionMs {
			b.rec.Emit(b.offsetKey(g, t, p), nil)
		}
	})
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
func (b *Book) Reconcile(live map[string]map[string][16]byte) {
	for _, g := range b.sortedGroups() {
		b.Each(g, func(t string, p int32, o *record.Offset) {
			id, ok := live[g.Tenant][t]
			if !ok || (o.TopicID != [16]byte{} && o.TopicID != id) {
				b.rec.Emit(b.offsetKey(g, t, p), nil)
			}
		})
	}
}

func (b *Book) sortedGroups() []Group {
	out := make([]Group, 0, len(b.committed))
	for g := range b.committed {
		out = append(out, g)
	}
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
	b.Each(g, func(t string, p int32, o *record.Offset) {
		lines = append(lines, fmt.Sprintf("  offset %s/%d %+v", t, p, *o))
	})
	return lines
}
