package e2e

// Cluster operations end to end: rolling restarts, a node cut off from
// etcd, an etcd member killed, a node joining. Each keeps a commit probe
// running (commitProbe) and checks that no acknowledged commit is lost;
// the probe's longest gap between two acknowledged commits is logged
// (BENCHMARKS.md holds the measured numbers: timing is never a pass/fail
// condition here).

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
)

// commitProbe is testkit's CommitProbe, committing every 5 ms, with the
// test's waits and checks.
type commitProbe struct {
	*testkit.CommitProbe
	t *testing.T
}

func startCommitProbe(t *testing.T, seeds []string, group, topic string) *commitProbe {
	t.Helper()
	return &commitProbe{testkit.StartCommitProbe(t, seeds, group, topic, 5*time.Millisecond), t}
}

// waitCommits waits until n more commits than now have been acknowledged.
func (p *commitProbe) waitCommits(n int) {
	p.t.Helper()
	want := p.Commits() + n
	groupEventually(p.t, 30*time.Second, fmt.Sprintf("the probe's group %s committing", p.Group), func() (bool, string) {
		_, _, errs := p.Report()
		return p.Commits() >= want, fmt.Sprintf("%d commits, want %d; errors %v", p.Commits(), want, errs)
	})
}

// checkCommitted checks that the probe's group has at least its highest
// acknowledged offset committed, read from any node.
func (p *commitProbe) checkCommitted(tc *testCluster) {
	p.t.Helper()
	acked, _, _ := p.Report()
	adm := tc.admin()
	var got int64 = -1
	groupEventually(p.t, 30*time.Second, "the probe's committed offset readable", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, p.Group)
		if err != nil {
			return false, err.Error()
		}
		o, ok := offs.Lookup(p.Topic, 0)
		if !ok || o.Err != nil {
			return false, fmt.Sprintf("lookup: %v %v", ok, o.Err)
		}
		got = o.At
		return true, ""
	})
	if got < acked {
		p.t.Errorf("group %s committed at %d; a commit of %d was acknowledged", p.Group, got, acked)
	}
}

// shardsOn returns how many shards each running node serves
// (cohort_shards_loaded).
func (c *testCluster) shardsOn() map[int32]int {
	out := map[int32]int{}
	for _, id := range c.live() {
		out[id] = int(sample(scrape(c.t, c.node(id).HTTPAddr), "cohort_shards_loaded", nil))
	}
	return out
}

// loadsOn returns each running node's shard loads so far
// (cohort_shard_events_total{event="loaded"}).
func (c *testCluster) loadsOn() map[int32]int {
	out := map[int32]int{}
	for _, id := range c.live() {
		out[id] = int(sample(scrape(c.t, c.node(id).HTTPAddr), "cohort_shard_events_total", map[string]string{"event": "loaded"}))
	}
	return out
}

// waitBalanced waits until the running nodes serve every shard (units)
// between them, each ⌊units/N⌋ or ⌈units/N⌉.
func (c *testCluster) waitBalanced(units int) map[int32]int {
	c.t.Helper()
	var got map[int32]int
	groupEventually(c.t, 30*time.Second, "shards balanced over the running nodes", func() (bool, string) {
		got = c.shardsOn()
		n := len(got)
		total := 0
		for _, v := range got {
			total += v
			if v < units/n || v > (units+n-1)/n {
				return false, fmt.Sprint(got)
			}
		}
		return total == units, fmt.Sprint(got)
	})
	return got
}

// clusterUnits is the shards a test cluster spreads: 16 coordinator
// shards, the assignment service's, 16 transaction coordinator shards
// and 16 share-state shards (cohort_shards_loaded counts them all).
const clusterUnits = 49

// assignerUnit is the assignment service's unit, after the coordinator
// shards.
const assignerUnit = 16

