package coordinator_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
)

// TestInspectChanges: Inspect reads each shard's changes only, and its
// answer is always what a full read of every group gives: after commits,
// a deletion and a new group; and a group that did not change is the
// same summary, not a copy.
func TestInspectChanges(t *testing.T) {
	c := start(t, openStore(t, t.TempDir()))
	ctx := context.Background()
	commit := func(g string, off int64) { commitSimple(t, c, g, off) }
	for i := range 20 {
		commit(fmt.Sprintf("g%02d", i), 1)
	}
	// full is every group as InspectGroup reads it, one at a time.
	full := func(names []string) []groups.Summary {
		t.Helper()
		var out []groups.Summary
		for _, n := range names {
			if s, ok, err := c.InspectGroup(ctx, "", n); err != nil {
				t.Fatal(err)
			} else if ok {
				out = append(out, s)
			}
		}
		return out
	}
	names := func() []string {
		var out []string
		for i := range 22 {
			out = append(out, fmt.Sprintf("g%02d", i))
		}
		return out
	}
	check := func(what string) []groups.Summary {
		t.Helper()
		got, err := c.Inspect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := full(names()); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Inspect %+v\nwant %+v", what, got, want)
		}
		return got
	}
	first := check("first")
	if len(first) != 20 {
		t.Fatalf("%d groups", len(first))
	}
	commit("g03", 7)
	commit("g20", 2)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g05"}
	if r := handle[*kmsg.DeleteGroupsResponse](t, c, 2, del); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	second := check("after a commit, a new group and a deletion")
	if len(second) != 20 {
		t.Fatalf("%d groups after the changes", len(second))
	}
	third := check("unchanged")
	for i := range third {
		if !third[i].Offsets.Same(second[i].Offsets) {
			t.Errorf("%s: read afresh though unchanged", third[i].Group)
		}
	}
	// A topic catalog coming to every shard (with any request, as after
	// a restart) changes no commit-only group's summary: none is read
	// afresh.
	for i := range 22 {
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.SetVersion(5)
		fetch.Group = fmt.Sprintf("g%02d", i)
		catalog := &machine.Catalog{Version: 9, ByName: map[string]machine.TopicMeta{"t": {ID: [16]byte{1}, Partitions: 1}},
			ByID: map[[16]byte]string{{1}: "t"}, Names: []string{"t"}}
		c.Handle(ctx, coordinator.Request{Msg: fetch, Topics: catalog})()
	}
	for i, s := range check("a topic catalog came") {
		if !s.Offsets.Same(third[i].Offsets) {
			t.Errorf("%s: read afresh when a topic catalog came", s.Group)
		}
	}
	// A shard let go: its groups leave the reading; loaded again, they
	// come back, read in full.
	shard := c.ShardFor("", "g03")
	c.Unload(shard)
	got, err := c.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if c.ShardFor(s.Tenant, s.Group) == shard {
			t.Errorf("%s listed while its shard %d is not held", s.Group, shard)
		}
	}
	if len(got) == 0 || len(got) >= 20 {
		t.Errorf("%d groups with one of 4 shards let go", len(got))
	}
	if err := c.Load(shard); err != nil {
		t.Fatal(err)
	}
	commit("g01", 9) // and a change elsewhere meanwhile
	if got := check("the shard loaded again"); len(got) != 20 {
		t.Errorf("%d groups once the shard is back", len(got))
	}
}

// countingLocker counts the times it is locked.
type countingLocker struct {
	sync.Mutex
	locks int
}

func (l *countingLocker) Lock() { l.Mutex.Lock(); l.locks++ }

// TestInspectInPlace: a reading in which no group came or went is the
// last reading's slice with the changed summaries written into it,
// holding the reader's lock, and names them; one in which a group came
// or went is a new slice, the last one left as it was. Each is what a
// full read of every group gives.
func TestInspectInPlace(t *testing.T) {
	c := start(t, openStore(t, t.TempDir()))
	ctx := context.Background()
	commit := func(g string, off int64) { commitSimple(t, c, g, off) }
	for i := range 20 {
		commit(fmt.Sprintf("g%02d", i), 1)
	}
	var mu countingLocker
	read := func(what string, inPlace bool, changed ...int32) groups.Reading {
		t.Helper()
		locks := mu.locks
		r, err := c.InspectInPlace(ctx, &mu)
		if err != nil {
			t.Fatal(err)
		}
		var want []groups.Summary
		for i := range 21 {
			if s, ok, err := c.InspectGroup(ctx, "", fmt.Sprintf("g%02d", i)); err != nil {
				t.Fatal(err)
			} else if ok {
				want = append(want, s)
			}
		}
		switch {
		case !reflect.DeepEqual(r.Groups, want):
			t.Fatalf("%s: reading %+v\nwant %+v", what, r.Groups, want)
		case r.InPlace != inPlace:
			t.Fatalf("%s: in place %v", what, r.InPlace)
		case inPlace && !slices.Equal(r.Changed, changed):
			t.Fatalf("%s: changed %v, want %v", what, r.Changed, changed)
		case inPlace && len(changed) > 0 && mu.locks != locks+1:
			t.Fatalf("%s: the lock taken %d times", what, mu.locks-locks)
		case !(inPlace && len(changed) > 0) && mu.locks != locks:
			t.Fatalf("%s: the lock taken though nothing was written in place", what)
		}
		return r
	}
	first := read("first", false)
	same := read("unchanged", true)
	if &same.Groups[0] != &first.Groups[0] {
		t.Fatal("an unchanged reading is a new slice")
	}
	commit("g03", 7)
	commit("g17", 2)
	changed := read("two commits", true, 3, 17)
	if &changed.Groups[0] != &first.Groups[0] {
		t.Fatal("a reading in place is a new slice")
	}
	kept := slices.Clone(changed.Groups)
	commit("g20", 1) // a new group
	commit("g04", 3)
	added := read("a new group", false)
	if &added.Groups[0] == &first.Groups[0] || len(added.Groups) != 21 {
		t.Fatal("a reading with a new group is the last one's slice")
	}
	for i := range kept {
		if !reflect.DeepEqual(kept[i], first.Groups[i]) {
			t.Fatalf("the last reading's %s changed under its reader", kept[i].Group)
		}
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g05"}
	if r := handle[*kmsg.DeleteGroupsResponse](t, c, 2, del); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	read("a deletion", false)
	commit("g06", 5)
	read("a commit after the deletion", true, 5) // g06 is now fifth
}

// commitSimple commits offset off of partition 0 of topic t for simple
// group g.
func commitSimple(t *testing.T, c *coordinator.Coordinator, g string, off int64) {
	t.Helper()
	r := handle[*kmsg.OffsetCommitResponse](t, c, 8, commitReq(g, "", -1, off))
	if code := r.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit %s: %v", g, kerr.ErrorForCode(code))
	}
}

