package coordinator_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heldStore holds every write while held is set, to show that answers
// wait for their records.
type heldStore struct {
	store.Store
	mu      sync.Mutex
	held    bool
	release chan struct{}
	entered chan struct{}
}

// Acquire wraps the shard's write handle: the runtime writes through it.
func (s *heldStore) Acquire(scope []byte) (store.Handle, error) {
	h, err := s.Store.Acquire(scope)
	return heldHandle{h, s}, err
}

type heldHandle struct {
	store.Handle
	s *heldStore
}

func (h heldHandle) wait() {
	h.s.mu.Lock()
	held := h.s.held
	h.s.mu.Unlock()
	if held {
		// Several writes may be held at once (a shard's offset
		// reservation for __consumer_offsets beside the commit): the
		// first tells the test, the others must not block on it.
		select {
		case h.s.entered <- struct{}{}:
		default:
		}
		<-h.s.release
	}
}

func (h heldHandle) Apply(b *store.Batch) error {
	h.wait()
	return h.Handle.Apply(b)
}

func (h heldHandle) ApplyAsync(b *store.Batch) (func() error, error) {
	h.wait()
	return h.Handle.ApplyAsync(b)
}

func openStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func start(t *testing.T, st store.Store) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.Start(coordinator.Config{InitialRebalanceDelay: -1, Shards: 4}, coordinator.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func handle[R kmsg.Response](t *testing.T, c *coordinator.Coordinator, v int16, req kmsg.Request) R {
	t.Helper()
	req.SetVersion(v)
	wait := c.Handle(context.Background(), coordinator.Request{Msg: req, ClientID: "test", ClientHost: "/127.0.0.1"})
	done := make(chan kmsg.Response, 1)
	go func() { done <- wait() }()
	select {
	case r := <-done:
		return r.(R)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s v%d: no answer in 10 s", kmsg.NameForKey(req.Key()), v)
		return *new(R)
	}
}

func commitReq(group, member string, gen int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
	return req
}

// An OffsetCommit is answered only once its record is durable.
func TestCommitAnswerWaitsForStore(t *testing.T) {
	st := &heldStore{Store: openStore(t, t.TempDir()), release: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer st.Close()
	c := start(t, st)
	defer c.Close()

	st.mu.Lock()
	st.held = true
	st.mu.Unlock()
	req := commitReq("g", "", -1, 5)
	req.SetVersion(8)
	wait := c.Handle(context.Background(), coordinator.Request{Msg: req})
	done := make(chan kmsg.Response, 1)
	go func() { done <- wait() }()
	<-st.entered // the write is under way and held
	select {
	case <-done:
		t.Fatal("the commit was answered while its record was not yet written")
	case <-time.After(100 * time.Millisecond):
	}
	st.mu.Lock()
	st.held = false
	st.mu.Unlock()
	close(st.release)
	resp := (<-done).(*kmsg.OffsetCommitResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
}

// After a restart every group is back in its last durable state: same id,
// generation, members and assignments, offsets; members carry on.
func TestRestartRestoresGroups(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	c := start(t, st)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("sub")}}
	first := handle[*kmsg.JoinGroupResponse](t, c, 9, join)
	join.MemberID = first.MemberID
	j := handle[*kmsg.JoinGroupResponse](t, c, 9, join)
	if j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("join: %+v", j)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", j.MemberID, j.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("mine")}}
	if s := handle[*kmsg.SyncGroupResponse](t, c, 5, sync); s.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	if r := handle[*kmsg.OffsetCommitResponse](t, c, 8, commitReq("g", j.MemberID, j.Generation, 42)); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	before := groupRecord(t, st, c, "g")
	c.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, dir)
	defer st.Close()
	c = start(t, st)
	defer c.Close()
	after := groupRecord(t, st, c, "g")
	if after.ID != before.ID || after.ID == "" || after.Generation != 1 {
		t.Fatalf("group record after restart %+v, before %+v", after, before)
	}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}
	d := handle[*kmsg.DescribeGroupsResponse](t, c, 5, describe).Groups[0]
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != j.MemberID || string(d.Members[0].MemberAssignment) != "mine" {
		t.Fatalf("described after restart: %+v", d)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", j.MemberID, j.Generation
	if r := handle[*kmsg.HeartbeatResponse](t, c, 4, hb); r.ErrorCode != 0 {
		t.Fatalf("heartbeat after restart: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if got := handle[*kmsg.OffsetFetchResponse](t, c, 7, fetch).Topics[0].Partitions[0].Offset; got != 42 {
		t.Fatalf("offset after restart %d, want 42", got)
	}
	// The group id outlives the group becoming Empty.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}
	handle[*kmsg.LeaveGroupResponse](t, c, 5, leave)
	if empty := groupRecord(t, st, c, "g"); empty.ID != before.ID || len(empty.Members) != 0 || empty.Generation != 2 {
		t.Fatalf("group record once Empty: %+v", empty)
	}
}

func groupRecord(t *testing.T, st store.Store, c *coordinator.Coordinator, group string) record.ClassicGroup {
	t.Helper()
	key := record.GroupKey{Shard: uint16(c.ShardFor("", group)), Group: group}.Key()
	v, err := st.Get(key)
	if err != nil {
		t.Fatalf("group record: %v", err)
	}
	g, err := record.DecodeClassicGroup(v)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// firstAssignor gives every partition to the member with the smallest id.
type firstAssignor struct{}

func (firstAssignor) Name() string { return "first" }
func (firstAssignor) Assign(g assign.Group) assign.Assignment {
	out := assign.Assignment{}
	ids := []string{}
	for _, m := range g.Members {
		out[m.ID] = assign.Partitions{}
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	for name, t := range g.Topics {
		for p := range t.Partitions {
			out[ids[0]][name] = append(out[ids[0]][name], p)
		}
	}
	return out
}

// An embedding program's own assignor, named in ConsumerAssignors, is the
// group's default; an unknown name does not validate.
func TestCustomAssignor(t *testing.T) {
	cfg := coordinator.Config{Shards: 2, ConsumerAssignmentInterval: -1, ConsumerAssignors: []string{"first", "uniform"}, CustomAssignors: []assign.Assignor{firstAssignor{}}}
	if err := cfg.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := cfg
	bad.ConsumerAssignors = []string{"second"}
	if err := bad.WithDefaults().Validate(); err == nil {
		t.Fatal("an unknown assignor name validates")
	}
	catalog := machine.NewCatalog(1, map[string]machine.TopicMeta{"t": {ID: [16]byte{7}, Partitions: 4}})
	c, err := coordinator.Start(cfg, coordinator.Options{Store: openStore(t, t.TempDir()), Topics: func(string) *machine.Catalog { return catalog }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	join := func(id string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", id, 30000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return handle[*kmsg.ConsumerGroupHeartbeatResponse](t, c, 1, req)
	}
	if r := join("b"); r.ErrorCode != 0 || len(r.Assignment.Topics) != 1 || len(r.Assignment.Topics[0].Partitions) != 4 {
		t.Fatalf("b alone: %+v", r)
	}
	if r := join("a"); r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.Topics) != 0 {
		t.Fatalf("a joins: it is first but b still owns everything: %+v", r.Assignment)
	}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"g"}
	g := handle[*kmsg.ConsumerGroupDescribeResponse](t, c, 1, d).Groups[0]
	if g.AssignorName != "first" {
		t.Fatalf("assignor %q", g.AssignorName)
	}
	for _, m := range g.Members {
		n := 0
		for _, tp := range m.TargetAssignment.TopicPartitions {
			n += len(tp.Partitions)
		}
		if (m.MemberID == "a") != (n == 4) {
			t.Fatalf("target of %s: %d partitions", m.MemberID, n)
		}
	}
}

// handleAs is handle for a tenant.
func handleAs[R kmsg.Response](t *testing.T, c *coordinator.Coordinator, tenant string, v int16, req kmsg.Request) R {
	t.Helper()
	req.SetVersion(v)
	return (c.Handle(context.Background(), coordinator.Request{Msg: req, Tenant: tenant, ClientID: "test", ClientHost: "/127.0.0.1"})()).(R)
}

// Two tenants' groups of the same name are two groups: their offsets,
// their members and their listings never meet, also after a restart.
func TestTenantsHaveSeparateGroups(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	c := start(t, st)
	for tenant, off := range map[string]int64{"org-a": 10, "org-b": 20} {
		resp := handleAs[*kmsg.OffsetCommitResponse](t, c, tenant, 8, commitReq("g", "", -1, off))
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("%s: commit: %v", tenant, kerr.ErrorForCode(code))
		}
	}
	// org-a's group also gets a member; org-b's stays Empty.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
	jr := handleAs[*kmsg.JoinGroupResponse](t, c, "org-a", 3, join)
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", jr.Generation, jr.MemberID
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte{1}}}
	if r := handleAs[*kmsg.SyncGroupResponse](t, c, "org-a", 3, sync); r.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	check := func(c *coordinator.Coordinator) {
		t.Helper()
		for tenant, want := range map[string]int64{"org-a": 10, "org-b": 20, "": -1} {
			fetch := kmsg.NewPtrOffsetFetchRequest()
			fetch.Group = "g"
			fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			r := handleAs[*kmsg.OffsetFetchResponse](t, c, tenant, 5, fetch)
			if got := r.Topics[0].Partitions[0].Offset; got != want {
				t.Errorf("tenant %q fetches offset %d, want %d", tenant, got, want)
			}
			list := handleAs[*kmsg.ListGroupsResponse](t, c, tenant, 4, kmsg.NewPtrListGroupsRequest())
			var listed []string
			for _, g := range list.Groups {
				listed = append(listed, g.Group+"/"+g.GroupState)
			}
			wantList := map[string][]string{"org-a": {"g/Stable"}, "org-b": {"g/Empty"}, "": nil}[tenant]
			if !slices.Equal(listed, wantList) {
				t.Errorf("tenant %q lists %v, want %v", tenant, listed, wantList)
			}
		}
	}
	check(c)
	c.Close()
	c = start(t, st)
	defer c.Close()
	defer st.Close()
	check(c)
}