// TestClusterRollingRestart: every node in turn gets SIGTERM (it hands
// its shards off warm, then leaves) and starts again on its data
// directory, while a group commits; no acknowledged commit is lost, and
// the shards end balanced.
func TestClusterRollingRestart(t *testing.T) {
	tc := startCluster(t, 3, 3)
	adm := tc.admin()
	tc.createTopicOn("probe", 1, 1)
	var probes []*commitProbe
	for id := int32(1); id <= 3; id++ {
		probes = append(probes, startCommitProbe(t, tc.seeds(), tc.groupOn(adm, "rolling", id), "probe"))
	}
	for _, p := range probes {
		p.waitCommits(20)
		p.ResetGap()
	}
	for id := int32(1); id <= 3; id++ {
		t0 := time.Now()
		if code := tc.node(id).Stop(30 * time.Second); code != 0 {
			t.Fatalf("node %d exited %d after SIGTERM", id, code)
		}
		stopped := time.Since(t0)
		tc.start(id)
		tc.waitServing()
		tc.waitBalanced(clusterUnits)
		for _, p := range probes {
			p.waitCommits(20)
		}
		t.Logf("node %d: stopped %v after SIGTERM, back and balanced %v after", id, stopped.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	}
	for i, p := range probes {
		p.checkCommitted(tc)
		acked, gap, errs := p.Report()
		t.Logf("group on node %d at the start: acknowledged up to %d; longest gap between acknowledged commits %v; errors %v", i+1, acked, gap.Round(time.Millisecond), errs)
	}
}

// TestClusterIsolatedNode: a node cut off from etcd (a TCP proxy in front
// of each etcd member stops forwarding) stops serving its shards before
// its lease expires — its registration is still in etcd when it has
// stopped — then the others take them over and no acknowledged commit is
// lost; once it can reach etcd again, it serves shards again.
func TestClusterIsolatedNode(t *testing.T) {
	ec := etcdtest.StartProcs(t, 3)
	proxies := etcdtest.ProxyAll(t, ec.Endpoints())
	tc := startClusterOn(t, ec, 3, map[int32][]string{3: proxies.Endpoints()})
	tc.waitBalanced(clusterUnits)
	adm := tc.admin()
	tc.createTopicOn("probe", 1, 1)
	probe := startCommitProbe(t, tc.seeds(3), tc.groupOn(adm, "isolated", 3), "probe")
	probe.waitCommits(20)
	probe.ResetGap()
	cli := etcdtest.NewClient(t, ec.Endpoints())
	node3 := "/cohort/cluster/nodes/3"

	cut := time.Now()
	proxies.Cut()
	groupEventually(t, 30*time.Second, "the isolated node serving no shard", func() (bool, string) {
		n := int(sample(scrape(t, tc.node(3).HTTPAddr), "cohort_shards_loaded", nil))
		return n == 0, fmt.Sprintf("%d shards loaded", n)
	})
	stopped := time.Since(cut)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	resp, err := cli.Get(ctx, node3)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("the isolated node stopped serving %v after the cut, after its lease had expired (its registration is gone)", stopped)
	}
	// The others take its shards once its lease expires.
	groupEventually(t, 30*time.Second, "nodes 1 and 2 serving every shard", func() (bool, string) {
		got := map[int32]int{}
		for _, id := range []int32{1, 2} {
			got[id] = int(sample(scrape(t, tc.node(id).HTTPAddr), "cohort_shards_loaded", nil))
		}
		return got[1]+got[2] == clusterUnits, fmt.Sprint(got)
	})
	probe.waitCommits(20)
	t.Logf("isolated node stopped serving %v after the cut; shards served by the others %v after the cut", stopped.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond))

	proxies.Heal()
	tc.waitBalanced(clusterUnits)
	probe.waitCommits(20)
	probe.checkCommitted(tc)
	acked, gap, errs := probe.Report()
	t.Logf("probe: acknowledged up to %d; longest gap %v; errors %v", acked, gap.Round(time.Millisecond), errs)
}

// TestClusterEtcdMemberKilled: killing one member of the three-member
// etcd (SIGKILL) changes nothing for clients: no node stops serving a
// shard, commits go on. The nodes run with a 10 s lease: killing etcd's
// leader makes etcd elect another, during which no lease can be renewed
// (nor expire: a new leader extends them all), and on this machine under
// the full suite's load that took up to 5 s. A node rides out an outage
// of 5/8 of its TTL from whenever it begins (cluster.keepAliveTimes):
// 6.25 s of a 10 s lease, 3.75 s of a 6 s one, before it stops serving
// (it must: it cannot tell an election from being cut off).
func TestClusterEtcdMemberKilled(t *testing.T) {
	tc := startCluster(t, 3, 3, "--cluster-lease-ttl", "10s")
	tc.waitBalanced(clusterUnits)
	adm := tc.admin()
	tc.createTopicOn("probe", 1, 1)
	var probes []*commitProbe
	for id := int32(1); id <= 3; id++ {
		p := startCommitProbe(t, tc.seeds(), tc.groupOn(adm, "etcd-kill", id), "probe")
		p.waitCommits(10)
		p.ResetGap()
		probes = append(probes, p)
	}
	unloads := func() map[int32]int {
		out := map[int32]int{}
		for _, id := range tc.live() {
			mfs := scrape(t, tc.node(id).HTTPAddr)
			for _, ev := range []string{"unloaded", "lost"} {
				out[id] += int(max(0, sample(mfs, "cohort_shard_events_total", map[string]string{"event": ev})))
			}
		}
		return out
	}
	before := unloads()
	for i := range 3 {
		tc.etcd.Kill(i)
		for _, p := range probes {
			p.waitCommits(20)
		}
		tc.etcd.Restart(i)
	}
	if after := unloads(); !maps.Equal(before, after) {
		t.Errorf("shards unloaded or lost while etcd members were killed one at a time: before %v, after %v", before, after)
	}
	for i, p := range probes {
		p.checkCommitted(tc)
		acked, gap, errs := p.Report()
		t.Logf("group on node %d: acknowledged up to %d; longest gap %v; errors %v", i+1, acked, gap.Round(time.Millisecond), errs)
	}
}

