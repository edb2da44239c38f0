package timeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/timeline"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// feed is a group's event stream, written as the machines report it.
type feed struct {
	o     *timeline.Observer
	group string
	proto string
	n     int // members
	gen   int32
}

func (f *feed) send(e observe.GroupEvent) {
	e.Group, e.Protocol, e.Members = f.group, f.proto, f.n
	if e.Generation == 0 {
		e.Generation = f.gen
	}
	f.o.Group(context.Background(), e)
}

func (f *feed) joined(at time.Duration, id string) {
	f.n++
	f.send(observe.GroupEvent{Kind: observe.MemberJoined, Member: id, At: t0.Add(at)})
}

func (f *feed) left(at time.Duration, kind observe.GroupEventKind, id, reason string) {
	f.n--
	f.send(observe.GroupEvent{Kind: kind, Member: id, Reason: reason, At: t0.Add(at)})
}

func (f *feed) started(at time.Duration, c observe.Cause, by, reason string) {
	f.gen++
	f.send(observe.GroupEvent{Kind: observe.RebalanceStarted, Cause: c, Member: by, Reason: reason, At: t0.Add(at)})
}

func (f *feed) completed(at time.Duration, e observe.GroupEvent) {
	e.Kind, e.At = observe.RebalanceCompleted, t0.Add(at)
	f.send(e)
}

func only(t *testing.T, o *timeline.Observer, group string) timeline.Rebalance {
	t.Helper()
	rs := o.Rebalances("", group)
	if len(rs) != 1 {
		t.Fatalf("%d rebalances: %+v", len(rs), rs)
	}
	return rs[0]
}

func TestTimelineTellsARebalance(t *testing.T) {
	o := timeline.New(timeline.Options{})
	f := &feed{o: o, group: "g", proto: "classic"}
	f.joined(0, "a")
	f.started(0, observe.CauseMemberJoined, "a", "Adding new member a")
	f.joined(time.Second, "b")

	r := only(t, o, "g")
	want := timeline.Rebalance{
		Protocol: "classic", Generation: 1, StartedAt: t0, InProgress: true,
		Cause: "member-joined", Reason: "Adding new member a", MemberID: "a",
		MembersBefore: 0, Members: 2, PartitionsMoved: -1,
		MemberEvents: []timeline.MemberEvent{{At: t0, Kind: "member-joined", MemberID: "a"}, {At: t0.Add(time.Second), Kind: "member-joined", MemberID: "b"}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("in progress:\n got %+v\nwant %+v", r, want)
	}

	phases := observe.Phases{Join: 3 * time.Second, Sync: 500 * time.Millisecond}
	f.completed(3500*time.Millisecond, observe.GroupEvent{Cause: observe.CauseMemberJoined, Member: "a", Duration: 3500 * time.Millisecond, Phases: phases, PartitionsMoved: 6})
	r = only(t, o, "g")
	want.InProgress, want.CompletedAt, want.Duration, want.Phases, want.PartitionsMoved = false, t0.Add(3500*time.Millisecond), 3500*time.Millisecond, phases, 6
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("completed:\n got %+v\nwant %+v", r, want)
	}

	// The next one: members before are the last completion's; the
	// member events since then come with it.
	f.left(10*time.Second, observe.MemberExpired, "b", "session timed out")
	f.started(10*time.Second, observe.CauseMemberExpired, "b", "removing member b on heartbeat expiration")
	rs := o.Rebalances("", "g")
	if len(rs) != 2 || rs[0].Generation != 2 || rs[1].Generation != 1 {
		t.Fatalf("not newest first: %+v", rs)
	}
	if r := rs[0]; r.MembersBefore != 2 || r.Members != 1 || r.Cause != "member-expired" || r.MemberID != "b" ||
		len(r.MemberEvents) != 1 || r.MemberEvents[0].Kind != "member-expired" || r.MemberEvents[0].Reason != "session timed out" {
		t.Fatalf("after an expiry: %+v", r)
	}
	if o.Rebalances("", "other") != nil || o.Rebalances("t", "g") != nil {
		t.Fatalf("a group never seen has a timeline")
	}
}

