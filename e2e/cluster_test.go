package e2e

// Cluster mode end to end: three `cohort serve` processes on a
// three-member etcd (Debian's etcd-server, separate processes), with
// real clients.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
)

// clusterLeaseTTL is the nodes' lease TTL in these tests: etcd's minimum,
// so that a dead node's shards move quickly.
const clusterLeaseTTL = 2 * time.Second

// testCluster is a cluster of cohort processes on an etcd cluster.
type testCluster struct {
	t     *testing.T
	etcd  *etcdtest.Cluster
	mu    sync.Mutex
	nodes map[int32]*testkit.Proc
	dirs  map[int32]string
	// via holds the etcd endpoints of nodes that reach etcd some other
	// way (through proxies); the others use the members' own.
	via   map[int32][]string
	extra []string
}

// startCluster starts an etcd cluster of etcdMembers processes and n
// cohort nodes (ids 1..n) on it, and waits until every shard is served.
func startCluster(t *testing.T, etcdMembers, n int, extra ...string) *testCluster {
	t.Helper()
	return startClusterOn(t, etcdtest.StartProcs(t, etcdMembers), n, nil, extra...)
}

// startClusterOn starts n cohort nodes on ec, node id reaching etcd at
// via[id] if set.
func startClusterOn(t *testing.T, ec *etcdtest.Cluster, n int, via map[int32][]string, extra ...string) *testCluster {
	t.Helper()
	c := &testCluster{t: t, etcd: ec, nodes: map[int32]*testkit.Proc{}, dirs: map[int32]string{}, via: via, extra: extra}
	var wg sync.WaitGroup
	for id := range int32(n) {
		c.dirs[id+1] = filepath.Join(t.TempDir(), fmt.Sprintf("node-%d", id+1))
	}
	for id := range int32(n) {
		wg.Go(func() { c.start(id + 1) })
	}
	wg.Wait()
	c.waitServing()
	return c
}

// start runs node id on its data directory (again, if it ran before).
func (c *testCluster) start(id int32) *testkit.Proc {
	c.t.Helper()
	endpoints := c.etcd.Endpoints()
	if v, ok := c.via[id]; ok {
		endpoints = v
	}
	if _, ok := c.dirs[id]; !ok {
		c.dirs[id] = filepath.Join(c.t.TempDir(), fmt.Sprintf("node-%d", id))
	}
	var again []string
	if old := c.node(id); old != nil {
		// Started again on its Kafka port, as a real deployment's node
		// keeps its address: clients' bootstrap lists stay good.
		again = []string{"--kafka-listen", old.Addr}
	}
	args := append([]string{
		"--etcd-endpoints", strings.Join(endpoints, ","),
		"--node-id", strconv.Itoa(int(id)),
		"--cluster-lease-ttl", clusterLeaseTTL.String(),
		"--group-initial-rebalance-delay", "200ms",
		"--group-initial-rebalance-quiet", "50ms",
		"--group-min-session-timeout", "100ms",
		"--group-consumer-heartbeat-interval", "200ms",
		"--group-consumer-assignment-interval", "0s",
	}, c.extra...)
	p := testkit.StartBinary(c.t, c.dirs[id], append(args, again...)...)
	c.mu.Lock()
	c.nodes[id] = p
	c.mu.Unlock()
	return p
}

