package offsets

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/cohort-dev/cohort/record"

	"github.com/cohort-dev/cohort/internal/memtest"
)

// The committed offsets are kept in sorted slices, not maps (issue 34):
// these tests hold the slices to what the maps did.

// parts renders g's offsets of topic as partition=offset, in the order
// Each gives them.
func parts(b *Book, g Group) string {
	var out []string
	b.Each(g, func(t string, p int32, o record.Offset) {
		out = append(out, fmt.Sprintf("%s/%d=%d", t, p, o.Offset))
	})
	return strings.Join(out, " ")
}

func TestEntriesDeletedAndAddedAgain(t *testing.T) {
	b := newBook(t)
	g := Group{"", "g"}
	for p := range int32(5) {
		b.Commit(g, "a", p, record.Offset{Offset: int64(10 + p)})
	}
	b.Delete(g, "a", 2) // the middle
	if got, want := parts(b.Book, g), "a/0=10 a/1=11 a/3=13 a/4=14"; got != want {
		t.Fatalf("after deleting a/2: %s, want %s", got, want)
	}
	if o, _ := b.Get(g, "a", 3); has(b.Book, g, "a", 2) || o.Offset != 13 {
		t.Fatalf("a/2 %v, a/3 %v", has(b.Book, g, "a", 2), o)
	}
	b.Delete(g, "a", 4) // the last
	b.Delete(g, "a", 0) // the first
	b.Commit(g, "a", 2, record.Offset{Offset: 22})
	b.Commit(g, "a", 0, record.Offset{Offset: 20})
	if got, want := parts(b.Book, g), "a/0=20 a/1=11 a/2=22 a/3=13"; got != want {
		t.Fatalf("added again: %s, want %s", got, want)
	}
	b.checkReplay(t, g)
	for _, p := range b.Partitions(g, "a") {
		b.Delete(g, "a", p)
	}
	if b.Has(g) || len(b.all()) != 0 || len(b.names) != 0 {
		t.Fatalf("a group with no offsets left is kept: Has %v, %d groups, names %v", b.Has(g), len(b.all()), b.names)
	}
	b.Commit(g, "a", 7, record.Offset{Offset: 70})
	if got := parts(b.Book, g); got != "a/7=70" {
		t.Fatalf("group started again: %s", got)
	}
	b.checkReplay(t, g)
}