// TestClusterNodeJoins: a fourth node joining three takes its share, and
// only the minimum number of shards move: with 17 units, 6/6/5 becomes
// 5/4/4/4, so 4 loads happen in all (17 − (5+4+4) kept).
func TestClusterNodeJoins(t *testing.T) {
	tc := startCluster(t, 3, 3)
	shares := tc.waitBalanced(clusterUnits)
	before := tc.loadsOn()
	tc.start(4)
	tc.waitServing()
	after := tc.waitBalanced(clusterUnits)
	moved := 0
	for id, n := range tc.loadsOn() {
		moved += n - before[id]
	}
	var held []int
	for _, n := range shares {
		held = append(held, n)
	}
	slices.Sort(held)
	slices.Reverse(held)
	want := clusterUnits
	for i, h := range held { // the largest holders keep the larger shares
		share := clusterUnits / 4
		if i < clusterUnits%4 {
			share++
		}
		want -= min(h, share)
	}
	t.Logf("shards before %v, after %v; %d loads", shares, after, moved)
	if moved != want {
		t.Errorf("%d shard loads when a fourth node joined, want the minimum %d", moved, want)
	}
}

// TestClusterAssigner: warm-handoff consumers connected to all three
// nodes, the assignment service's shard served by one of them. Calls on
// the others are relayed. The node serving the shard is killed while
// handoffs are in flight: consumers reconnect to other nodes, keep their
// partitions, the handoffs complete after the failover, and at no moment
// is a partition owned by nobody.
func TestClusterAssigner(t *testing.T) {
	tc := startCluster(t, 3, 3, "--assigner-lease-ttl", "20s", "--assigner-rebalance-debounce", "200ms")
	tc.waitBalanced(clusterUnits)
	const topic, partitions = "handoffs", 6
	tc.createTopicOn(topic, partitions, 1, 2, 3)
	// Which node serves the service's shard (unit 16)? The one whose
	// consumers are not relayed: ask its Member through the cluster
	// registry, as FindCoordinator would.
	owner := assignerOwner(t, tc)
	var grpcAddrs []string
	for _, id := range []int32{1, 2, 3} {
		grpcAddrs = append(grpcAddrs, tc.node(id).GRPCAddr)
	}
	// Consumer i starts on node i+1 and reconnects round robin.
	var cs []*akConsumer
	for i := range 3 {
		addrs := append(slices.Clone(grpcAddrs[i:]), grpcAddrs[:i]...)
		cs = append(cs, startAKConsumerOn(t, addrs, true, "ha", fmt.Sprintf("c%d", i), topic, false))
		waitOwnedTotal(t, cs, partitions)
	}
	waitOwned(t, cs, []int{2, 2, 2})
	// A fourth consumer, on the node after the owner, holds its warms:
	// handoffs in flight when the owner dies.
	var addrs []string
	for k := range 3 {
		addrs = append(addrs, tc.node(int32((int(owner)+k)%3+1)).GRPCAddr)
	}
	d := startAKConsumerOn(t, addrs, true, "ha", "d", topic, true)
	d.waitWarming(1)

	stop := make(chan struct{})
	gaps := make(chan string, 1)
	go func() { gaps <- watchOwnership(append(slices.Clone(cs), d), partitions, stop) }()
	killed := time.Now()
	tc.node(owner).Kill()
	// After the failover d is told to warm again (its handoffs were in
	// flight); it says ready, the handoffs complete.
	testkit.Eventually(t, 60*time.Second, "d reconnected and warming again", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.reconnects > 1 && len(d.warming) > 0
	})
	d.allowWarm(topic)
	all := append(slices.Clone(cs), d)
	waitOwnedTotal(t, all, partitions)
	close(stop)
	if g := <-gaps; g != "" {
		var traces []string
		for _, c := range all {
			traces = append(traces, c.traceOf())
		}
		t.Errorf("a partition had no owner: %s; the consumers' traces (killed at %s):\n%s", g, killed.Format("15:04:05.000000"), strings.Join(traces, "\n"))
	}
	t.Logf("the service's shard (node %d) killed; handoffs complete %v later", owner, time.Since(killed).Round(time.Millisecond))
}