// node returns node id's process.
func (c *testCluster) node(id int32) *testkit.Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// live returns the ids of the nodes running, ascending.
func (c *testCluster) live() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int32
	for id, p := range c.nodes {
		if !p.Exited() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// seeds returns the Kafka addresses of the running nodes, first (except)
// the given ones last.
func (c *testCluster) seeds(last ...int32) []string {
	var out, tail []string
	for _, id := range c.live() {
		if slices.Contains(last, id) {
			tail = append(tail, c.node(id).Addr)
		} else {
			out = append(out, c.node(id).Addr)
		}
	}
	return append(out, tail...)
}

// admin returns a kadm client of the running nodes, closed at the end.
func (c *testCluster) admin() *kadm.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ClientID("cohort-e2e-cluster"))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// waitServing waits until every running node's /readyz says it serves
// every shard it holds, and Metadata from each lists exactly the running
// nodes.
func (c *testCluster) waitServing() {
	c.t.Helper()
	groupEventually(c.t, 30*time.Second, "every node serving and listed by every node", func() (bool, string) {
		live := c.live()
		for _, id := range live {
			if code, body := httpGet(c.t, "http://"+c.node(id).HTTPAddr+"/readyz"); code != 200 {
				return false, fmt.Sprintf("node %d /readyz: %d %s", id, code, body)
			}
			brokers, err := metadataBrokers(c.node(id).Addr)
			if err != nil || !slices.Equal(brokers, live) {
				return false, fmt.Sprintf("node %d lists brokers %v (err %v), running %v", id, brokers, err, live)
			}
		}
		return true, ""
	})
}

// metadataBrokers asks one node for Metadata and returns the broker ids.
func metadataBrokers(addr string) ([]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// coordinatorOf returns the node FindCoordinator names for group.
func (c *testCluster) coordinatorOf(adm *kadm.Client, group string) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resps := adm.FindGroupCoordinators(ctx, group)
	r, ok := resps[group]
	if !ok {
		return -1, fmt.Errorf("no answer for %s", group)
	}
	if r.Err != nil {
		return -1, r.Err
	}
	return r.NodeID, nil
}

// groupOn returns a group name, starting with prefix, that node id
// coordinates.
func (c *testCluster) groupOn(adm *kadm.Client, prefix string, id int32) string {
	c.t.Helper()
	for i := range 1000 {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if n, err := c.coordinatorOf(adm, g); err == nil && n == id {
			return g
		}
	}
	c.t.Fatalf("no group %s-* coordinated by node %d", prefix, id)
	return ""
}

// createTopicOn creates a topic whose partitions are led by the given
// nodes, round robin (CreateTopics with a replica assignment of one
// replica each).
func (c *testCluster) createTopicOn(topic string, partitions int32, nodes ...int32) {
	c.t.Helper()
	c.createTopicAs(func(id int32) string { return c.node(id).Addr }, nil, topic, partitions, nodes...)
}

// createTopicAs is createTopicOn as the client of opts, which reaches
// node id at addr(id): another listener's, another organisation's.
func (c *testCluster) createTopicAs(addr func(int32) string, opts []kgo.Opt, topic string, partitions int32, nodes ...int32) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var seeds []string
	for _, id := range c.live() {
		seeds = append(seeds, addr(id))
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{nodes[int(p)%len(nodes)]}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		c.t.Fatalf("create topic %s: %v (%v)", topic, err, resp.Topics[0].ErrorMessage)
	}
	// Wait until every node knows the leaders.
	groupEventually(c.t, 10*time.Second, "every node knows the topic", func() (bool, string) {
		for _, id := range c.live() {
			leaders, err := partitionLeaders(addr(id), topic, opts...)
			if err != nil || len(leaders) != int(partitions) {
				return false, fmt.Sprintf("node %d: leaders %v, err %v", id, leaders, err)
			}
			for p, l := range leaders {
				if l != nodes[int(p)%len(nodes)] {
					return false, fmt.Sprintf("node %d: partition %d led by %d", id, p, l)
				}
			}
		}
		return true, ""
	})
}

// partitionLeaders asks one node for a topic's leaders (as the client of
// opts).
func partitionLeaders(addr, topic string, opts ...kgo.Opt) (map[int32]int32, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[int32]int32{}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, err
		}
		for _, p := range t.Partitions {
			out[p.Partition] = p.Leader
		}
	}
	return out, nil
}

