package kafka_test

// Cluster mode end to end: two kafka.Servers on their own listeners, each
// over its own topic log (its own Dir, node ids 1 and 2) on one shared
// store, with a fake kafka.Cluster naming both; clients seeded with one
// node must follow the partition leaders to the other.

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeCluster is the test's kafka.Cluster: a set of brokers of which some
// are live, node 1 the controller, and coordinator shards owned by the
// owner function.
type fakeCluster struct {
	self  int32
	state *clusterState
}

type clusterState struct {
	mu      sync.Mutex
	brokers []kafka.Broker // every node, sorted by id
	down    map[int32]bool
	owner   func(shard int) (int32, bool)
}

func (s *clusterState) live() []kafka.Broker {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []kafka.Broker
	for _, b := range s.brokers {
		if !s.down[b.NodeID] {
			out = append(out, b)
		}
	}
	return out
}

func (s *clusterState) setDown(id int32, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[id] = down
}

func (c fakeCluster) Self() int32             { return c.self }
func (c fakeCluster) Brokers() []kafka.Broker { return c.state.live() }
func (c fakeCluster) Controller() int32       { return 1 }
func (c fakeCluster) liveIDs() (ids []int32) {
	for _, b := range c.state.live() {
		ids = append(ids, b.NodeID)
	}
	return ids
}

func (c fakeCluster) Coordinator(shard int) (kafka.Broker, bool) {
	id, ok := c.state.owner(shard)
	if !ok {
		return kafka.Broker{}, false
	}
	for _, b := range c.state.live() {
		if b.NodeID == id {
			return b, true
		}
	}
	return kafka.Broker{}, false
}

// clusterNode is one started node of the test cluster.
type clusterNode struct {
	id     int32
	addr   string
	log    *topics.Log
	groups *coordinator.Coordinator
}

// startCluster starts nodes 1 and 2. Coordinator shards are owned by node
// shard%3 (shard%3 == 0: no live owner).
func startCluster(t *testing.T) (*clusterState, []*clusterNode) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	state := &clusterState{down: map[int32]bool{}, owner: func(shard int) (int32, bool) {
		return int32(shard % 3), shard%3 != 0
	}}
	var lns []net.Listener
	for id := int32(1); id <= 2; id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		a := ln.Addr().(*net.TCPAddr)
		state.brokers = append(state.brokers, kafka.Broker{NodeID: id, Host: a.IP.String(), Port: int32(a.Port)})
	}
	var nodes []*clusterNode
	for i, ln := range lns {
		c := fakeCluster{self: int32(i + 1), state: state}
		log, err := topics.Open(topics.Config{Dir: filepath.Join(t.TempDir(), "topics"), Store: st, NodeID: c.self, Nodes: c.liveIDs, ClusterID: "test-cluster"})
		if err != nil {
			t.Fatal(err)
		}
		// Each node's coordinator on its own store: the test is of the
		// broker APIs, not of shard handover.
		groups, err := coordinator.Start(coordinator.Config{}, coordinator.Options{Store: memstore.New(memstore.Options{})})
		if err != nil {
			t.Fatal(err)
		}
		s, err := kafka.New(kafka.Config{Topics: log, Groups: groups, Cluster: c})
		if err != nil {
			t.Fatal(err)
		}
		serve(t, s, ln, func() { log.Close() })
		nodes = append(nodes, &clusterNode{id: c.self, addr: ln.Addr().String(), log: log, groups: groups})
	}
	return state, nodes
}

// refreshAll is what the cluster wiring does when the shared catalog
// changes.
func refreshAll(t *testing.T, nodes []*clusterNode) {
	t.Helper()
	for _, n := range nodes {
		if err := n.log.Refresh(); err != nil {
			t.Fatalf("node %d: Refresh: %v", n.id, err)
		}
	}
}