// TestMergeSummaries: a reading with the changed summaries merged in is
// the old one with each group's summary replaced, or added in its place
// (and listed as added), whatever the sizes; the old reading is left as
// it was.
func TestMergeSummaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		key := func(i int) (string, string) { return []string{"", "acme"}[i%2], fmt.Sprintf("g%04d", i/2) }
		keys := rng.Perm(400)[:rng.IntN(200)]
		var old []groups.Summary
		for _, k := range keys {
			tenant, group := key(k)
			old = append(old, groups.Summary{Tenant: tenant, Group: group, Generation: 1})
		}
		slices.SortFunc(old, func(a, b groups.Summary) int {
			return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Group, b.Group))
		})
		was := slices.Clone(old)
		// Changed: some of the old groups, and some new ones.
		want := map[[2]string]int32{}
		for _, s := range old {
			want[[2]string{s.Tenant, s.Group}] = 1
		}
		var changed []groups.Summary
		var wantAdded [][2]string
		for _, k := range rng.Perm(400)[:rng.IntN(50)] {
			tenant, group := key(k)
			ref := [2]string{tenant, group}
			if _, ok := want[ref]; !ok {
				wantAdded = append(wantAdded, ref)
			}
			want[ref] = 2
			changed = append(changed, groups.Summary{Tenant: tenant, Group: group, Generation: 2})
		}
		cmpRef := func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }
		slices.SortFunc(changed, func(a, b groups.Summary) int {
			return cmpRef([2]string{a.Tenant, a.Group}, [2]string{b.Tenant, b.Group})
		})
		slices.SortFunc(wantAdded, cmpRef)
		out, added := coordinator.MergeSummaries(old, changed)
		var got [][2]string
		for _, s := range out {
			ref := [2]string{s.Tenant, s.Group}
			if want[ref] != s.Generation {
				t.Fatalf("trial %d: %v has generation %d, want %d", trial, ref, s.Generation, want[ref])
			}
			got = append(got, ref)
		}
		if len(got) != len(want) || !slices.IsSortedFunc(got, cmpRef) {
			t.Fatalf("trial %d: %d groups, want %d, in order: %v", trial, len(got), len(want), got)
		}
		var gotAdded [][2]string
		for _, s := range added {
			gotAdded = append(gotAdded, [2]string{s.Tenant, s.Group})
		}
		if !slices.Equal(gotAdded, wantAdded) {
			t.Fatalf("trial %d: added %v, want %v", trial, gotAdded, wantAdded)
		}
		if !slices.EqualFunc(old, was, func(a, b groups.Summary) bool {
			return a.Tenant == b.Tenant && a.Group == b.Group && a.Generation == b.Generation
		}) {
			t.Fatalf("trial %d: the old reading changed", trial)
		}
	}
}

// TestMergeRuns: the shards' answers, each sorted, merged into one
// sorted slice are every summary once, in order, as a sort of them all
// gives; whatever the runs' number and sizes, empty ones among them, and
// one out of order (which no shard answers, and which is sorted first).
func TestMergeRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	byName := func(a, b groups.Summary) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Group, b.Group))
	}
	for trial := range 300 {
		runs := make([][]groups.Summary, rng.IntN(20))
		var all []groups.Summary
		for k := range rng.Perm(2000)[:rng.IntN(500)] {
			s := groups.Summary{Tenant: []string{"", "acme", "b"}[k%3], Group: fmt.Sprintf("g%05d", k), Generation: int32(k)}
			if len(runs) > 0 {
				r := rng.IntN(len(runs))
				runs[r] = append(runs[r], s)
			} else {
				continue
			}
			all = append(all, s)
		}
		for r := range runs {
			slices.SortFunc(runs[r], byName)
		}
		if len(runs) > 2 && trial%5 == 0 {
			rng.Shuffle(len(runs[1]), func(i, j int) { runs[1][i], runs[1][j] = runs[1][j], runs[1][i] })
		}
		slices.SortFunc(all, byName)
		if got := coordinator.MergeRuns(runs); !slices.EqualFunc(got, all, func(a, b groups.Summary) bool { return byName(a, b) == 0 && a.Generation == b.Generation }) {
			t.Fatalf("trial %d: %d runs merged into %d summaries, want %d in order", trial, len(runs), len(got), len(all))
		}
	}
}