// rebalancesOn sums cohort_rebalances_total over the given nodes.
func (c *testCluster) rebalancesOn(ids ...int32) int {
	total := 0.0
	for _, id := range ids {
		mfs := scrape(c.t, c.node(id).HTTPAddr)
		if mf := mfs["cohort_rebalances_total"]; mf != nil {
			for _, m := range mf.Metric {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return int(total)
}

// TestClusterKillCoordinatorFranz: franz-go members (classic,
// cooperative-sticky) keep consuming and committing when the node that
// coordinates their group is killed.
func TestClusterKillCoordinatorFranz(t *testing.T) {
	runClusterKillTest(t, "kgo", func(ctx context.Context, c *reloadCheck, m int) func() {
		return reloadFranzMember(ctx, c, m)
	})
}

// TestClusterKillCoordinatorFranz848: the same with the KIP-848
// consumer protocol.
func TestClusterKillCoordinatorFranz848(t *testing.T) {
	runClusterKillTest(t, "kgo848", func(ctx context.Context, c *reloadCheck, m int) func() {
		return reloadFranzMember(ctx, c, m, kgo.ServerSideBalancer())
	})
}

// TestClusterKillCoordinatorConfluent: the same with confluent-kafka-go
// (librdkafka).
func TestClusterKillCoordinatorConfluent(t *testing.T) {
	logs := newRdLog()
	defer logs.close()
	runClusterKillTest(t, "rdkafka", func(ctx context.Context, c *reloadCheck, m int) func() {
		return reloadConfluentMember(ctx, c, m, logs)
	})
}

// TestClusterKillCoordinatorSarama: the same with Sarama.
func TestClusterKillCoordinatorSarama(t *testing.T) {
	runClusterKillTest(t, "sarama", reloadSaramaMember)
}

// runClusterKillTest: a group of three members consumes a topic of six
// partitions led by nodes 1 and 2, coordinated by node 3, committing
// after what it consumes, while a producer keeps adding records. Node 3
// is killed (SIGKILL): the group's shard moves to node 1 or 2 once node
// 3's lease expires. Then every commit acknowledged before the kill is
// in the committed offsets, every member commits again, every record is
// consumed, the committed offsets reach the ends, and the new
// coordinator started at most one rebalance besides those of members
// whose clients ended their sessions on their own.
//
// As Kafka's coordinator loading a group after a failover, the new
// coordinator keeps the group's members and their generation, each
// with a session timeout from the load: a member that heartbeats it in
// time goes on without a rebalance. But franz-go ends a classic member's
// session itself (OnPartitionsLost) when a heartbeat fails for good
// without an answer, and its heartbeat's coordinator lookup fails for
// good when it dials the dead node (here, the last seed broker); the
// member then rejoins with nothing owned, which rebalances at any Kafka
// coordinator. Each member may do so, at its own moment: up to three
// rebalances, none of them the server's doing (measured under load: 0
// members ending their session gave 0 rebalances, 1 to 3 members 1 to 3
// rebalances). A session the new coordinator ends (UNKNOWN_MEMBER_ID)
// excuses nothing (reloadCheck.ended).
func runClusterKillTest(t *testing.T, client string, start reloadMemberFunc) {
	t0 := time.Now()
	since := func() time.Duration { return time.Since(t0).Round(time.Millisecond) }
	tc := startCluster(t, 3, 3)
	t.Logf("%v: cluster up", since())
	adm := tc.admin()
	const victim = 3
	c := &reloadCheck{
		t: t, client: client, seeds: tc.seeds(victim), adm: adm,
		topic: "kill-" + client, nodeDies: true,
		want: map[[2]int64]bool{}, ends: map[int32]int64{}, seen: map[[2]int64]bool{},
		acked: map[int32]int64{}, coordErr: map[string]int{},
	}
	for m := range c.owned {
		c.owned[m] = map[int32]bool{}
	}
	c.group = tc.groupOn(adm, "kill-group-"+client, victim)
	tc.createTopicOn(c.topic, reloadPartitions, 1, 2)
	c.produce("before", 600)
	stopTrickle := c.trickle()
	defer stopTrickle()

	stopAll := c.startMembers(start)
	defer func() {
		stopAll()
		c.reportProblems()
	}()
	c.waitSettled()
	c.setSettled()
	t.Logf("%v: settled: %s", since(), c.ownedString())

	c.mu.Lock()
	acked, acks := maps.Clone(c.acked), c.acks
	c.mu.Unlock()
	killed := time.Now()
	tc.node(victim).Kill()
	groupEventually(t, reloadWait, "every member committing again after the kill", func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		ok := true
		for m := range acks {
			ok = ok && c.acks[m] > acks[m]
		}
		return ok, fmt.Sprintf("acknowledged commits per member %v, at the kill %v", c.acks, acks)
	})
	t.Logf("%v: every member committing again %v after the kill (lease TTL %v)", since(), time.Since(killed).Round(time.Millisecond), clusterLeaseTTL)
	newCoord, err := tc.coordinatorOf(adm, c.group)
	if err != nil || newCoord == victim {
		t.Fatalf("the group's coordinator after the kill: %d, %v", newCoord, err)
	}
	committed := c.committed()
	for p, o := range acked {
		if committed[p] < o {
			t.Errorf("partition %d committed at %d after the failover; a commit of %d was acknowledged before the kill", p, committed[p], o)
		}
	}

	stopTrickle()
	c.produce("after", 300)
	c.waitConsumed()
	c.waitCommittedEnds()
	t.Logf("%v: every record consumed, committed offsets at the ends", since())
	rebalances := tc.rebalancesOn(1, 2)
	byMember := tc.rebalancesBy(c, newCoord)
	stopAll()
	c.report(rebalances)
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	others := 0
	for _, r := range byMember {
		// A member whose client ended its own session rejoined as a new
		// member, and its old member id then expires: both are its
		// client's doing (seen: joined, expired, and another member's
		// cooperative second round). A member that did not end its
		// session and expires is the coordinator's fault (a load that
		// did not keep the sessions) and counts.
		if r.member < 0 || !ended[r.member] {
			others += 1 + r.restarts
		}
	}
	t.Logf("rebalances at the new coordinator (node %d): %+v; members whose client ended its session: %v", newCoord, byMember, ended)
	if others > 1 {
		t.Errorf("the new coordinator started %d rebalances of the group after the failover not caused by a member whose client ended its session (%+v, ended %v); want at most 1", others, byMember, ended)
	}
}

// causedRebalance is a rebalance at a coordinator: which member caused
// it (-1: none of the check's) and how.
type causedRebalance struct {
	cause    string
	member   int
	restarts int
}

// rebalancesBy returns the rebalances of c's group that node id's
// timeline holds (GET /api/v1/groups/{group}/timeline).
func (tc *testCluster) rebalancesBy(c *reloadCheck, id int32) []causedRebalance {
	tc.t.Helper()
	code, body := httpGet(tc.t, "http://"+tc.node(id).HTTPAddr+"/api/v1/groups/"+c.group+"/timeline")
	if code != 200 {
		tc.t.Fatalf("node %d timeline of %s: %d %s", id, c.group, code, body)
	}
	var tl struct {
		Rebalances []struct {
			Cause    string `json:"cause"`
			MemberID string `json:"member_id"`
			Restarts int    `json:"restarts"`
		} `json:"rebalances"`
	}
	if err := json.Unmarshal([]byte(body), &tl); err != nil {
		tc.t.Fatalf("node %d timeline of %s: %v: %s", id, c.group, err, body)
	}
	var out []causedRebalance
	for _, r := range tl.Rebalances {
		out = append(out, causedRebalance{cause: r.Cause, member: c.memberOf(r.MemberID), restarts: r.Restarts})
	}
	return out
}