func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func TestClusterTwoNodes(t *testing.T) {
	state, nodes := startCluster(t)
	n1, n2 := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm1 := newAdmin(t, n1.addr)

	created, err := adm1.CreateTopics(ctx, 4, 1, nil, "orders")
	if err != nil || created["orders"].Err != nil {
		t.Fatalf("create: %v %+v", err, created)
	}
	refreshAll(t, nodes)

	// Metadata from either node: both brokers, node 1 the controller, the
	// leaders split.
	for _, n := range nodes {
		md, err := newAdmin(t, n.addr).Metadata(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if got := md.Brokers.NodeIDs(); !slices.Equal(got, []int32{1, 2}) || md.Controller != 1 || md.Cluster != "test-cluster" {
			t.Errorf("node %d: brokers %v controller %d cluster %q", n.id, got, md.Controller, md.Cluster)
		}
		for i, b := range md.Brokers {
			if want := state.brokers[i]; b.Host != want.Host || b.Port != want.Port {
				t.Errorf("node %d: broker %+v, want %+v", n.id, b, want)
			}
		}
		ps := md.Topics["orders"].Partitions
		for p, want := range []int32{1, 2, 1, 2} {
			d := ps[int32(p)]
			if d.Err != nil || d.Leader != want || !slices.Equal(d.Replicas, []int32{want}) || !slices.Equal(d.ISR, []int32{want}) {
				t.Errorf("node %d: partition %d %+v, want leader %d", n.id, p, d, want)
			}
		}
	}

	// A producer seeded with node 2 and a consumer seeded with node 1 each
	// reach both leaders.
	prod, err := kgo.NewClient(kgo.SeedBrokers(n2.addr), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const total = 100
	var recs []*kgo.Record
	for i := range total {
		recs = append(recs, &kgo.Record{Partition: int32(i % 4), Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for p := range 4 {
		lead := nodes[[]int{0, 1, 0, 1}[p]]
		other := nodes[[]int{1, 0, 1, 0}[p]]
		tp := lead.log.Topic("orders")
		if tp.Partitions[p] == nil {
			t.Fatalf("partition %d not open on its leader %d", p, lead.id)
		}
		if _, hw := tp.Partitions[p].Offsets(); hw != total/4 {
			t.Errorf("partition %d: high watermark %d on its leader, want %d", p, hw, total/4)
		}
		if other.log.Topic("orders").Partitions[p] != nil {
			t.Errorf("partition %d open on node %d, which does not lead it", p, other.id)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(n1.addr), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int32{}
	for len(seen) < total {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(seen), total)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = r.Partition })
	}
	for i := range total {
		if p, ok := seen[strconv.Itoa(i)]; !ok || p != int32(i%4) {
			t.Errorf("record %d: seen %v in partition %d", i, ok, p)
		}
	}

	// The wrong node answers NOT_LEADER_OR_FOLLOWER for partition 1 (led by
	// node 2), naming the leader where the version has room (KIP-951).
	c := dial(t, n1.addr)
	pr := roundTrip[*kmsg.ProduceResponse](c, 11, produceReq("orders", [16]byte{}, 1, -1, plain(1, 8).encode()))
	sp := pr.Topics[0].Partitions[0]
	wantCode(t, "produce v11 to the wrong node", sp.ErrorCode, kerr.NotLeaderForPartition)
	if sp.CurrentLeader.LeaderID != 2 || len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != 2 || pr.Brokers[0].Port != state.brokers[1].Port {
		t.Errorf("produce v11 leader hint %+v, endpoints %+v", sp.CurrentLeader, pr.Brokers)
	}
	pr = roundTrip[*kmsg.ProduceResponse](c, 9, produceReq("orders", [16]byte{}, 1, -1, plain(1, 8).encode()))
	wantCode(t, "produce v9 to the wrong node", pr.Topics[0].Partitions[0].ErrorCode, kerr.NotLeaderForPartition)
	if len(pr.Brokers) != 0 {
		t.Errorf("produce v9 has endpoints %+v", pr.Brokers)
	}
	fr := roundTrip[*kmsg.FetchResponse](c, 16, fetchReq("", created["orders"].ID, 1, 0, 0, 1))
	fp := fr.Topics[0].Partitions[0]
	wantCode(t, "fetch v16 from the wrong node", fp.ErrorCode, kerr.NotLeaderForPartition)
	if fp.CurrentLeader.LeaderID != 2 || len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != 2 {
		t.Errorf("fetch v16 leader hint %+v, endpoints %+v", fp.CurrentLeader, fr.Brokers)
	}
	fp = fetchPartition(c, 12, fetchReq("orders", [16]byte{}, 3, 0, 0, 1))
	wantCode(t, "fetch v12 from the wrong node", fp.ErrorCode, kerr.NotLeaderForPartition)
	if fp.CurrentLeader.LeaderID != 2 {
		t.Errorf("fetch v12 leader hint %+v", fp.CurrentLeader)
	}
	wantCode(t, "list offsets at the wrong node", listOffset(c, "orders", 1, -1).ErrorCode, kerr.NotLeaderForPartition)
	if lo := listOffset(c, "orders", 0, -1); lo.ErrorCode != 0 || lo.Offset != total/4 {
		t.Errorf("list offsets at the leader: %s offset %d", codeName(lo.ErrorCode), lo.Offset)
	}

	// Replication factor above 1: refused with the reason, whether or not
	// there are enough brokers.
	for _, rf := range []int16{2, 3} {
		resp, err := adm1.CreateTopics(ctx, 1, rf, nil, "replicated")
		if err != nil {
			t.Fatal(err)
		}
		r := resp["replicated"]
		if r.Err != kerr.InvalidReplicationFactor || !strings.Contains(r.ErrMessage, "one copy of each partition (replication factor 1)") {
			t.Errorf("rf %d: %v %q", rf, r.Err, r.ErrMessage)
		}
		if rf == 3 && !strings.Contains(r.ErrMessage, "only 2 broker(s) are registered") {
			t.Errorf("rf 3: message %q does not count the brokers", r.ErrMessage)
		}
	}

	// Explicit assignments: one live replica leads; two replicas, a dead
	// broker or an unknown one are refused.
	cases := []struct {
		replicas []int32
		want     *kerr.Error
	}{
		{[]int32{1, 2}, kerr.InvalidReplicationFactor},
		{[]int32{3}, kerr.InvalidReplicaAssignment},
		{[]int32{2, 2}, kerr.InvalidReplicaAssignment},
		{[]int32{}, kerr.InvalidReplicaAssignment},
	}
	for _, tc := range cases {
		req, rt := createReq("assigned-bad", -1, -1)
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Replicas = tc.replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		wantCode(t, fmt.Sprintf("assignment %v", tc.replicas), roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0].ErrorCode, tc.want)
	}
	req, rt := createReq("assigned", -1, -1)
	for p, r := range []int32{2, 2, 1} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), []int32{r}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	wantCode(t, "assigned create", roundTrip[*kmsg.CreateTopicsResponse](c, 7, req).Topics[0].ErrorCode, nil)
	if got := n1.log.Topic("assigned").Leaders; !slices.Equal(got, []int32{2, 2, 1}) {
		t.Errorf("assigned leaders %v", got)
	}

	// CreatePartitions and DeleteTopics from node 2 reach node 1 on
	// Refresh.
	adm2 := newAdmin(t, n2.addr)
	if resp, err := adm2.CreatePartitions(ctx, 2, "orders"); err != nil || resp["orders"].Err != nil {
		t.Fatalf("create partitions: %v %+v", err, resp)
	}
	refreshAll(t, nodes)
	md, err := adm1.Metadata(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if ps := md.Topics["orders"].Partitions; len(ps) != 6 || ps[4].Leader == ps[5].Leader {
		t.Errorf("after growing: %+v", ps)
	}
	if resp, err := adm2.DeleteTopics(ctx, "orders"); err != nil || resp["orders"].Err != nil {
		t.Fatalf("delete: %v %+v", err, resp)
	}
	refreshAll(t, nodes)
	for _, n := range nodes {
		if n.log.Topic("orders") != nil {
			t.Errorf("node %d still has the deleted topic", n.id)
		}
	}
}

// TestClusterFindCoordinator: a group's coordinator is its shard's live
// owner, else COORDINATOR_NOT_AVAILABLE; DescribeCluster lists the live
// brokers.
func TestClusterFindCoordinator(t *testing.T) {
	state, nodes := startCluster(t)
	n1 := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Groups whose shards fall to node 1, node 2 and no one.
	var groups [3]string
	for i := 0; groups[0] == "" || groups[1] == "" || groups[2] == ""; i++ {
		g := "g" + strconv.Itoa(i)
		if s := n1.groups.ShardFor("", g) % 3; groups[s] == "" {
			groups[s] = g
		}
	}
	found := newAdmin(t, n1.addr).FindGroupCoordinators(ctx, groups[1], groups[2])
	for want, g := range map[int32]string{1: groups[1], 2: groups[2]} {
		r := found[g]
		if r.Err != nil || r.NodeID != want || r.Port != state.brokers[want-1].Port {
			t.Errorf("group %s: %+v, want node %d", g, r, want)
		}
	}

	c := dial(t, n1.addr)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{groups[0], groups[2]}
	resp := roundTrip[*kmsg.FindCoordinatorResponse](c, 4, req)
	if len(resp.Coordinators) != 2 {
		t.Fatalf("coordinators %+v", resp.Coordinators)
	}
	wantCode(t, "unowned shard", resp.Coordinators[0].ErrorCode, kerr.CoordinatorNotAvailable)
	if r := resp.Coordinators[0]; r.NodeID != -1 || r.Port != -1 {
		t.Errorf("unowned shard answered %+v", r)
	}
	if r := resp.Coordinators[1]; r.ErrorCode != 0 || r.NodeID != 2 {
		t.Errorf("owned shard answered %+v", r)
	}
	old := at(3, kmsg.NewPtrFindCoordinatorRequest())
	old.CoordinatorKey = groups[0]
	r3 := roundTrip[*kmsg.FindCoordinatorResponse](c, 3, old)
	wantCode(t, "v3 unowned shard", r3.ErrorCode, kerr.CoordinatorNotAvailable)

	// Node 2 down: its shards have no live owner, and DescribeCluster and
	// Metadata list node 1 alone.
	state.setDown(2, true)
	old.CoordinatorKey = groups[2]
	wantCode(t, "owner down", roundTrip[*kmsg.FindCoordinatorResponse](c, 3, old).ErrorCode, kerr.CoordinatorNotAvailable)
	dc := roundTrip[*kmsg.DescribeClusterResponse](c, 0, kmsg.NewPtrDescribeClusterRequest())
	if len(dc.Brokers) != 1 || dc.Brokers[0].NodeID != 1 || dc.ControllerID != 1 {
		t.Errorf("describe cluster with node 2 down: %+v", dc)
	}
	state.setDown(2, false)
	dc = roundTrip[*kmsg.DescribeClusterResponse](c, 0, kmsg.NewPtrDescribeClusterRequest())
	if len(dc.Brokers) != 2 || dc.Brokers[1].NodeID != 2 || dc.Brokers[1].Port != state.brokers[1].Port {
		t.Errorf("describe cluster: %+v", dc)
	}
}

// TestClusterOfflinePartition: a partition whose leader is down is
// answered as Kafka answers an offline partition.
func TestClusterOfflinePartition(t *testing.T) {
	state, nodes := startCluster(t)
	n1 := nodes[0]
	c := dial(t, n1.addr)
	createTopic(c, "t", 2, nil)
	refreshAll(t, nodes)
	state.setDown(2, true)
	md := metadataTopic(c, "t")
	if len(md.Partitions) != 2 {
		t.Fatalf("partitions %+v", md.Partitions)
	}
	up, down := md.Partitions[0], md.Partitions[1]
	if up.ErrorCode != 0 || up.Leader != 1 || len(up.OfflineReplicas) != 0 {
		t.Errorf("partition on the live node: %+v", up)
	}
	wantCode(t, "offline partition", down.ErrorCode, kerr.LeaderNotAvailable)
	if down.Leader != -1 || !slices.Equal(down.Replicas, []int32{2}) || !slices.Equal(down.ISR, []int32{2}) || !slices.Equal(down.OfflineReplicas, []int32{2}) {
		t.Errorf("offline partition: %+v", down)
	}
	// With its leader down, the wrong node names no leader.
	sp := produce(c, "t", 1, plain(1, 8).encode())
	wantCode(t, "produce to an offline partition", sp.ErrorCode, kerr.NotLeaderForPartition)
	if sp.CurrentLeader.LeaderID != -1 {
		t.Errorf("leader hint %+v for a partition whose leader is down", sp.CurrentLeader)
	}
}

// TestClusterAdminBeforeRefresh: the admin APIs act on the shared catalog,
// not on the node's last refresh: a topic just created on node 1 already
// exists, grows and is deleted through node 2.
func TestClusterAdminBeforeRefresh(t *testing.T) {
	_, nodes := startCluster(t)
	c1, c2 := dial(t, nodes[0].addr), dial(t, nodes[1].addr)

	createTopic(c1, "a", 1, nil)
	req, _ := createReq("a", 1, 1)
	st := roundTrip[*kmsg.CreateTopicsResponse](c2, 7, req).Topics[0]
	wantCode(t, "create again on node 2", st.ErrorCode, kerr.TopicAlreadyExists)
	if st.ErrorMessage == nil || *st.ErrorMessage != "Topic 'a' already exists." {
		t.Errorf("message %v", st.ErrorMessage)
	}

	createTopic(c1, "b", 1, nil)
	grow := kmsg.NewPtrCreatePartitionsRequest()
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = "b", 3
	grow.Topics = append(grow.Topics, gt)
	wantCode(t, "grow on node 2", roundTrip[*kmsg.CreatePartitionsResponse](c2, 3, grow).Topics[0].ErrorCode, nil)
	if got := nodes[1].log.Topic("b"); got == nil || len(got.Leaders) != 3 {
		t.Fatalf("node 2 after growing: %+v", got)
	}

	id := createTopic(c1, "c", 2, nil)
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = id
	del.Topics = append(del.Topics, dt)
	if r := roundTrip[*kmsg.DeleteTopicsResponse](c2, 6, del).Topics[0]; r.ErrorCode != 0 || r.Topic == nil || *r.Topic != "c" {
		t.Errorf("delete by id on node 2: %s %v", codeName(r.ErrorCode), r.Topic)
	}
	refreshAll(t, nodes)
	if nodes[0].log.Topic("c") != nil {
		t.Error("node 1 kept a topic deleted on node 2")
	}
}
