package offsets

import (
	"slices"
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
)

// book is a Book whose records are also kept as a store would (key →
// value), so a test can rebuild one from them.
type book struct {
	*Book
	rec    machine.Recorder
	stored map[string][]byte
}

func newBook(t *testing.T) *book {
	b := &book{stored: map[string][]byte{}}
	b.Book = New(3, &b.rec)
	b.rec.Replay = func(r machine.Record) error { return replay(b.Book, r) }
	return b
}

func replay(b *Book, r machine.Record) error {
	kind, key, err := record.ParseKey(r.Key)
	if err != nil {
		return err
	}
	switch kind {
	case record.KindOffset:
		return b.ReplayOffset(key.(record.OffsetKey), r.Value)
	case record.KindTxnOffset:
		return b.ReplayPending(key.(record.TxnOffsetKey), r.Value)
	}
	return nil
}

// flush moves the records written so far to the store.
func (b *book) flush() { b.store(b.rec.Take()) }

func (b *book) store(recs []machine.Record) {
	for _, r := range recs {
		if r.Value == nil {
			delete(b.stored, string(r.Key))
		} else {
			b.stored[string(r.Key)] = r.Value
		}
	}
}

// rendering is the whole durable state of b, for comparisons.
func (b *Book) rendering(groups ...Group) string {
	var lines []string
	for _, g := range groups {
		lines = append(lines, b.Durable(g)...)
	}
	return strings.Join(lines, "\n") + "\n" + b.PendingState()
}

// has reports whether g has a committed offset of topic's partition p.
func has(b *Book, g Group, topic string, p int32) bool {
	_, ok := b.Get(g, topic, p)
	return ok
}

// checkReplay rebuilds a Book from the stored records and compares.
func (b *book) checkReplay(t *testing.T, groups ...Group) {
	t.Helper()
	b.flush()
	fresh := New(3, &machine.Recorder{})
	if err := machine.ReplaySorted(b.stored, func(r machine.Record) error { return replay(fresh, r) }); err != nil {
		t.Fatal(err)
	}
	if got, want := fresh.rendering(groups...), b.rendering(groups...); got != want {
		t.Fatalf("rebuilt from the records:\n%s\nlive:\n%s", got, want)
	}
}

func TestCommitDeleteExpire(t *testing.T) {
	b := newBook(t)
	g, h := Group{"", "g"}, Group{"org", "g"}
	b.Commit(g, "a", 0, record.Offset{Offset: 10, CommitTimestamp: 1000})
	b.Commit(g, "a", 1, record.Offset{Offset: 11, CommitTimestamp: 5000})
	b.Commit(g, "b", 0, record.Offset{Offset: 12, CommitTimestamp: 1000})
	b.Commit(h, "a", 0, record.Offset{Offset: 13, CommitTimestamp: 1000})
	b.checkReplay(t, g, h)
	if got, ok := b.Get(g, "a", 1); !ok || got.Offset != 11 {
		t.Fatalf("Get = %+v, want offset 11", got)
	}
	if got, ok := b.Get(Group{"other", "g"}, "a", 0); ok {
		t.Fatalf("another tenant's group of the same name has %+v", got)
	}
	if b.Count(g) != 3 || !slices.Equal(b.Topics(g), []string{"a", "b"}) || !slices.Equal(b.Partitions(g, "a"), []int32{0, 1}) {
		t.Fatalf("Count %d, Topics %v, Partitions %v", b.Count(g), b.Topics(g), b.Partitions(g, "a"))
	}

	// Retention: b is kept by keep; of a, only the old commit expires.
	b.Expire(g, 6000, 4000, func(topic string) bool { return topic == "b" }, func(o record.Offset) int64 { return o.CommitTimestamp })
	if has(b.Book, g, "a", 0) || !has(b.Book, g, "a", 1) || !has(b.Book, g, "b", 0) {
		t.Fatalf("after expiry: a/0 %v, a/1 %v, b/0 %v", has(b.Book, g, "a", 0), has(b.Book, g, "a", 1), has(b.Book, g, "b", 0))
	}
	b.checkReplay(t, g, h)

	b.flush()
	b.Delete(g, "b", 0)
	b.Delete(g, "b", 7) // none: writes nothing
	if recs := b.rec.Take(); len(recs) != 1 || recs[0].Value != nil {
		t.Fatalf("Delete wrote %+v, want one tombstone (of b/0)", recs)
	} else {
		b.store(recs)
	}
	b.DeleteGroup(g)
	if b.Has(g) || !b.Has(h) {
		t.Fatalf("after DeleteGroup: Has(g) %v, Has(h) %v", b.Has(g), b.Has(h))
	}
	b.checkReplay(t, g, h)
}

