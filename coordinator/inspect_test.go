package coordinator_test

import (
	"context"
	"fmt"
	"reflect"
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
	commit := func(g string, off int64) {
		t.Helper()
		r := handle[*kmsg.OffsetCommitResponse](t, c, 8, commitReq(g, "", -1, off))
		if code := r.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit %s: %v", g, kerr.ErrorForCode(code))
		}
	}
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