func TestTombstonesOfMissingOffsets(t *testing.T) {
	b := newBook(t)
	g := Group{"t", "g"}
	b.Commit(g, "b", 1, record.Offset{Offset: 1})
	for _, k := range []record.OffsetKey{
		{GroupKey: record.GroupKey{Tenant: "t", Group: "other"}, Topic: "b", Partition: 1},
		{GroupKey: record.GroupKey{Tenant: "", Group: "g"}, Topic: "b", Partition: 1},
		{GroupKey: record.GroupKey{Tenant: "t", Group: "g"}, Topic: "a", Partition: 1},
		{GroupKey: record.GroupKey{Tenant: "t", Group: "g"}, Topic: "c", Partition: 1},
		{GroupKey: record.GroupKey{Tenant: "t", Group: "g"}, Topic: "b", Partition: 0},
		{GroupKey: record.GroupKey{Tenant: "t", Group: "g"}, Topic: "b", Partition: 2},
	} {
		if err := b.ReplayOffset(k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := parts(b.Book, g); got != "b/1=1" {
		t.Fatalf("tombstones of missing offsets changed the group: %s", got)
	}
	if err := b.ReplayOffset(record.OffsetKey{GroupKey: record.GroupKey{Tenant: "t", Group: "g"}, Topic: "b", Partition: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if b.Has(g) || len(b.names) != 0 {
		t.Fatalf("the last tombstone left the group (%v) or names %v", b.Has(g), b.names)
	}
}

// TestNamesInterned: groups committing to one topic share one copy of its
// name, which is not the request's (that would keep its frame alive, and
// change with it), and is forgotten with its last offset.
func TestNamesInterned(t *testing.T) {
	b := newBook(t)
	frame := []byte("orders tenant")
	topic := unsafe.String(&frame[0], 6)
	tenant := unsafe.String(&frame[7], 6)
	const n = 100
	for i := range n {
		b.Commit(Group{tenant, fmt.Sprint("g", i)}, topic, 0, record.Offset{Offset: int64(i)})
	}
	copy(frame, "XXXXXXXXXXXXX") // the next request in the same buffer
	seen := map[*byte]bool{}
	tenants := map[*byte]bool{}
	refs := map[uint32]bool{}
	for g, gs := range b.all() {
		name := b.topic(&gs.topics()[0]).name
		if g.Tenant != "tenant" || len(gs.topics()) != 1 || name != "orders" {
			t.Fatalf("group %+v kept %q of tenant %q: a request's bytes", g, name, g.Tenant)
		}
		seen[unsafe.StringData(name)] = true
		tenants[unsafe.StringData(g.Tenant)] = true
		refs[gs.topics()[0].ref] = true
	}
	if len(seen) != 1 || len(tenants) != 1 || len(refs) != 1 {
		t.Fatalf("%d groups hold %d copies of their topic's name, %d of their tenant's and %d entries of the table, want 1", n, len(seen), len(tenants), len(refs))
	}
	// The table's entry is counted by the groups, its name by the entry.
	if got := b.topics[b.topicRefs[topicKey{name: "orders"}]].refs; got != n || b.names["orders"].refs != 1 {
		t.Fatalf("orders is counted %d times (its name %d), want %d (1)", got, b.names["orders"].refs, n)
	}
	for i := range n {
		b.DeleteGroup(Group{"tenant", fmt.Sprint("g", i)})
	}
	if len(b.names) != 0 || len(b.all()) != 0 || len(b.topicRefs) != 0 {
		t.Fatalf("names %v, topics %v and %d groups left", b.names, b.topicRefs, len(b.all()))
	}
}

// TestWalksWhileTombstoning: Expire, Reconcile and DeleteGroup tombstone
// offsets from inside Each (the tombstones replay at once, moving the
// entries); none may be skipped or visited twice.
func TestWalksWhileTombstoning(t *testing.T) {
	b := newBook(t)
	g := Group{"", "g"}
	for _, topic := range []string{"d", "b", "c", "a"} {
		for _, p := range []int32{5, 1, 4, 0, 3, 2} {
			b.Commit(g, topic, p, record.Offset{Offset: int64(p), CommitTimestamp: int64(p % 2)})
		}
	}
	// Odd partitions are old; topic c is kept; so b/1, b/3, b/5 ... go.
	var visited []string
	b.Expire(g, 10, 10, func(topic string) bool { return topic == "c" }, func(o record.Offset) int64 {
		visited = append(visited, fmt.Sprint(o.Offset))
		return o.CommitTimestamp * 100
	})
	// Expire's read-only pass reads each offset of a, b and d (for the
	// next expiry); then its tombstoning walk each once again.
	if got, want := strings.Join(visited, ""), "012345012345012345"+"012345012345012345"; got != want {
		t.Fatalf("Expire visited %s, want %s", got, want)
	}
	if got, want := parts(b.Book, g), "a/1=1 a/3=3 a/5=5 b/1=1 b/3=3 b/5=5 c/0=0 c/1=1 c/2=2 c/3=3 c/4=4 c/5=5 d/1=1 d/3=3 d/5=5"; got != want {
		t.Fatalf("after Expire: %s\nwant %s", got, want)
	}
	b.checkReplay(t, g)

	var after []string
	b.Each(g, func(topic string, p int32, o record.Offset) {
		if o.Offset != int64(p) {
			t.Fatalf("%s/%d: given %+v", topic, p, o)
		}
		b.Delete(g, topic, p)
		after = append(after, fmt.Sprintf("%s/%d", topic, p))
	})
	if len(after) != 15 || b.Has(g) {
		t.Fatalf("deleting each in turn visited %v; group left: %v", after, b.Has(g))
	}
	b.checkReplay(t, g)
}

// TestAgainstMaps runs random commits, tombstones and the walks that
// tombstone (DeleteGroup, DeleteTopics, Reconcile, Expire) against the
// maps the Book used to keep, comparing after every step. The offsets
// carry what the Book keeps apart from their entries: a topic's
// partitions mostly share an id but not always (a topic deleted and
// created again), and some have metadata.
func TestAgainstMaps(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed) // shown on a failure
	r := rand.New(rand.NewPCG(seed, 0))
	b := newBook(t)
	type key struct {
		g     Group
		topic string
		p     int32
	}
	model := map[key]record.Offset{}
	// Group q commits to few partitions of two topics: it goes from one
	// topic (held in its groupOffsets) to two (a slice) and back, and to
	// none, often.
	groups := []Group{{"", "g"}, {"", "h"}, {"x", "g"}, {"y", "q"}}
	topics := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}
	ids := [][16]byte{{}, {1}, {2}, {3}}
	// cur is each topic's id now; a commit mostly stamps it.
	cur := map[string][16]byte{}
	for _, topic := range topics {
		cur[topic] = ids[r.IntN(len(ids))]
	}
	drop := func(gone func(k key, o record.Offset) bool) {
		for k, o := range model {
			if gone(k, o) {
				delete(model, k)
			}
		}
	}
	for step := range 5000 {
		k := key{groups[r.IntN(len(groups))], topics[r.IntN(len(topics))], int32(r.IntN(300))}
		if k.g.Name == "q" {
			k.topic, k.p = topics[r.IntN(2)], int32(r.IntN(4))
		}
		switch n := r.IntN(100); {
		case n < 25:
			b.Delete(k.g, k.topic, k.p)
			delete(model, k)
		case n < 30: // a tombstone of what may not be there, replayed
			b.rec.Emit(b.offsetKey(k.g, k.topic, k.p), nil)
			delete(model, k)
		case n == 30:
			b.DeleteGroup(k.g)
			drop(func(mk key, _ record.Offset) bool { return mk.g == k.g })
		case n == 31:
			b.DeleteTopics(k.g.Tenant, []string{k.topic})
			drop(func(mk key, _ record.Offset) bool { return mk.g.Tenant == k.g.Tenant && mk.topic == k.topic })
		case n == 32 && r.IntN(4) == 0:
			live := map[string]map[string][16]byte{}
			for _, tenant := range []string{"", "x", "y"} {
				live[tenant] = map[string][16]byte{}
				for _, topic := range topics {
					if r.IntN(10) != 0 {
						live[tenant][topic] = cur[topic]
					}
				}
			}
			b.Reconcile(live)
			drop(func(mk key, o record.Offset) bool {
				id, ok := live[mk.g.Tenant][mk.topic]
				return !ok || (o.TopicID != [16]byte{} && o.TopicID != id)
			})
		case n == 33:
			keep := func(topic string) bool { return topic < "d" }
			retention := int64(100 + r.IntN(2000))
			next, ok := b.Expire(k.g, int64(step), retention, keep, func(o record.Offset) int64 { return o.CommitTimestamp })
			drop(func(mk key, o record.Offset) bool {
				return mk.g == k.g && !keep(mk.topic) && int64(step)-o.CommitTimestamp >= retention
			})
			// What it returns is the first expiry of those left.
			var want int64
			wantOK := false
			for mk, o := range model {
				if e := o.CommitTimestamp + retention; mk.g == k.g && !keep(mk.topic) && (!wantOK || e < want) {
					want, wantOK = e, true
				}
			}
			if next != want || ok != wantOK {
				t.Fatalf("step %d: Expire's next expiry %d (%v), want %d (%v)", step, next, ok, want, wantOK)
			}
			if at, ok := b.NextExpiry(k.g, retention, keep, func(o record.Offset) int64 { return o.CommitTimestamp }); at != want || ok != wantOK {
				t.Fatalf("step %d: NextExpiry %d (%v), want %d (%v)", step, at, ok, want, wantOK)
			}
		case n == 34: // the topic is created again
			cur[k.topic] = ids[r.IntN(len(ids))]
		default:
			o := record.Offset{Offset: int64(step), LeaderEpoch: int32(r.IntN(3)) - 1, CommitTimestamp: int64(step), TopicID: cur[k.topic]}
			if r.IntN(10) == 0 {
				o.TopicID = ids[r.IntN(len(ids))]
			}
			if r.IntN(4) == 0 {
				o.Metadata = fmt.Sprint("m", step)
			}
			if r.IntN(5) == 0 { // decoded and replayed, as at load
				b.rec.Emit(b.offsetKey(k.g, k.topic, k.p), o.Encode())
			} else {
				b.Commit(k.g, k.topic, k.p, o)
			}
			model[k] = o
		}
		if step%1000 == 0 {
			b.checkReplay(t, groups...)
		}
		if step%50 != 0 {
			continue
		}
		checkOddities(t, b.Book)
		checkShared(t, b.Book)
		for _, g := range groups {
			var want []string
			keys := []key{}
			for mk := range model {
				if mk.g == g {
					keys = append(keys, mk)
				}
			}
			slices.SortFunc(keys, func(x, y key) int {
				if c := strings.Compare(x.topic, y.topic); c != 0 {
					return c
				}
				return int(x.p - y.p)
			})
			for _, mk := range keys {
				want = append(want, fmt.Sprintf("%s/%d=%+v", mk.topic, mk.p, model[mk]))
				if o, ok := b.Get(g, mk.topic, mk.p); !ok || o != model[mk] {
					t.Fatalf("seed %d, step %d, group %v: Get %s/%d = %+v, %v; want %+v", seed, step, g, mk.topic, mk.p, o, ok, model[mk])
				}
			}
			var each []string
			b.Each(g, func(t string, p int32, o record.Offset) {
				each = append(each, fmt.Sprintf("%s/%d=%+v", t, p, o))
			})
			if got := strings.Join(each, " "); got != strings.Join(want, " ") {
				t.Fatalf("seed %d, step %d, group %v:\n got %s\nwant %s", seed, step, g, got, strings.Join(want, " "))
			}
			var read []string // Read walks what Each walks
			b.Read(g, func(t string, p int32, o record.Offset) {
				read = append(read, fmt.Sprintf("%s/%d=%+v", t, p, o))
			})
			if got := strings.Join(read, " "); got != strings.Join(want, " ") {
				t.Fatalf("seed %d, step %d, group %v: Read\n got %s\nwant %s", seed, step, g, got, strings.Join(want, " "))
			}
			if b.Count(g) != len(keys) || b.Has(g) != (len(keys) > 0) {
				t.Fatalf("seed %d, step %d: Count %d Has %v, want %d", seed, step, b.Count(g), b.Has(g), len(keys))
			}
		}
	}
	b.checkReplay(t, groups...)
}

// checkOddities checks that each topic's oddities are of its partitions,
// say something (an id other than the topic's, metadata other than ""),
// and are nil when there are none.
func checkOddities(t *testing.T, b *Book) {
	t.Helper()
	for g, gs := range b.all() {
		for _, to := range gs.topics() {
			x := to.odd
			if x == nil {
				continue
			}
			if x.ids == nil && x.meta == nil || x.ids != nil && len(x.ids) == 0 || x.meta != nil && len(x.meta) == 0 {
				t.Fatalf("%v %s: empty oddities kept: %+v", g, b.topic(&to).name, *x)
			}
			for p, id := range x.ids {
				if _, ok := findPart(to.parts, p); !ok || id == b.topic(&to).id {
					t.Fatalf("%v %s/%d: id %v kept as odd (topic's %v, offset there: %v)", g, b.topic(&to).name, p, id, b.topic(&to).id, ok)
				}
			}
			for p, m := range x.meta {
				if _, ok := findPart(to.parts, p); !ok || m == "" {
					t.Fatalf("%v %s/%d: metadata %q kept (offset there: %v)", g, b.topic(&to).name, p, m, ok)
				}
			}
		}
	}
}

// checkShared checks the Book's table of topics against the groups'
// topics: each entry in use is counted once by each topic that refers to
// it, and found under its name and id; the others are free and found
// nowhere. The names are counted once by each entry in use and each
// group of their tenant (the Book's own Index interns the tenants).
func checkShared(t *testing.T, b *Book) {
	t.Helper()
	refs := make([]int, len(b.topics))
	names := map[string]int{}
	for g, gs := range b.all() {
		if gs.many != nil && (len(*gs.many) < 2 || gs.one[0].ref != 0 || gs.one[0].parts != nil || gs.one[0].odd != nil) {
			t.Fatalf("%v holds %d topics in a slice, and %+v as its one", g, len(*gs.many), gs.one[0])
		}
		for _, to := range gs.topics() {
			refs[to.ref]++
		}
		if g.Tenant != "" {
			names[g.Tenant]++
		}
	}
	free := map[uint32]bool{}
	for _, ref := range b.free {
		free[ref] = true
	}
	for ref, s := range b.topics {
		if got := b.topicRefs[s.topicKey]; refs[ref] != s.refs || (s.refs > 0) == free[uint32(ref)] || s.refs > 0 && got != uint32(ref) {
			t.Fatalf("topic %d (%q %v) is counted %d times, used by %d groups' topics; free %v, found at %d", ref, s.name, s.id, s.refs, refs[ref], free[uint32(ref)], got)
		}
		if s.refs > 0 && s.name != "" {
			names[s.name]++
		}
	}
	if len(b.topicRefs)+len(b.free) != len(b.topics) || len(free) != len(b.free) {
		t.Fatalf("%d topics found, %d free (%d distinct), of %d", len(b.topicRefs), len(b.free), len(free), len(b.topics))
	}
	for name, n := range b.names {
		if names[name] != n.refs || n.s != name {
			t.Fatalf("name %q is counted %d times, used %d", name, n.refs, names[name])
		}
	}
	if len(names) != len(b.names) {
		t.Fatalf("names %v in use, %d interned", names, len(b.names))
	}
}

// TestOdditiesGo: a topic's partitions committed again under a new id
// (the topic created again) or with metadata "" again leave it with no
// oddities to keep, as if they had never had any.
func TestOdditiesGo(t *testing.T) {
	b := newBook(t)
	g := Group{"", "g"}
	old, cur := [16]byte{1}, [16]byte{2}
	for p := range int32(4) {
		b.Commit(g, "a", p, record.Offset{Offset: 1, TopicID: old, Metadata: "m"})
	}
	b.Commit(g, "a", 2, record.Offset{Offset: 2, TopicID: cur})
	b.checkReplay(t, g)
	for p := range int32(4) {
		b.Commit(g, "a", p, record.Offset{Offset: 3, TopicID: cur})
	}
	to := b.offsetsOf(g).topics()[0]
	if id := b.topic(&to).id; id != cur || to.odd != nil {
		t.Fatalf("the topic's id is %v, its oddities %+v; want %v and none", id, to.odd, cur)
	}
	b.checkReplay(t, g)
}

// TestEntriesGrowByLittle: a group's offsets are not left with room for
// twice as many (append's doubling), nor with the room of those expired.
func TestEntriesGrowByLittle(t *testing.T) {
	b := newBook(t)
	g := Group{"", "g"}
	for p := range int32(100) {
		b.Commit(g, "a", p, record.Offset{Offset: 1})
	}
	es := b.offsetsOf(g).topics()[0].parts
	// A quarter more, as the allocator rounds it up (to 128 for 24-byte
	// entries).
	if most := cap(slices.Grow([]entry(nil), 100+100/4)); cap(es) > most {
		t.Fatalf("100 offsets have room for %d, want at most %d", cap(es), most)
	}
	for p := range int32(90) {
		b.Delete(g, "a", p)
	}
	if es := b.offsetsOf(g).topics()[0].parts; cap(es) > 4*len(es) {
		t.Fatalf("10 offsets left have room for %d", cap(es))
	}
	b.checkReplay(t, g)
}

// TestLoadSizesOffsetsOnce: a load gives each topic's offsets one array,
// of their size, however many there are: they gather in the Book's
// scratch while they come in a row (settle). The offsets are those
// replayed, and after the load they grow by a quarter again.
func TestLoadSizesOffsetsOnce(t *testing.T) {
	for _, n := range []int32{1, 2, 3, 4, 5, 9, 10, 100} {
		b := newBook(t)
		b.StartLoad()
		g := Group{"", fmt.Sprint("g", n)}
		// AllocsPerRun runs the load once before it counts: of another
		// group, so that the load counted is a new group's, of a topic
		// already in the table, as nearly all of a load's are, with the
		// scratch grown to its size.
		loads := []Group{{"", "warm-up"}, g}
		allocs := testing.AllocsPerRun(1, func() {
			for p := range n {
				b.apply(loads[0], "a", p, record.Offset{Offset: int64(p)}, true)
			}
			loads = loads[1:]
		})
		// Its slot in the Book's own map, the group with its topic, and
		// the warm-up group's array, which the first of g's offsets
		// settles.
		if allocs > 3 && !raceOn {
			t.Errorf("a load of %d offsets allocated %v times", n, allocs)
		}
		b.Loaded()
		es := b.offsetsOf(g).topics()[0].parts
		if fit := cap(slices.Clone(make([]entry, n))); len(es) != int(n) || cap(es) != fit {
			t.Errorf("%d offsets loaded: %d kept with room for %d, want %d", n, len(es), cap(es), fit)
		}
		if es := b.offsetsOf(Group{"", "warm-up"}).topics()[0].parts; cap(es) != cap(slices.Clone(make([]entry, n))) {
			t.Errorf("%d offsets loaded before another group's: room for %d", n, cap(es))
		}
		want := []string{}
		for p := range n {
			want = append(want, fmt.Sprintf("a/%d=%d", p, p))
		}
		if got := parts(b.Book, g); got != strings.Join(want, " ") {
			t.Errorf("%d offsets loaded: %s", n, got)
		}
		// Loaded, it grows by a quarter again.
		b.apply(g, "a", n, record.Offset{}, false)
		if es := b.offsetsOf(g).topics()[0].parts; cap(es) > int(n+1)+max(1, int(n+1)/4)+8 {
			t.Errorf("after the load, %d offsets have room for %d", n+1, cap(es))
		}
	}
}

// TestLoadOutOfOrder: offsets a load replays out of order (a topic's
// interrupted by another's, partitions backwards, a tombstone, the same
// partition twice) end as they would replayed one by one after it, each
// topic's in an array of its own.
func TestLoadOutOfOrder(t *testing.T) {
	type rec struct {
		g, topic string
		p        int32
		off      int64 // -1: a tombstone
	}
	recs := []rec{
		{"g1", "b", 0, 1}, {"g1", "b", 2, 2}, {"g1", "a", 5, 3}, {"g1", "b", 1, 4},
		{"g2", "a", 3, 5}, {"g2", "a", 2, 6}, {"g2", "a", 1, 7}, {"g1", "a", 4, 8},
		{"g2", "c", 0, 9}, {"g2", "a", 2, 10}, {"g2", "a", 3, -1}, {"g2", "a", 0, 11},
		{"g1", "b", 2, -1}, {"g1", "b", 3, 12},
	}
	replay := func(b *Book) {
		for _, r := range recs {
			if r.off < 0 {
				b.remove(Group{"", r.g}, r.topic, r.p)
				continue
			}
			b.apply(Group{"", r.g}, r.topic, r.p, record.Offset{Offset: r.off}, false)
		}
	}
	loaded, oneByOne := newBook(t), newBook(t)
	loaded.StartLoad()
	replay(loaded.Book)
	loaded.Loaded()
	replay(oneByOne.Book)
	for _, g := range []Group{{"", "g1"}, {"", "g2"}} {
		if got, want := parts(loaded.Book, g), parts(oneByOne.Book, g); got != want {
			t.Errorf("%s loaded: %s, want %s", g.Name, got, want)
		}
		ts := loaded.offsetsOf(g).topics()
		for i := range ts {
			for j := range ts {
				if i != j && &ts[i].parts[:1][0] == &ts[j].parts[:1][0] {
					t.Errorf("%s: two topics share an array", g.Name)
				}
			}
			if es := ts[i].parts; cap(es) != cap(slices.Clone(es)) {
				t.Errorf("%s: %d offsets with room for %d", g.Name, len(es), cap(es))
			}
		}
	}
}

// TestOverwriteAllocatesNothing: a commit to a partition that has an
// offset changes it in place (the hot path: quiet groups' consumers commit
// the same partitions again and again).
func TestOverwriteAllocatesNothing(t *testing.T) {
	b := newBook(t)
	g := Group{"", "g"}
	for p := range int32(10) {
		b.apply(g, "a", p, record.Offset{Offset: 1}, false)
	}
	o := record.Offset{Offset: 2, CommitTimestamp: 7}
	if n := testing.AllocsPerRun(100, func() { b.apply(g, "a", 7, o, false) }); n != 0 {
		t.Fatalf("an overwrite allocates %v times", n)
	}
}

// TestReadsAllocateNothing: the offsets a fetch (Get) and the lag
// sampler's reading (Read) are given are built on the stack, odd ones
// included.
func TestReadsAllocateNothing(t *testing.T) {
	b := newBook(t)
	g := Group{"", "g"}
	for p := range int32(10) {
		b.Commit(g, "a", p, record.Offset{Offset: 1, TopicID: [16]byte{1}})
	}
	b.Commit(g, "a", 3, record.Offset{Offset: 2, TopicID: [16]byte{2}, Metadata: "m"})
	var sum int64
	read := func(_ string, _ int32, o record.Offset) { sum += o.Offset + int64(len(o.Metadata)) }
	if n := testing.AllocsPerRun(100, func() { b.Read(g, read) }); n != 0 {
		t.Errorf("Read allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		o, _ := b.Get(g, "a", 3)
		sum += o.Offset
	}); n != 0 {
		t.Errorf("Get allocates %v times", n)
	}
}

func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 24 {
		t.Fatalf("an entry takes %d bytes, want 24", n)
	}
	// A topic's offsets with their topic's reference; a group's offsets
	// of one topic, which is an allocation's size class.
	if n, m := unsafe.Sizeof(topicOffsets{}), unsafe.Sizeof(groupOffsets{}); n != 40 || m != 48 {
		t.Fatalf("a topic's offsets take %d bytes, a group's %d, want 40 and 48", n, m)
	}
}

// BenchmarkApply is the Book's part of the commit hot path: ten
// partitions of one topic committed again and again by many groups.
func BenchmarkApply(b *testing.B) {
	book := New(0, nil)
	groups := make([]Group, 1000)
	for i := range groups {
		groups[i] = Group{"", fmt.Sprint("commit-", i)}
		for p := range int32(10) {
			book.apply(groups[i], "commits", p, record.Offset{Offset: 1}, false)
		}
	}
	i := 0
	for b.Loop() {
		book.apply(groups[i%len(groups)], "commits", int32(i%10), record.Offset{Offset: int64(i)}, false)
		i++
	}
}

// BenchmarkGet is the Book's part of a fetch: a partition's offset of a
// group of many, which commit to one topic or to three.
func BenchmarkGet(b *testing.B) {
	for _, topics := range []int{1, 3} {
		b.Run(fmt.Sprintf("topics=%d", topics), func(b *testing.B) {
			book := New(0, nil)
			groups := make([]Group, 1000)
			for i := range groups {
				groups[i] = Group{"", fmt.Sprint("fetch-", i)}
				for _, topic := range []string{"orders", "fetches", "payments"}[:topics] {
					for p := range int32(10) {
						book.apply(groups[i], topic, p, record.Offset{Offset: int64(p)}, false)
					}
				}
			}
			i, sum := 0, int64(0)
			for b.Loop() {
				o, _ := book.Get(groups[i%len(groups)], "orders", int32(i%10))
				sum += o.Offset
				i++
			}
			runtime.KeepAlive(sum)
		})
	}
}

// BenchmarkLoad is a group's 100 offsets replayed in order, as at load.
func BenchmarkLoad(b *testing.B) {
	book := New(0, nil)
	i := 0
	for b.Loop() {
		g := Group{"", fmt.Sprint("g", i)}
		for p := range int32(100) {
			book.apply(g, "orders", p, record.Offset{Offset: 1}, false)
		}
		i++
		if i%1000 == 0 {
			book = New(0, nil)
		}
	}
}

// BenchmarkBookMemory reports the heap the Book holds per committed
// offset (groups' names included), for quiet groups of a few shapes.
func BenchmarkBookMemory(b *testing.B) {
	for _, shape := range []struct{ groups, topics, parts int }{{100_000, 1, 4}, {10_000, 1, 100}, {20_000, 3, 8}} {
		b.Run(fmt.Sprintf("topics=%d/partitions=%d", shape.topics, shape.parts), func(b *testing.B) {
			var perOffset float64
			for b.Loop() {
				before := int64(memtest.HeapAlloc())
				book := New(0, nil)
				for i := range shape.groups {
					// The names alias a reused buffer, as a request's do.
					frame := []byte(fmt.Sprintf("quiet-group-%07d", i))
					g := Group{"", unsafe.String(&frame[0], len(frame))}
					for t := range shape.topics {
						for p := range shape.parts {
							book.apply(g, []string{"orders", "payments", "shipments"}[t], int32(p), record.Offset{Offset: int64(p), LeaderEpoch: -1, CommitTimestamp: 1}, false)
						}
					}
				}
				perOffset = float64(int64(memtest.HeapAlloc())-before) / float64(shape.groups*shape.topics*shape.parts)
				runtime.KeepAlive(book)
			}
			b.ReportMetric(perOffset, "heap-B/offset")
		})
	}
}
