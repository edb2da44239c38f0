package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/loadgen"
)

// quietClusterGroups is how many groups BenchmarkQuietGroupsCluster
// creates over its three nodes: 30,000 by default; 300,000 (about
// 100,000 a node) by the flag.
var quietClusterGroups = flag.Int("quiet.cluster.groups", 30000, "BenchmarkQuietGroupsCluster: the number of quiet groups to create over the three nodes")

const (
	// quietClusterLeaseTTL is the nodes' --cluster-lease-ttl: a killed
	// node's shards move this long after its last renewal.
	quietClusterLeaseTTL = 3 * time.Second
	// quietClusterSample is how many of the killed node's groups the
	// failover waits for, spread over all of them.
	quietClusterSample = 200
)

// BenchmarkQuietGroupsCluster (Cohort only; run it with -benchtime=1x) is
// BenchmarkQuietGroups in cluster mode: three `cohort serve --pprof`
// processes (the real binary, each its own process and data directory)
// on a three-member etcd (Debian's etcd-server, separate processes), 16
// coordinator shards, --cluster-lease-ttl 3s. -quiet.cluster.groups
// commit-only groups, each made by one simple OffsetCommit of the 4
// partitions of one topic, sent to the group's coordinator (as
// FindCoordinator names it) over 64 connections to each node, once the
// nodes hold the shards evenly and nothing is moving (a group refused as
// not its node's is looked up and sent again). A node's groups are those
// it coordinates, by FindCoordinator; its heap and RSS include what it
// costs with no group (its etcd client, the cluster view). The lag
// sampler reads every 5 s, as in BenchmarkQuietGroups. Reported:
//
//	commit-s                    committing every group
//	groups/node-min,            the fewest and most groups a node
//	groups/node-max             coordinates
//	heap-B/group, rss-B/group   a node's live heap (after a GC) and RSS
//	                            over the groups it coordinates, the most
//	                            of the three
//
// Then the node coordinating the most groups is killed (SIGKILL), and:
//
//	failover-s                  from the kill until each of 200 of its
//	                            groups (spread over all of them) answers
//	                            an OffsetFetch through the survivors with
//	                            its committed offsets: the lease's expiry
//	                            (3 s), the shards' move, their load from
//	                            etcd
//	heap-after-B/group,         a survivor's live heap and RSS over the
//	rss-after-B/group           groups it coordinates once it holds its
//	                            share of the dead node's shards (every
//	                            shard held, /readyz), the most of the two
//	took-groups                 the most groups a survivor took over
//	took-heap-B/group,          that survivor's growth of live heap and
//	took-rss-B/group            RSS over the groups it took
//
// Per offset figures are the per group ones over 4.
func BenchmarkQuietGroupsCluster(b *testing.B) {
	n := *quietClusterGroups
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for b.Loop() {
		ec := etcdtest.StartProcs(b, 3)
		var procs []*testkit.Proc
		for id := range 3 {
			procs = append(procs, testkit.StartBinary(b, b.TempDir(), "--pprof", "--lag-sample-interval", "5s",
				"--etcd-endpoints", strings.Join(ec.Endpoints(), ","), "--node-id", strconv.Itoa(id),
				"--cluster-lease-ttl", quietClusterLeaseTTL.String()))
		}
		defer logNodeWarnings(b, procs)
		waitClusterHeld(b, procs)
		seeds := make([]string, len(procs))
		for i, p := range procs {
			seeds[i] = p.Addr
		}
		createTopics(ctx, b, seeds[0], int32(quietPartitions), "quiet")
		waitTopicEverywhere(b, seeds, "quiet")
		waitClusterHeld(b, procs) // the topic's partitions are units too

		groups := make([]string, n)
		for i := range groups {
			groups[i] = fmt.Sprintf("quiet-%07d", i)
		}
		start := time.Now()
		commitRouted(ctx, b, procs, groups)
		b.ReportMetric(time.Since(start).Seconds(), "commit-s")

		// Per node: groups (by FindCoordinator, again: a shard that moved
		// during the load counts where it is now), live heap, RSS.
		coords := groupCoordinators(ctx, b, seeds, groups)
		count := countBy(coords)
		heap, rss := make([]int64, len(procs)), make([]int64, len(procs))
		var counts []int
		var heapPer, rssPer []float64
		victim := 0
		for i, p := range procs {
			c := count[p.Addr]
			if c == 0 {
				b.Fatalf("node %d coordinates no group", i)
			}
			heap[i], rss[i] = liveHeap(b, p.HTTPAddr), rssOf(b, p.Pid())
			counts = append(counts, c)
			heapPer = append(heapPer, float64(heap[i])/float64(c))
			rssPer = append(rssPer, float64(rss[i])/float64(c))
			if c > count[procs[victim].Addr] {
				victim = i
			}
			b.Logf("node %d: %d groups, live heap %d MB, RSS %d MB", i, c, heap[i]>>20, rss[i]>>20)
		}
		if total := count[procs[0].Addr] + count[procs[1].Addr] + count[procs[2].Addr]; total != n {
			b.Fatalf("the nodes coordinate %d groups between them, want %d (%v)", total, n, count)
		}
		b.ReportMetric(float64(slices.Min(counts)), "groups/node-min")
		b.ReportMetric(float64(slices.Max(counts)), "groups/node-max")
		b.ReportMetric(slices.Max(heapPer), "heap-B/group")
		b.ReportMetric(slices.Max(rssPer), "rss-B/group")

		// Failover: kill the node with the most groups; wait for a spread
		// sample of its groups to answer through the survivors.
		var victims []string
		for i, a := range coords {
			if a == procs[victim].Addr {
				victims = append(victims, groups[i])
			}
		}
		var sample []string
		for k := range min(quietClusterSample, len(victims)) {
			sample = append(sample, victims[k*len(victims)/min(quietClusterSample, len(victims))])
		}
		var survivors []*testkit.Proc
		var survivorSeeds []string
		for i, p := range procs {
			if i != victim {
				survivors = append(survivors, p)
				survivorSeeds = append(survivorSeeds, p.Addr)
			}
		}
		t0 := time.Now()
		b.Logf("killing node %d (%d groups) at %s", victim, len(victims), t0.UTC().Format(time.RFC3339Nano))
		procs[victim].Kill()
		waitFetched(ctx, b, survivorSeeds, sample, 5*time.Minute)
		b.ReportMetric(time.Since(t0).Seconds(), "failover-s")

		// The survivors once they hold every shard between them.
		waitClusterHeld(b, survivors)
		coords = groupCoordinators(ctx, b, survivorSeeds, groups)
		after := countBy(coords)
		var heapAfter, rssAfter []float64
		took, tookHeap, tookRSS := 0, 0.0, 0.0
		for i, p := range procs {
			if i == victim {
				continue
			}
			c := after[p.Addr]
			h, r := liveHeap(b, p.HTTPAddr), rssOf(b, p.Pid())
			heapAfter = append(heapAfter, float64(h)/float64(c))
			rssAfter = append(rssAfter, float64(r)/float64(c))
			b.Logf("node %d after: %d groups (+%d), live heap %d MB (+%d), RSS %d MB (+%d)",
				i, c, c-count[p.Addr], h>>20, (h-heap[i])>>20, r>>20, (r-rss[i])>>20)
			if t := c - count[p.Addr]; t > took {
				took = t
				tookHeap = float64(h-heap[i]) / float64(t)
				tookRSS = float64(r-rss[i]) / float64(t)
			}
		}
		if total := after[survivors[0].Addr] + after[survivors[1].Addr]; total != n {
			b.Fatalf("the survivors coordinate %d groups between them, want %d (%v)", total, n, after)
		}
		b.ReportMetric(slices.Max(heapAfter), "heap-after-B/group")
		b.ReportMetric(slices.Max(rssAfter), "rss-after-B/group")
		b.ReportMetric(float64(took), "took-groups")
		b.ReportMetric(tookHeap, "took-heap-B/group")
		b.ReportMetric(tookRSS, "took-rss-B/group")
		for _, p := range survivors {
			p.Stop(time.Minute)
		}
	}
}