func TestRestartKeepsTheFirstCause(t *testing.T) {
	o := timeline.New(timeline.Options{})
	f := &feed{o: o, group: "g", proto: "classic", n: 2, gen: 4}
	// Generation 5 starts; its join phase completes (CompletingRebalance
	// at 6), and a member that does not sync starts it over for 7.
	f.started(0, observe.CauseMemberLeft, "x", "Removing member x on LeaveGroup")
	f.gen++
	f.started(time.Second, observe.CauseRebalanceTimeout, "y", "Removing [y] on pending sync request expiration")
	f.completed(2*time.Second, observe.GroupEvent{Cause: observe.CauseMemberLeft, Member: "x", Duration: 2 * time.Second, PartitionsMoved: -1})
	r := only(t, o, "g")
	if r.Generation != 7 || r.Restarts != 1 || r.Cause != "member-left" || r.MemberID != "x" || r.Reason != "Removing member x on LeaveGroup" || r.Duration != 2*time.Second {
		t.Fatalf("%+v", r)
	}
}

func TestAbandonedRebalance(t *testing.T) {
	// A classic group's shard reloads during a rebalance: the machine
	// forgets it and later starts the same generation again.
	o := timeline.New(timeline.Options{})
	f := &feed{o: o, group: "g", proto: "classic", n: 1, gen: 3}
	f.started(0, observe.CauseMemberRejoined, "a", "Leader a re-joining")
	f.gen--
	f.started(time.Minute, observe.CauseMemberRejoined, "a", "Leader a re-joining")
	rs := o.Rebalances("", "g")
	if len(rs) != 2 || !rs[0].InProgress || rs[1].InProgress || !rs[1].Abandoned || rs[1].Restarts != 0 {
		t.Fatalf("%+v", rs)
	}
}

func TestCompletionWhoseStartWasNotSeen(t *testing.T) {
	o := timeline.New(timeline.Options{})
	// Started before the timeline did: the machine knew the start.
	f := &feed{o: o, group: "g", proto: "classic", n: 2, gen: 1}
	f.completed(time.Minute, observe.GroupEvent{Cause: observe.CauseMemberJoined, Member: "a", Duration: 5 * time.Second, PartitionsMoved: 3})
	r := only(t, o, "g")
	if !r.StartedAt.Equal(t0.Add(55*time.Second)) || r.Duration != 5*time.Second || r.Cause != "member-joined" || r.MembersBefore != 2 || r.InProgress {
		t.Fatalf("%+v", r)
	}
	// A consumer group's rebalance under way when its shard loaded: the
	// machine knows neither start nor cause.
	c := &feed{o: o, group: "c", proto: "consumer", n: 2, gen: 7}
	c.completed(time.Minute, observe.GroupEvent{PartitionsMoved: -1})
	r = only(t, o, "c")
	if !r.StartedAt.IsZero() || r.Duration != 0 || r.Cause != "unknown" || r.PartitionsMoved != -1 || r.Generation != 7 {
		t.Fatalf("%+v", r)
	}
}

func TestShardReloadDuringAConsumerRebalance(t *testing.T) {
	// The timeline saw the start; the shard reloaded, and the machine
	// reports the completion with no cause and no duration: the timeline
	// keeps what it saw and knows how long it took.
	o := timeline.New(timeline.Options{})
	f := &feed{o: o, group: "c", proto: "consumer", n: 2, gen: 1}
	f.started(0, observe.CauseMemberJoined, "b", "member b joined")
	f.completed(4*time.Second, observe.GroupEvent{PartitionsMoved: -1})
	r := only(t, o, "c")
	if r.Cause != "member-joined" || r.MemberID != "b" || r.Duration != 4*time.Second || r.InProgress || r.PartitionsMoved != -1 {
		t.Fatalf("%+v", r)
	}
}

func TestPerGroupBound(t *testing.T) {
	o := timeline.New(timeline.Options{PerGroup: 5})
	f := &feed{o: o, group: "g", proto: "consumer", n: 1}
	for i := range 12 {
		at := time.Duration(i) * time.Second
		f.started(at, observe.CauseSubscriptionChanged, "a", "member a changed its subscription")
		f.completed(at, observe.GroupEvent{Cause: observe.CauseSubscriptionChanged, Member: "a"})
	}
	f.started(time.Minute, observe.CauseMemberLeft, "b", "member b left") // in progress
	var gens []int32
	for _, r := range o.Rebalances("", "g") {
		gens = append(gens, r.Generation)
	}
	if !slices.Equal(gens, []int32{13, 12, 11, 10, 9}) {
		t.Fatalf("generations kept: %v, want the newest 5, newest first", gens)
	}
	if rs := o.Rebalances("", "g"); !rs[0].InProgress || rs[1].InProgress {
		t.Fatalf("%+v", rs[:2])
	}
}

