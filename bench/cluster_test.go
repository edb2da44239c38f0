package bench

// Cluster mode benchmarks: durable offset commits on three nodes over a
// three-member etcd (Debian's etcd-server, separate processes, all on
// this machine) beside a single node on Pebble; the time from killing
// (or stopping) a coordinator to the first acknowledged commit of each of
// its groups; the time to load a shard of 1,000,000 offsets from etcd.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/loadgen"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/store/etcd"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterTarget is three in-process nodes on a three-member etcd; start
// returns one node's address, and route each group's coordinator.
func clusterTarget(name string) groupTarget {
	return groupTarget{name: name, cohort: true, start: func(b *testing.B) string {
		ec := etcdtest.StartProcs(b, 3)
		var nodes []*node.Node
		for id := int32(1); id <= 3; id++ {
			nodes = append(nodes, testkit.StartNode(b, node.Config{Cluster: &node.ClusterConfig{
				EtcdEndpoints: ec.Endpoints(), NodeID: id, LeaseTTL: 6 * time.Second,
			}}))
		}
		waitBalanced(b, nodes)
		return nodes[0].KafkaAddr()
	}, routed: true}
}

// waitBalanced waits until the nodes serve the coordinator's shards
// between them, evenly, none of them loading.
func waitBalanced(b *testing.B, nodes []*node.Node) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		total, ok := 0, true
		shards := nodes[0].Coordinator().Shards()
		for _, n := range nodes {
			held := len(n.Coordinator().Held())
			total += held
			a := n.Member().Assignment()
			// With the assigner's unit, a node's coordinator shards are
			// its share of shards+1 units, or one less.
			ok = ok && held >= (shards+1)/len(nodes)-1 && n.Coordinator().Ready() == nil && len(a.Owner) == shards+1
			for u := range a.Next {
				ok = ok && a.Next[u] == cluster.None
			}
		}
		if ok && total == shards {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the cluster's shards were not balanced within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAllServed waits until every coordinator shard answers: a commit for
// a group of each shard is acknowledged by its coordinator.
func waitAllServed(b *testing.B, addr string, shards int) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil && len(resp.Brokers) == 3 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("the cluster did not list three brokers within 60s")
}

// waitTopicEverywhere waits until every node in addrs has topic in its
// catalog (another node's topic reaches it through etcd).
func waitTopicEverywhere(b *testing.B, addrs []string, topic string) {
	b.Helper()
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			continue
		}
		seen[a] = true
		c, err := loadgen.Dial(a, "bench-wait")
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := loadgen.Do[*kmsg.MetadataResponse](c, 12, req)
			if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s does not know topic %s after 30s (%v)", a, topic, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		c.Close()
	}
}