// loadHeldStore holds loads: while held, a Scan (how a shard loads) waits
// until release is closed, so the shard stays loading.
type loadHeldStore struct {
	store.Store
	held    atomic.Bool
	entered chan struct{} // a held Scan has begun
	release chan struct{}
}

func (s *loadHeldStore) Scan(prefix []byte, fn func(k, v []byte) error) error {
	if s.held.Load() {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-s.release
	}
	return s.Store.Scan(prefix, fn)
}

// While a group's shard loads, a classic Heartbeat is answered NONE, as
// Kafka's GroupCoordinatorService.heartbeat does, and the member's session
// goes on once it has loaded; other group requests get
// COORDINATOR_LOAD_IN_PROGRESS. While the shard is not held at all, a
// Heartbeat gets NOT_COORDINATOR, so that the client looks the
// coordinator up again.
func TestHeartbeatWhileLoading(t *testing.T) {
	st := &loadHeldStore{Store: openStore(t, t.TempDir()), entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer st.Close()
	c := start(t, st)
	defer c.Close()

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("sub")}}
	join.MemberID = handle[*kmsg.JoinGroupResponse](t, c, 9, join).MemberID
	j := handle[*kmsg.JoinGroupResponse](t, c, 9, join)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", j.MemberID, j.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("mine")}}
	if s := handle[*kmsg.SyncGroupResponse](t, c, 5, sync); s.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", j.MemberID, j.Generation
	heartbeat := func() int16 { return handle[*kmsg.HeartbeatResponse](t, c, 4, hb).ErrorCode }
	commit := func() int16 {
		return handle[*kmsg.OffsetCommitResponse](t, c, 8, commitReq("g", j.MemberID, j.Generation, 7)).Topics[0].Partitions[0].ErrorCode
	}

	shard := c.ShardFor("", "g")
	c.Unload(shard)
	if code := heartbeat(); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat to an unloaded shard: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	st.held.Store(true)
	loaded := make(chan error, 1)
	go func() { loaded <- c.Load(shard) }()
	<-st.entered
	if code := heartbeat(); code != 0 {
		t.Fatalf("heartbeat while the shard loads: %v, want NONE", kerr.ErrorForCode(code))
	}
	if code := commit(); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("commit while the shard loads: %v, want COORDINATOR_LOAD_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	st.held.Store(false)
	close(st.release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if code := heartbeat(); code != 0 {
		t.Fatalf("heartbeat once loaded: %v", kerr.ErrorForCode(code))
	}
	if code := commit(); code != 0 {
		t.Fatalf("commit once loaded: %v", kerr.ErrorForCode(code))
	}
}
