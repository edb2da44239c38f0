package groups_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/groups"
)

// sweepConfig expires offsets an hour after their retention starts,
// swept every ten minutes.
func sweepConfig() groups.Config {
	cfg := testConfig()
	cfg.Retention, cfg.RetentionCheck = time.Hour, 10*time.Minute
	return cfg
}

// TestSweepVisitsWhatIsDue: a retention sweep visits the groups touched
// since the last one and those whose next expiry has come, not every
// group: none of 200 quiet groups within their retention, the three
// that committed since, then the 197 whose offsets expire, which go.
func TestSweepVisitsWhatIsDue(t *testing.T) {
	h := newHarness(t, sweepConfig())
	for i := range 200 {
		if r := do[*kmsg.OffsetCommitResponse](h, simpleCommit(fmt.Sprintf("g%03d", i), "t", 2)); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
		}
	}
	visited := func(want int, when string) {
		t.Helper()
		if got := groups.SweepVisited(h.m); got != want {
			t.Fatalf("%s: the sweep visited %d groups, want %d", when, got, want)
		}
	}
	h.advance(10 * time.Minute)
	visited(200, "the first sweep after the load") // every group may have changed
	h.advance(10 * time.Minute)
	visited(0, "nothing changed, nothing due")
	for _, g := range []string{"g007", "g100", "g199"} {
		do[*kmsg.OffsetCommitResponse](h, simpleCommit(g, "t", 1))
	}
	h.advance(10 * time.Minute)
	visited(3, "three groups committed")
	h.advance(10 * time.Minute)
	visited(0, "nothing changed since")
	// The first 197 groups' offsets expire an hour after their commits
	// (the sweep at the hour); the three that committed again keep
	// partition 0 another 20 minutes, partition 1 not.
	h.advance(20 * time.Minute)
	if n := groups.SweepVisited(h.m); n != 200 {
		t.Fatalf("the sweep at the hour visited %d groups, want every group's offsets due", n)
	}
	list := do[*kmsg.ListGroupsResponse](h, kmsg.NewPtrListGroupsRequest())
	if len(list.Groups) != 3 {
		t.Fatalf("%d groups left after the hour, want 3", len(list.Groups))
	}
	h.advance(30 * time.Minute)
	if list := do[*kmsg.ListGroupsResponse](h, kmsg.NewPtrListGroupsRequest()); len(list.Groups) != 0 {
		t.Fatalf("%d groups left, want none", len(list.Groups))
	}
}

// TestSweepAsEveryGroup: sweeps that visit what is due write what sweeps
// of every group write: two shards given the same random commits,
// joins and leaves (a classic group's offsets count from when it
// emptied), offset and group deletions over hours have the same records
// after every step, and the first visits fewer groups.
func TestSweepAsEveryGroup(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 34))
			a, b := newHarness(t, sweepConfig()), newHarness(t, sweepConfig())
			groups.SweepAll(b.m)
			both := func(f func(h *harness)) {
				f(a)
				f(b)
			}
			var visitedA, visitedB, left int
			for step := range 400 {
				g := fmt.Sprintf("g%02d", rng.IntN(25))
				switch op := rng.IntN(10); {
				case op < 4:
					n := 1 + rng.Int32N(3)
					both(func(h *harness) { do[*kmsg.OffsetCommitResponse](h, simpleCommit(g, "t", n)) })
				case op == 4:
					// A member joins and leaves: a classic group of
					// protocol type consumer, Empty from now.
					both(func(h *harness) {
						first := do[*kmsg.JoinGroupResponse](h, join(g, ""))
						if first.ErrorCode != 0 && first.ErrorCode != kerr.MemberIDRequired.Code {
							return // not a classic group now
						}
						id := h.send(join(g, first.MemberID))
						h.advance(4 * time.Second)
						if _, ok := h.reply(id); !ok {
							t.Fatalf("step %d: the join of %s not answered", step, g)
						}
						leave := kmsg.NewPtrLeaveGroupRequest()
						leave.Version, leave.Group = 3, g
						leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: first.MemberID}}
						if r := do[*kmsg.LeaveGroupResponse](h, leave); r.ErrorCode == 0 && h == a {
							left++
						}
					})
				case op == 5:
					del := kmsg.NewPtrOffsetDeleteRequest()
					del.Group = g
					del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: rng.Int32N(3)}}}}
					both(func(h *harness) { do[*kmsg.OffsetDeleteResponse](h, del) })
				case op == 6:
					del := kmsg.NewPtrDeleteGroupsRequest()
					del.Groups = []string{g}
					both(func(h *harness) { do[*kmsg.DeleteGroupsResponse](h, del) })
				default:
					d := time.Duration(1+rng.IntN(40)) * time.Minute
					both(func(h *harness) { h.advance(d) })
					visitedA += groups.SweepVisited(a.m)
					visitedB += groups.SweepVisited(b.m)
				}
				if !maps.EqualFunc(a.records, b.records, func(x, y []byte) bool { return string(x) == string(y) }) {
					t.Fatalf("step %d: %d records, %d with sweeps of every group", step, len(a.records), len(b.records))
				}
			}
			if left == 0 {
				t.Fatal("no member joined and left: no group's offsets counted from its emptying")
			}
			if visitedA >= visitedB {
				t.Fatalf("the sweeps visited %d groups, those of every group %d", visitedA, visitedB)
			}
			t.Logf("sweeps visited %d groups (%d sweeping every group), %d joins and leaves, %d records", visitedA, visitedB, left, len(a.records))
		})
	}
}