// coordinatorAddrs asks addr for each group's coordinator, retrying
// while a shard has no owner yet.
func coordinatorAddrs(b *testing.B, addr string, groups []string) []string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := loadgen.Coordinators(ctx, []string{addr}, groups)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkClusterCommit: BenchmarkCommit's simple commits of 10
// partitions each, at 64 and 1,000 committers (one group and one
// connection each, to the group's coordinator), on a single node (Pebble)
// and on three nodes over a three-member etcd.
func BenchmarkClusterCommit(b *testing.B) {
	for _, committers := range []int{64, 1000} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			for _, tg := range []groupTarget{cohortTarget("single", coordinator.Config{}), clusterTarget("cluster-3")} {
				b.Run(tg.name, func(b *testing.B) { benchCommit(b, tg, committers) })
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Failover

// BenchmarkClusterFailover: three `cohort serve` processes on a
// three-member etcd, eight groups on the shards of node 3, each with a
// prober committing every few milliseconds. Node 3 is killed (SIGKILL)
// or stopped (SIGTERM: it hands its shards off warm first); reported is
// the time from the signal to each group's first acknowledged commit
// afterwards: the longest (max-ms) and the median (p50-ms) over the
// groups. The lease TTL is 2 s.
func BenchmarkClusterFailover(b *testing.B) {
	for _, how := range []string{"kill", "sigterm"} {
		b.Run(how, func(b *testing.B) {
			var worst, medians []float64
			for range b.N {
				w, m := failoverOnce(b, how)
				worst, medians = append(worst, w), append(medians, m)
			}
			b.ReportMetric(slices.Max(worst), "max-ms")
			slices.Sort(medians)
			b.ReportMetric(medians[len(medians)/2], "p50-ms")
		})
	}
}

func failoverOnce(b *testing.B, how string) (worst, median float64) {
	b.StopTimer()
	ec := etcdtest.StartProcs(b, 3)
	procs := map[int32]*testkit.Proc{}
	for id := int32(1); id <= 3; id++ {
		procs[id] = testkit.StartBinary(b, b.TempDir(),
			"--etcd-endpoints", strings.Join(ec.Endpoints(), ","), "--node-id", strconv.Itoa(int(id)),
			"--cluster-lease-ttl", "2s")
	}
	seeds := []string{procs[1].Addr, procs[2].Addr, procs[3].Addr}
	waitAllServed(b, seeds[0], 16)
	createTopics(context.Background(), b, seeds[0], 1, "failover")
	waitTopicEverywhere(b, seeds, "failover")
	// Groups coordinated by node 3.
	var groups []string
	for i := 0; len(groups) < 8 && i < 10000; i += 50 {
		var batch []string
		for k := range 50 {
			batch = append(batch, fmt.Sprintf("failover-%d", i+k))
		}
		for k, a := range coordinatorAddrs(b, seeds[0], batch) {
			if a == procs[3].Addr && len(groups) < 8 {
				groups = append(groups, batch[k])
			}
		}
	}
	var probers []*testkit.CommitProbe
	for _, g := range groups {
		p := testkit.StartCommitProbe(b, seeds[:2], g, "failover", 2*time.Millisecond)
		defer p.Close()
		probers = append(probers, p)
	}
	for _, p := range probers {
		if _, ok := p.FirstAckAfter(time.Now(), time.Minute); !ok {
			b.Fatalf("group %s never committed", p.Group)
		}
	}
	b.StartTimer()
	t0 := time.Now()
	if how == "kill" {
		procs[3].Kill()
	} else {
		procs[3].Signal(syscall.SIGTERM)
	}
	var took []float64
	for _, p := range probers {
		at, ok := p.FirstAckAfter(t0, time.Minute)
		if !ok {
			b.Fatalf("group %s: no commit acknowledged within 60s of the %s", p.Group, how)
		}
		took = append(took, float64(at.Sub(t0).Microseconds())/1000)
	}
	b.StopTimer()
	slices.Sort(took)
	return took[len(took)-1], took[len(took)/2]
}

// BenchmarkClusterLoadShard: a shard holding 1,000,000 committed offsets
// (1,000 groups of 1,000 partitions, written through the coordinator) on
// a three-member etcd is loaded by a coordinator on a new store, as a
// node taking the shard over after a failover does (nothing cached).
// Reported: the load's seconds and offsets/s.
func BenchmarkClusterLoadShard(b *testing.B) {
	const groups, partitions = 1000, 1000
	ec := etcdtest.StartProcs(b, 3)
	cli := etcdtest.NewClient(b, ec.Endpoints())
	open := func() (*etcd.Store, *coordinator.Coordinator) {
		st, err := etcd.Open(etcd.Options{Client: cli, Prefix: "/bench-load"})
		if err != nil {
			b.Fatal(err)
		}
		co, err := coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: st, Standby: true})
		if err != nil {
			b.Fatal(err)
		}
		return st, co
	}
	st, co := open()
	if err := co.Load(0); err != nil {
		b.Fatal(err)
	}
	if err := loadgen.Parallel(groups, 16, func(g int) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = loadgen.CommitVersion
		req.Group, req.Generation = fmt.Sprintf("load-%d", g), -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		for p := range int32(partitions) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, int64(g)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := co.Handle(context.Background(), coordinator.Request{Msg: req})().(*kmsg.OffsetCommitResponse)
		return loadgen.CheckCommit(req, resp)
	}); err != nil {
		b.Fatal(err)
	}
	co.Close()
	st.Close()
	b.ResetTimer()
	for range b.N {
		st, co := open()
		t0 := time.Now()
		if err := co.Load(0); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		b.ReportMetric(took.Seconds(), "load-s")
		b.ReportMetric(float64(groups*partitions)/took.Seconds(), "offsets/s")
		co.Close()
		st.Close()
	}
}