func TestTopicsDeletedAndReconciled(t *testing.T) {
	b := newBook(t)
	g := Group{"", "g"}
	old, cur := [16]byte{1}, [16]byte{2}
	b.Commit(g, "gone", 0, record.Offset{Offset: 1, TopicID: old})
	b.Commit(g, "recreated", 0, record.Offset{Offset: 2, TopicID: old})
	b.Commit(g, "same", 0, record.Offset{Offset: 3, TopicID: cur})
	b.Commit(g, "unstamped", 0, record.Offset{Offset: 4})
	b.Commit(g, "deleted", 0, record.Offset{Offset: 5})
	b.DeleteTopics("other-tenant", []string{"deleted"})
	if !has(b.Book, g, "deleted", 0) {
		t.Fatal("another tenant's topic deletion removed this tenant's offsets")
	}
	b.DeleteTopics("", []string{"deleted"})
	b.Reconcile(map[string]map[string][16]byte{"": {"recreated": cur, "same": cur, "unstamped": cur}})
	if got := b.Topics(g); !slices.Equal(got, []string{"same", "unstamped"}) {
		t.Fatalf("topics left %v, want [same unstamped]", got)
	}
	b.checkReplay(t, g)
}

func TestPendingEndTxn(t *testing.T) {
	b := newBook(t)
	g, h := Group{"", "g"}, Group{"", "h"}
	b.Commit(g, "a", 0, record.Offset{Offset: 1})
	b.AddPending(g, 7, TP{"a", 0}, record.Offset{Offset: 20})
	b.AddPending(g, 7, TP{"a", 1}, record.Offset{Offset: 21})
	b.AddPending(g, 8, TP{"a", 0}, record.Offset{Offset: 30})
	b.AddPending(h, 7, TP{"a", 0}, record.Offset{Offset: 40})
	b.checkReplay(t, g, h)
	if !b.Unstable(g, "a", 1) || b.Unstable(g, "b", 0) || !b.HasPendingOf(g, 8) || b.HasPendingOf(g, 9) {
		t.Fatal("Unstable or HasPendingOf is wrong")
	}
	if got := b.PendingGroups(7); !slices.Equal(got, []Group{g, h}) {
		t.Fatalf("PendingGroups(7) = %v", got)
	}
	b.EndTxn(g, 7, true, 9000)
	if o, ok := b.Get(g, "a", 1); !ok || o.Offset != 21 || o.CommitTimestamp != 9000 {
		t.Fatalf("committed pending offset = %+v, want 21 stamped 9000", o)
	}
	b.EndTxn(g, 8, false, 9000)
	if o, ok := b.Get(g, "a", 0); !ok || o.Offset != 20 {
		t.Fatalf("an aborted transaction changed a/0: %+v", o)
	}
	if b.HasPending(g) || !b.HasPending(h) || !b.AnyPending() {
		t.Fatal("pending offsets left wrong after the ends")
	}
	b.checkReplay(t, g, h)
}

// all is every group's offsets, by group.
func (b *Book) all() map[Group]*groupOffsets {
	out := map[Group]*groupOffsets{}
	b.idx.Range(func(g Group, s *Slot) { out[g] = s.g })
	return out
}

// Count counts g's committed offsets.
func (b *Book) Count(g Group) int {
	n := 0
	if gs := b.offsetsOf(g); gs != nil {
		for _, t := range gs.topics() {
			n += len(t.parts)
		}
	}
	return n
}