func TestGroupsBoundEvictsTheLeastRecentlyActive(t *testing.T) {
	o := timeline.New(timeline.Options{Groups: 3})
	ev := func(group string) {
		o.Group(context.Background(), observe.GroupEvent{Kind: observe.MemberJoined, Group: group, Protocol: "classic", Member: "m", Members: 1, At: t0})
	}
	ev("a")
	ev("b")
	ev("c")
	ev("a") // a is active again: b is now the least recently active
	ev("d")
	want := []timeline.Key{{Group: "d"}, {Group: "a"}, {Group: "c"}}
	if got := o.Groups(); !slices.Equal(got, want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	// Tenants are separate groups.
	o.Group(context.Background(), observe.GroupEvent{Kind: observe.MemberJoined, Tenant: "t2", Group: "d", Protocol: "classic", Member: "m", Members: 1, At: t0})
	if got := o.Groups(); len(got) != 3 || got[0] != (timeline.Key{Tenant: "t2", Group: "d"}) || got[1] != (timeline.Key{Group: "d"}) {
		t.Fatalf("groups %v", got)
	}
}

func TestMemberEventsBound(t *testing.T) {
	o := timeline.New(timeline.Options{MemberEvents: 2})
	f := &feed{o: o, group: "g", proto: "classic"}
	for i := range 5 {
		f.joined(0, fmt.Sprint("m", i))
	}
	f.started(0, observe.CauseMemberJoined, "m4", "Adding new member m4")
	for i := range 3 {
		f.left(time.Second, observe.MemberFenced, fmt.Sprint("m", i), "did not rejoin within the rebalance timeout")
	}
	r := only(t, o, "g")
	if len(r.MemberEvents) != 2 || r.MemberEventsDropped != 6 || r.MemberEvents[1].MemberID != "m1" || r.Members != 2 || r.MembersBefore != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestReadersGetCopies(t *testing.T) {
	o := timeline.New(timeline.Options{})
	f := &feed{o: o, group: "g", proto: "classic"}
	f.joined(0, "a")
	f.started(0, observe.CauseMemberJoined, "a", "r")
	rs := o.Rebalances("", "g")
	rs[0].MemberEvents[0].MemberID = "changed"
	rs[0].Cause = "changed"
	if r := only(t, o, "g"); r.MemberEvents[0].MemberID != "a" || r.Cause != "member-joined" {
		t.Fatalf("a reader changed the timeline: %+v", r)
	}
}

func TestJSON(t *testing.T) {
	r := timeline.Rebalance{
		Protocol: "consumer", Generation: 7, StartedAt: t0, CompletedAt: t0.Add(2500 * time.Millisecond),
		Duration: 2500 * time.Millisecond, Cause: "member-joined", Reason: "member b joined", MemberID: "b", InstanceID: "i1",
		MembersBefore: 1, Members: 2, PartitionsMoved: 3,
		Phases:       observe.Phases{Assignment: 500 * time.Millisecond, Revocation: time.Second, Sync: time.Second},
		MemberEvents: []timeline.MemberEvent{{At: t0, Kind: "member-joined", MemberID: "b", InstanceID: "i1"}},
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"protocol": "consumer", "generation": 7.0, "started_at": "2026-01-01T00:00:00Z", "completed_at": "2026-01-01T00:00:02.5Z",
		"in_progress": false, "duration_ms": 2500.0, "restarts": 0.0, "cause": "member-joined", "reason": "member b joined",
		"member_id": "b", "instance_id": "i1", "members_before": 1.0, "members": 2.0, "partitions_moved": 3.0,
		"phases":        map[string]any{"join_ms": 0.0, "sync_ms": 1000.0, "assignment_ms": 500.0, "revocation_ms": 1000.0},
		"member_events": []any{map[string]any{"at": "2026-01-01T00:00:00Z", "kind": "member-joined", "member_id": "b", "instance_id": "i1"}},
	} {
		if !reflect.DeepEqual(m[k], want) {
			t.Errorf("%s: %#v, want %#v", k, m[k], want)
		}
		delete(m, k)
	}
	if len(m) != 0 {
		t.Errorf("fields not checked: %v (JSON %s)", m, b)
	}
	var back timeline.Rebalance
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %+v, %v\nwant %+v", back, err, r)
	}
	// In progress: no completion time, sub-millisecond phases kept.
	b, _ = json.Marshal(timeline.Rebalance{InProgress: true, StartedAt: t0, PartitionsMoved: -1, Phases: observe.Phases{Join: 250 * time.Microsecond}})
	if s := string(b); strings.Contains(s, "completed_at") || !strings.Contains(s, `"in_progress":true`) || !strings.Contains(s, `"join_ms":0.25`) || !strings.Contains(s, `"partitions_moved":-1`) {
		t.Fatalf("in progress: %s", s)
	}
}

// TestConcurrentUse runs writers of many groups and readers at once
// (under -race, the test's point).
func TestConcurrentUse(t *testing.T) {
	o := timeline.New(timeline.Options{PerGroup: 4, Groups: 50})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				f := &feed{o: o, group: fmt.Sprintf("g%d", (w*2000+i)%80), proto: "consumer", n: 1, gen: int32(i)}
				f.started(0, observe.CauseMemberJoined, "a", "member a joined")
				f.completed(time.Second, observe.GroupEvent{Cause: observe.CauseMemberJoined, Member: "a", Duration: time.Second})
			}
		}()
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, k := range o.Groups() {
					for _, r := range o.Rebalances(k.Tenant, k.Group) {
						if r.Cause != "member-joined" {
							t.Errorf("%+v", r)
							return
						}
					}
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if n := len(o.Groups()); n != 50 {
		t.Fatalf("%d groups kept, want the bound, 50", n)
	}
	for _, k := range o.Groups() {
		if n := len(o.Rebalances(k.Tenant, k.Group)); n < 1 || n > 4 {
			t.Fatalf("group %v keeps %d rebalances", k, n)
		}
	}
}