// commitRouted commits every group once (1+p for partition p of
// "quiet"), each to its coordinator as FindCoordinator names it, over
// quietConns connections to each node. A group whose commit its node
// refuses as not (or not yet) its coordinator's is looked up and
// committed again, in up to 10 rounds.
func commitRouted(ctx context.Context, b *testing.B, procs []*testkit.Proc, groups []string) {
	b.Helper()
	seeds := make([]string, len(procs))
	conns := make([][]*loadgen.Conn, len(procs))
	for i, p := range procs {
		seeds[i] = p.Addr
		c, err := loadgen.DialN(p.Addr, quietConns, "bench-quiet")
		if err != nil {
			b.Fatal(err)
		}
		defer loadgen.CloseAll(c)
		conns[i] = c
	}
	todo := groups
	for round := 0; len(todo) > 0; round++ {
		if round == 10 {
			b.Fatalf("%d groups still not committed after 10 rounds", len(todo))
		}
		if round > 0 {
			b.Logf("commit round %d: %d groups to commit again", round, len(todo))
			time.Sleep(500 * time.Millisecond)
		}
		coords := groupCoordinators(ctx, b, seeds, todo)
		byNode := make([][]string, len(procs))
		for k, a := range coords {
			i := slices.Index(seeds, a)
			if i < 0 {
				b.Fatalf("group %s: coordinator %s is none of the nodes", todo[k], a)
			}
			byNode[i] = append(byNode[i], todo[k])
		}
		again := make([][]string, len(procs))
		if err := loadgen.Parallel(len(procs), len(procs), func(i int) error {
			var err error
			again[i], err = commitRetriable(conns[i], byNode[i])
			if err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		todo = slices.Concat(again...)
	}
}

// commitRetriable commits each group (as commitAll does, one group per
// request over conns) and returns the groups refused as not their
// coordinator's (moved, loading, unavailable), to look up and send
// again; any other error is returned.
func commitRetriable(conns []*loadgen.Conn, groups []string) ([]string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var again []string
	err := loadgen.Parallel(len(conns), len(conns), func(c int) error {
		for i := int(next.Add(1)) - 1; i < len(groups); i = int(next.Add(1)) - 1 {
			req := simpleCommit(groups[i], []string{"quiet"}, int32(quietPartitions), 1)
			resp, err := loadgen.Do[*kmsg.OffsetCommitResponse](conns[c], loadgen.CommitVersion, req)
			if err != nil {
				return fmt.Errorf("group %s: %w", groups[i], err)
			}
			if err := loadgen.CheckCommit(req, resp); err != nil {
				if errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) {
					mu.Lock()
					again = append(again, groups[i])
					mu.Unlock()
					continue
				}
				return fmt.Errorf("group %s: %w", groups[i], err)
			}
		}
		return nil
	})
	return again, err
}

// groupCoordinators is each group's coordinator's Kafka address, by
// FindCoordinator through seeds, retrying while a shard has no owner.
func groupCoordinators(ctx context.Context, b *testing.B, seeds, groups []string) []string {
	b.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := loadgen.Coordinators(ctx, seeds, groups)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// countBy counts the occurrences of each string.
func countBy(s []string) map[string]int {
	m := map[string]int{}
	for _, v := range s {
		m[v]++
	}
	return m
}

// waitFetched waits, up to within, until every group answers an
// OffsetFetch through seeds with the offsets BenchmarkQuietGroupsCluster
// committed (1+p for partition p of "quiet"). Each round is a new client,
// so that no coordinator it cached from the last round is asked again.
func waitFetched(ctx context.Context, b *testing.B, seeds, groups []string, within time.Duration) {
	b.Helper()
	deadline := time.Now().Add(within)
	todo := slices.Clone(groups)
	var last error
	for len(todo) > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d groups not served within %v (last: %v)", len(todo), len(groups), within, last)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(time.Second), kgo.RequestRetries(1))
		if err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		res := kadm.NewClient(cl).FetchManyOffsets(rctx, todo...)
		cancel()
		cl.Close()
		var left []string
		for _, g := range todo {
			r, ok := res[g]
			switch {
			case !ok:
				last = fmt.Errorf("group %s: no answer", g)
			case r.Err != nil:
				last = fmt.Errorf("group %s: %w", g, r.Err)
			case !quietOffsetsOK(r.Fetched):
				last = fmt.Errorf("group %s: fetched %v", g, r.Fetched)
			default:
				continue
			}
			left = append(left, g)
		}
		todo = left
		if len(todo) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// quietOffsetsOK reports whether o holds the offsets a quiet group
// committed: 1+p for each partition p of "quiet".
func quietOffsetsOK(o kadm.OffsetResponses) bool {
	if len(o["quiet"]) != quietPartitions {
		return false
	}
	for p := range int32(quietPartitions) {
		r, ok := o.Lookup("quiet", p)
		if !ok || r.Err != nil || r.At != 1+int64(p) {
			return false
		}
	}
	return true
}

// waitClusterHeld waits until procs hold every coordinator shard between
// them, each its even share (give or take one), each holding what the
// last assignment gives it, nothing moving (every node's
// /api/v1/cluster says moving 0 at one epoch), and each says /readyz.
func waitClusterHeld(b *testing.B, procs []*testkit.Proc) {
	b.Helper()
	testkit.Eventually(b, 5*time.Minute, "every shard held, evenly, nothing moving", func() bool {
		held := map[int]bool{}
		epochs := map[int64]bool{}
		total := 0
		for _, p := range procs {
			var node struct {
				ShardsTotal int   `json:"shards_total"`
				ShardsHeld  []int `json:"shards_held"`
			}
			if !getJSON("http://"+p.HTTPAddr+"/api/v1/node", &node) {
				return false
			}
			var cl struct {
				Epoch  int64 `json:"epoch"`
				Moving int   `json:"moving"`
				Nodes  []struct {
					Self   bool  `json:"self"`
					Shards []int `json:"shards"`
				} `json:"nodes"`
			}
			if !getJSON("http://"+p.HTTPAddr+"/api/v1/cluster", &cl) || cl.Moving != 0 {
				return false
			}
			epochs[cl.Epoch] = true
			for _, nd := range cl.Nodes {
				if nd.Self && !sameSet(nd.Shards, node.ShardsHeld) {
					return false
				}
			}
			// With the assigner's unit (shards+1 units), a node's share
			// is (shards+1)/nodes or one less.
			if len(node.ShardsHeld) < (node.ShardsTotal+1)/len(procs)-1 {
				return false
			}
			for _, s := range node.ShardsHeld {
				held[s] = true
			}
			total = node.ShardsTotal
			resp, err := http.Get("http://" + p.HTTPAddr + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return false
			}
		}
		return total > 0 && len(held) == total && len(epochs) == 1
	})
}

// getJSON GETs url into v, reporting whether it could.
func getJSON(url string, v any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(v) == nil
}

// sameSet reports whether a and b hold the same ints.
func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// logNodeWarnings logs how many WARN and ERROR lines each node wrote,
// and the first few.
func logNodeWarnings(b *testing.B, procs []*testkit.Proc) {
	for i, p := range procs {
		var bad []string
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				bad = append(bad, line)
			}
		}
		if len(bad) > 0 {
			b.Logf("node %d: %d WARN/ERROR log lines, the first: \n%s", i, len(bad), strings.Join(bad[:min(5, len(bad))], "\n"))
		}
	}
}
