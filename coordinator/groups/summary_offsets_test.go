package groups

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// randomOffsets is a list of offsets as a shard reads them (sorted by
// topic, then partition) or, one time in four, in any order, with the
// extremes each field may hold.
func randomOffsets(rnd *rand.Rand) []OffsetSummary {
	pick := func(vs ...int64) int64 { return vs[rnd.Intn(len(vs))] }
	topics := []string{"", "orders", "orders.v2", "payments", "t", "a-long-topic-name-of-some-team"}
	var out []OffsetSummary
	for range rnd.Intn(3) * rnd.Intn(20) {
		o := OffsetSummary{Topic: topics[rnd.Intn(len(topics))]}
		switch rnd.Intn(4) {
		case 0:
			o.Partition = int32(pick(0, 1, math.MaxInt32, math.MinInt32, -1))
		default:
			o.Partition = int32(rnd.Intn(1 << uint(rnd.Intn(31))))
		}
		switch rnd.Intn(4) {
		case 0:
			o.Offset = pick(-1, 0, math.MaxInt64, math.MinInt64)
		default:
			o.Offset = rnd.Int63n(1 << uint(1+rnd.Intn(62)))
		}
		switch rnd.Intn(4) {
		case 0:
			o.CommitTimestamp = pick(0, -1, math.MaxInt64, math.MinInt64, 253402300799999) // the year 9999
		default:
			o.CommitTimestamp = 1_700_000_000_000 + rnd.Int63n(1000)
		}
		out = append(out, o)
	}
	if rnd.Intn(4) != 0 {
		slices.SortFunc(out, func(a, b OffsetSummary) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
	}
	return out
}

// checkOffsets fails unless o holds want, in order.
func checkOffsets(t *testing.T, what string, o Offsets, want []OffsetSummary) {
	t.Helper()
	got := slices.Collect(o.All())
	if len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
		t.Fatalf("%s: All is %+v\nwant %+v", what, got, want)
	}
	if o.Len() != len(want) {
		t.Fatalf("%s: Len %d, want %d", what, o.Len(), len(want))
	}
}

// TestOffsetsRoundTrip: any list of offsets comes back from an Offsets
// as it went in, built alone (MakeOffsets) or one after another by the
// builder a shard keeps, whose later builds change no earlier one.
func TestOffsetsRoundTrip(t *testing.T) {
	for seed := range int64(2000) {
		rnd := rand.New(rand.NewSource(seed))
		b := newOffsetsBuilder()
		var lists [][]OffsetSummary
		var built []Offsets
		for range 1 + rnd.Intn(8) {
			list := randomOffsets(rnd)
			checkOffsets(t, fmt.Sprintf("seed %d: MakeOffsets", seed), MakeOffsets(list), list)
			for _, o := range list {
				b.add(o.Topic, o.Partition, o.Offset, o.CommitTimestamp)
			}
			lists, built = append(lists, list), append(built, b.build())
		}
		for i, o := range built {
			checkOffsets(t, fmt.Sprintf("seed %d: build %d of %d", seed, i, len(built)), o, lists[i])
		}
	}
}

// TestOffsetsEdges: empty offsets, many topics, and an iteration that
// stops early.
func TestOffsetsEdges(t *testing.T) {
	b := newOffsetsBuilder()
	for _, o := range []Offsets{{}, MakeOffsets(nil), MakeOffsets([]OffsetSummary{}), b.build()} {
		checkOffsets(t, "empty", o, nil)
		if !o.Same(Offsets{}) {
			t.Errorf("an empty Offsets is not Same as the zero one")
		}
	}
	var many []OffsetSummary
	for i := range 1000 {
		many = append(many, OffsetSummary{Topic: fmt.Sprintf("topic-%04d", i/3), Partition: int32(i % 3), Offset: int64(i) * 1e9, CommitTimestamp: int64(i)})
	}
	checkOffsets(t, "334 topics", MakeOffsets(many), many)
	n := 0
	for range MakeOffsets(many).All() {
		if n++; n == 5 {
			break
		}
	}
	if n != 5 {
		t.Errorf("%d offsets yielded before the break, want 5", n)
	}
}

// TestOffsetsSame: an Offsets is Same as itself and its copies, not as
// another build of equal offsets (which a sampler reads afresh).
func TestOffsetsSame(t *testing.T) {
	list := []OffsetSummary{{Topic: "orders", Partition: 0, Offset: 5, CommitTimestamp: 9}}
	a, b := MakeOffsets(list), MakeOffsets(list)
	c := a
	if !a.Same(c) || !c.Same(a) {
		t.Errorf("a copy is not Same")
	}
	if a.Same(b) || a.Same(Offsets{}) || (Offsets{}).Same(a) {
		t.Errorf("another build is Same")
	}
}

// TestOffsetsShared: a shard's builder gives the groups of one set of
// topics one list of them, and 4 offsets of one topic (a quiet
// consumer's) take a few bytes each; past maxLists the lists start
// afresh, and the Offsets built before are as they were.
func TestOffsetsShared(t *testing.T) {
	b := newOffsetsBuilder()
	group := func(i int, topics ...string) Offsets {
		for _, topic := range topics {
			for p := range int32(4) {
				b.add(topic, p, 1_000_000+int64(i*10)+int64(p), 1_699_999_000_000+int64(i))
			}
		}
		return b.build()
	}
	x, y := group(1, "orders"), group(2, "orders")
	if x.topics != y.topics {
		t.Errorf("two groups of one topic have a list each")
	}
	if len(x.enc) > 24 {
		t.Errorf("4 offsets of one topic take %d bytes, want at most 24", len(x.enc))
	}
	if z, w := group(3, "a", "b"), group(4, "a", "b"); z.topics != w.topics || z.topics == x.topics {
		t.Errorf("two groups of topics a and b do not share a list of their own")
	}
	var built []Offsets
	for i := range maxLists + 10 {
		built = append(built, group(i, fmt.Sprint("topic-", i)))
	}
	for i, o := range built {
		var want []OffsetSummary
		for p := range int32(4) {
			want = append(want, OffsetSummary{Topic: fmt.Sprint("topic-", i), Partition: p, Offset: 1_000_000 + int64(i*10) + int64(p), CommitTimestamp: 1_699_999_000_000 + int64(i)})
		}
		checkOffsets(t, fmt.Sprint("group ", i), o, want)
	}
	if len(b.one) > maxLists {
		t.Errorf("%d lists kept, want at most %d", len(b.one), maxLists)
	}
}