func TestOptionsDefaultsAndLimits(t *testing.T) {
	o := timeline.New(timeline.Options{PerGroup: -1})
	f := &feed{o: o, group: "g", proto: "classic", n: 1}
	for i := range timeline.DefaultPerGroup + 3 {
		f.started(time.Duration(i), observe.CauseMemberRejoined, "a", "r")
		f.completed(time.Duration(i), observe.GroupEvent{Cause: observe.CauseMemberRejoined, Member: "a"})
	}
	if n := len(o.Rebalances("", "g")); n != timeline.DefaultPerGroup {
		t.Fatalf("%d kept, want the default %d", n, timeline.DefaultPerGroup)
	}
	if observe.WantsRequests(o) {
		t.Fatalf("the timeline asks for request events")
	}
}

// BenchmarkEvent is the cost an event adds to a shard's loop: a start and
// a completion of one of 10,000 groups, each kept full (20 rebalances).
func BenchmarkEvent(b *testing.B) {
	o := timeline.New(timeline.Options{})
	ctx := context.Background()
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprint("group-", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		g := names[i%len(names)]
		gen := int32(i/len(names) + 1)
		o.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceStarted, Group: g, Protocol: "consumer", Generation: gen, Cause: observe.CauseMemberJoined, Member: "m", Reason: "member m joined", Members: 3, At: t0})
		o.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Group: g, Protocol: "consumer", Generation: gen, Cause: observe.CauseMemberJoined, Member: "m", Members: 3, At: t0.Add(time.Second), Duration: time.Second, PartitionsMoved: 2})
		i++
	}
}

// TestMemoryOfAFullTimeline measures what the default bounds cost when
// full (10,000 groups × 20 rebalances, each with two member events): the
// number the package documentation quotes. It fails only if the cost
// grows past twice that.
func TestMemoryOfAFullTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a full timeline")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	o := timeline.New(timeline.Options{})
	ctx := context.Background()
	for g := range timeline.DefaultGroups {
		name := fmt.Sprint("group-", g)
		for gen := range int32(timeline.DefaultPerGroup) {
			o.Group(ctx, observe.GroupEvent{Kind: observe.MemberJoined, Group: name, Protocol: "classic", Member: "member-a", Members: 2, At: t0})
			o.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceStarted, Group: name, Protocol: "classic", Generation: gen + 1, Cause: observe.CauseMemberJoined, Member: "member-a", Reason: "Adding new member", Members: 2, At: t0})
			o.Group(ctx, observe.GroupEvent{Kind: observe.MemberFenced, Group: name, Protocol: "classic", Member: "member-b", Members: 1, At: t0})
			o.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Group: name, Protocol: "classic", Generation: gen + 1, Cause: observe.CauseMemberJoined, Member: "member-a", Members: 1, At: t0})
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	mb := float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
	t.Logf("a full timeline (%d groups × %d rebalances): %.0f MiB", timeline.DefaultGroups, timeline.DefaultPerGroup, mb)
	if mb > 2*memoryBudgetMiB {
		t.Errorf("a full timeline takes %.0f MiB, more than twice the %d MiB documented", mb, memoryBudgetMiB)
	}
	runtime.KeepAlive(o)
}