// assignerOwner returns the node that serves the assignment service's
// shard, from node 1's etcd view: the cluster's assignment record.
func assignerOwner(t *testing.T, tc *testCluster) int32 {
	t.Helper()
	cli := etcdtest.NewClient(t, tc.etcd.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/cohort/cluster/assignment")
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("read the assignment: %v", err)
	}
	var a struct {
		Owner []int32 `json:"owner"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &a); err != nil || len(a.Owner) != clusterUnits {
		t.Fatalf("assignment %s: %v", resp.Kvs[0].Value, err)
	}
	return a.Owner[assignerUnit]
}

// waitOwnedTotal waits until the consumers own every partition exactly
// once between them, nothing warming, each at most ⌈partitions/N⌉.
func waitOwnedTotal(t *testing.T, cs []*akConsumer, partitions int) {
	t.Helper()
	groupEventually(t, 60*time.Second, "partitions owned once each", func() (bool, string) {
		seen := map[uint32]int{}
		for _, c := range cs {
			owned, warming, err := c.snapshot()
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if warming != 0 || len(owned) > (partitions+len(cs)-1)/len(cs) {
				return false, fmt.Sprintf("%s owns %v, warming %d", c.name, owned, warming)
			}
			for _, p := range owned {
				seen[p]++
			}
		}
		for p := range uint32(partitions) {
			if seen[p] != 1 {
				return false, fmt.Sprintf("partition %d owned %d times", p, seen[p])
			}
		}
		return true, ""
	})
}

// watchOwnership samples what the consumers hold every few milliseconds
// until stop and returns the first moment a partition was held by none
// ("" if never). A consumer holds what it owns and what it has said
// ready for: the service tells an old owner to release a partition only
// once the new one is ready and its owner, so that a partition mid-
// handoff always has a holder, across a failover too.
func watchOwnership(cs []*akConsumer, partitions int, stop <-chan struct{}) string {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			return ""
		case <-time.After(5 * time.Millisecond):
		}
		seen := map[uint32]bool{}
		for _, c := range cs {
			for _, p := range c.holding() {
				seen[p] = true
			}
		}
		for p := range uint32(partitions) {
			if !seen[p] {
				return fmt.Sprintf("partition %d at %s", p, time.Now().Format(time.RFC3339Nano))
			}
		}
	}
	return ""
}

// TestClusterRoutingAndTopicDeletion: a group request sent to a node that
// does not coordinate the group gets NOT_COORDINATOR; deleting a topic on
// one node removes its committed offsets from groups coordinated by every
// node (kadm, as kafka-topics.sh and kafka-consumer-groups.sh would see).
func TestClusterRoutingAndTopicDeletion(t *testing.T) {
	tc := startCluster(t, 3, 3)
	tc.waitBalanced(clusterUnits)
	adm := tc.admin()
	tc.createTopicOn("doomed", 2, 1, 2)
	tc.createTopicOn("kept", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// One group per node; each commits both topics through kadm.
	groups := map[int32]string{}
	for id := int32(1); id <= 3; id++ {
		g := tc.groupOn(adm, "routing", id)
		groups[id] = g
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "doomed", Partition: 0, At: 5})
		offs.Add(kadm.Offset{Topic: "doomed", Partition: 1, At: 6})
		offs.Add(kadm.Offset{Topic: "kept", Partition: 0, At: 7})
		resp, err := adm.CommitOffsets(ctx, g, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit for %s: %v", g, err)
		}
	}

	// A commit to a node that does not coordinate the group.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = groups[1], -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "kept"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 8
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(2))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("OffsetCommit for a group of node 1 sent to node 2: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}

	// Delete the topic (kadm sends it to the controller, whichever node
	// leads); every group loses its offsets of it, wherever it is
	// coordinated, and keeps the others.
	dres, err := adm.DeleteTopics(ctx, "doomed")
	if err == nil {
		_, err = dres.On("doomed", nil)
	}
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	for id, g := range groups {
		groupEventually(t, 30*time.Second, fmt.Sprintf("group %s (node %d) without offsets of the deleted topic", g, id), func() (bool, string) {
			offs, err := adm.FetchOffsets(ctx, g)
			if err != nil {
				return false, err.Error()
			}
			_, doomed := offs["doomed"]
			kept, ok := offs.Lookup("kept", 0)
			return !doomed && ok && kept.At == 7, fmt.Sprint(offs)
		})
	}
}