// memoryBudgetMiB is what the package documentation says a full timeline
// with the default bounds takes.
const memoryBudgetMiB = 90

// TestShareGroupTimeline: a share group's events (protocol "share", as
// coordinator/groups/share reports them: a rebalance starts with each
// group epoch bump and completes in the heartbeat that computes the
// target, at once when the last member leaves) make its timeline.
func TestShareGroupTimeline(t *testing.T) {
	o := timeline.New(timeline.Options{})
	f := &feed{o: o, group: "workers", proto: "share"}
	f.joined(0, "a")
	f.started(0, observe.CauseMemberJoined, "a", "member a joined")
	f.completed(0, observe.GroupEvent{Cause: observe.CauseMemberJoined, Member: "a", PartitionsMoved: 4})
	f.joined(10*time.Second, "b")
	f.started(10*time.Second, observe.CauseMemberJoined, "b", "member b joined")
	f.completed(10*time.Second, observe.GroupEvent{Cause: observe.CauseMemberJoined, Member: "b", PartitionsMoved: 2})
	// b's session runs out; the rebalance completes at a's next
	// heartbeat.
	f.left(60*time.Second, observe.MemberExpired, "b", "session timed out")
	f.started(60*time.Second, observe.CauseMemberExpired, "b", "member b's session expired")
	f.completed(62*time.Second, observe.GroupEvent{Cause: observe.CauseMemberExpired, Member: "b", Duration: 2 * time.Second,
		Phases: observe.Phases{Assignment: 2 * time.Second}, PartitionsMoved: 2})
	f.left(100*time.Second, observe.MemberLeft, "a", "")
	f.started(100*time.Second, observe.CauseMemberLeft, "a", "member a left")
	f.completed(100*time.Second, observe.GroupEvent{Cause: observe.CauseMemberLeft, Member: "a", PartitionsMoved: 0})

	rs := o.Rebalances("", "workers")
	type row struct {
		Epoch            int32
		Cause, By, Event string
		Before, After    int
		Moved            int
		Took             time.Duration
	}
	var got []row
	for _, r := range rs {
		if r.Protocol != "share" || r.InProgress || r.Abandoned || len(r.MemberEvents) != 1 {
			t.Fatalf("rebalance %+v", r)
		}
		got = append(got, row{r.Generation, r.Cause, r.MemberID, r.MemberEvents[0].Kind + " " + r.MemberEvents[0].MemberID, r.MembersBefore, r.Members, r.PartitionsMoved, r.Duration})
	}
	want := []row{
		{4, "member-left", "a", "member-left a", 1, 0, 0, 0},
		{3, "member-expired", "b", "member-expired b", 2, 1, 2, 2 * time.Second},
		{2, "member-joined", "b", "member-joined b", 1, 2, 2, 0},
		{1, "member-joined", "a", "member-joined a", 0, 1, 4, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("timeline, newest first:\n got %+v\nwant %+v", got, want)
	}
}

// TestClusterEvents: the last ClusterEvents cluster events, newest first,
// in their JSON form.
func TestClusterEvents(t *testing.T) {
	o := timeline.New(timeline.Options{ClusterEvents: 3})
	if got := o.ClusterEvents(); got == nil || len(got) != 0 {
		t.Fatalf("empty: %#v", got)
	}
	for i := range 5 {
		o.Cluster(observe.ClusterEvent{Kind: observe.NodeJoined, Node: int32(i), At: t0.Add(time.Duration(i) * time.Second), Serving: i + 1})
	}
	o.Cluster(observe.ClusterEvent{Kind: observe.NodeLost, Node: 2, Kafka: "h:2", Reason: "lease expired or revoked", At: t0.Add(time.Minute), Serving: 4})
	got := o.ClusterEvents()
	var nodes []int32
	for _, e := range got {
		nodes = append(nodes, e.Node)
	}
	if !slices.Equal(nodes, []int32{2, 4, 3}) || got[0].Event != "lost" || got[1].Event != "joined" {
		t.Fatalf("kept %+v; want lost 2, joined 4, joined 3", got)
	}
	b, _ := json.Marshal(got[0])
	if want := `{"at":"2026-01-01T00:01:00Z","event":"lost","node":2,"kafka":"h:2","reason":"lease expired or revoked","serving":4,"draining":0,"suspended":0}`; string(b) != want {
		t.Errorf("JSON %s; want %s", b, want)
	}
}
