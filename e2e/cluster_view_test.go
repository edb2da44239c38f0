package e2e

// One view of the whole cluster from any node: every node's JSON API
// lists every group of the cluster with its coordinator, every node with
// its state and every partition with whether its leader is alive; a
// group's detail comes from any node; lag is one reading, the same in the
// list, the detail, /metrics (exported by the group's coordinator alone)
// and `cohort groups`, and equal to the true end offsets less the
// committed ones. Then a node is killed with SIGKILL and every survivor's
// view follows.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// apiClusterNode is a node of GET /api/v1/cluster.
type apiClusterNode struct {
	ID       int32  `json:"id"`
	State    string `json:"state"`
	Self     bool   `json:"self"`
	Leader   bool   `json:"leader"`
	AdminURL string `json:"admin_url"`
	Shards   []int  `json:"shards"`
}

// apiGroupList is GET /api/v1/groups in cluster mode.
type apiGroupList struct {
	Groups     []apiGroup       `json:"groups"`
	Nodes      []apiClusterNode `json:"nodes"`
	Partial    bool             `json:"partial"`
	Unanswered []struct {
		Node  int32  `json:"node"`
		Error string `json:"error"`
	} `json:"unanswered"`
}

func TestClusterViewFromAnyNode(t *testing.T) {
	c := startCluster(t, 1, 3, "--lag-sample-interval", "200ms")
	adm := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var spec openAPISpec
	getJSON(t, nil, c.node(1).HTTPAddr, "/api/v1/openapi.json", 200, &spec)

	// Partition p led by node p+1, with 20+p records.
	const topic = "view"
	c.createTopicOn(topic, 3, 1, 2, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(p int32, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for p := range int32(3) {
		produce(p, 20+int(p))
	}
	// A group coordinated by each node, committing partition p at
	// 3*node+p: every group lags on every partition, each by another
	// amount.
	groupOf := map[int32]string{}
	committed := map[string]map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		g := c.groupOn(adm, fmt.Sprintf("view-%d", id), id)
		groupOf[id] = g
		committed[g] = map[int32]int64{}
		offs := kadm.Offsets{}
		for p := range int32(3) {
			at := int64(3*id) + int64(p)
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at})
			committed[g][p] = at
		}
		if resp, err := adm.CommitOffsets(ctx, g, offs); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, resp.Error())
		}
	}
	trueEnds := func() map[int32]int64 {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil || ends.Error() != nil {
			t.Fatalf("end offsets: %v %v", err, ends.Error())
		}
		out := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return out
	}
	ends := trueEnds()
	wantLag := func(g string, ends map[int32]int64) (total int64, parts map[int32]int64) {
		parts = map[int32]int64{}
		for p, at := range committed[g] {
			parts[p] = ends[p] - at
			total += parts[p]
		}
		return total, parts
	}

	// Every node lists every group, with its coordinator and its lag
	// against the true end offsets, and every node serving.
	coordOf := map[string]int32{}
	for id, g := range groupOf {
		coordOf[g] = id
	}
	for _, asked := range []int32{1, 2, 3} {
		groupEventually(t, 30*time.Second, fmt.Sprintf("node %d lists every group with its lag", asked), func() (bool, string) {
			var l apiGroupList
			getJSON(t, &spec, c.node(asked).HTTPAddr, "/api/v1/groups", 200, &l)
			if l.Partial || len(l.Nodes) != 3 {
				return false, fmt.Sprintf("partial %v (%+v), nodes %+v", l.Partial, l.Unanswered, l.Nodes)
			}
			seen := map[string]bool{}
			for _, g := range l.Groups {
				want, ok := coordOf[g.Group]
				if !ok {
					continue
				}
				seen[g.Group] = true
				total, _ := wantLag(g.Group, ends)
				if g.Coordinator == nil || *g.Coordinator != want || g.TotalLag != total || !cgpID.MatchString(g.CgpID) {
					return false, fmt.Sprintf("%s: coordinator %v lag %d id %q, want node %d lag %d", g.Group, g.Coordinator, g.TotalLag, g.CgpID, want, total)
				}
			}
			return len(seen) == 3, fmt.Sprintf("groups seen %v", slices.Sorted(maps.Keys(seen)))
		})
		var cv struct {
			Cluster bool             `json:"cluster"`
			Self    int32            `json:"self"`
			Nodes   []apiClusterNode `json:"nodes"`
			Epoch   int64            `json:"epoch"`
			Moving  *int             `json:"moving"`
		}
		// Settled: nothing moving, every shard held by one node.
		groupEventually(t, 30*time.Second, fmt.Sprintf("node %d says no shard is moving", asked), func() (bool, string) {
			getJSON(t, &spec, c.node(asked).HTTPAddr, "/api/v1/cluster", 200, &cv)
			held := map[int]int32{}
			for _, n := range cv.Nodes {
				for _, sh := range n.Shards {
					if _, dup := held[sh]; dup {
						return false, fmt.Sprintf("shard %d held by nodes %d and %d", sh, held[sh], n.ID)
					}
					held[sh] = n.ID
				}
			}
			return cv.Moving != nil && *cv.Moving == 0 && cv.Epoch > 0 && len(held) > 0, fmt.Sprintf("epoch %d, moving %v, shards held %d", cv.Epoch, cv.Moving, len(held))
		})
		leaders := 0
		for _, n := range cv.Nodes {
			if n.State != "serving" || n.Self != (n.ID == asked) || !strings.HasPrefix(n.AdminURL, "http://127.0.0.1:") {
				t.Errorf("node %d's view of node %d: %+v", asked, n.ID, n)
			}
			if n.Leader {
				leaders++
			}
		}
		if !cv.Cluster || cv.Self != asked || len(cv.Nodes) != 3 || leaders != 1 {
			t.Errorf("node %d: /api/v1/cluster %+v, want 3 serving nodes, one leading", asked, cv)
		}
		// A group's detail from any node: its coordinator's, with the
		// true offsets.
		for _, g := range groupOf {
			var d apiGroupDetail
			getJSON(t, &spec, c.node(asked).HTTPAddr, "/api/v1/groups/"+g, 200, &d)
			total, parts := wantLag(g, ends)
			if d.Coordinator == nil || *d.Coordinator != coordOf[g] || d.TotalLag != total || len(d.Partitions) != 3 {
				t.Fatalf("node %d's detail of %s: coordinator %v lag %d partitions %d, want node %d lag %d", asked, g, d.Coordinator, d.TotalLag, len(d.Partitions), coordOf[g], total)
			}
			for _, pt := range d.Partitions {
				if pt.CommittedOffset != committed[g][pt.Partition] || pt.LogEndOffset != ends[pt.Partition] || pt.Lag == nil || *pt.Lag != parts[pt.Partition] {
					t.Errorf("node %d's detail of %s partition %d: %+v, want committed %d end %d lag %d", asked, g, pt.Partition, pt, committed[g][pt.Partition], ends[pt.Partition], parts[pt.Partition])
				}
			}
		}
		var ts struct {
			Topics []struct {
				Name       string `json:"name"`
				Partitions []struct {
					Partition   int32 `json:"partition"`
					Leader      int32 `json:"leader"`
					LeaderAlive *bool `json:"leader_alive"`
				} `json:"partitions"`
			} `json:"topics"`
		}
		getJSON(t, &spec, c.node(asked).HTTPAddr, "/api/v1/topics", 200, &ts)
		for _, tp := range ts.Topics {
			for _, p := range tp.Partitions {
				if tp.Name == topic && (p.Leader != p.Partition+1 || p.LeaderAlive == nil || !*p.LeaderAlive) {
					t.Errorf("node %d: %s/%d leader %d alive %v, want node %d alive", asked, tp.Name, p.Partition, p.Leader, p.LeaderAlive, p.Partition+1)
				}
			}
		}
	}

	// /metrics: each group's series come from its coordinator alone, and
	// their lag is the true one, so a sum over the cluster counts each
	// group once.
	checkMetrics := func(nodes []int32, coord map[string]int32, ends map[int32]int64) (bool, string) {
		for g := range committed {
			exporters := []int32{}
			lag := 0.0
			for _, id := range nodes {
				mfs := scrape(t, c.node(id).HTTPAddr)
				if sample(mfs, "kafka_consumergroup_members", map[string]string{"consumergroup": g}) >= 0 {
					exporters = append(exporters, id)
				}
				if v := sample(mfs, "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": g, "topic": topic}); v >= 0 {
					lag += v
				}
			}
			total, _ := wantLag(g, ends)
			if !slices.Equal(exporters, []int32{coord[g]}) || lag != float64(total) {
				return false, fmt.Sprintf("%s exported by %v with lag %v, want by node %d alone with lag %d", g, exporters, lag, coord[g], total)
			}
		}
		return true, ""
	}
	groupEventually(t, 30*time.Second, "each group's metrics from its coordinator alone, with the true lag", func() (bool, string) {
		return checkMetrics([]int32{1, 2, 3}, coordOf, ends)
	})

	// While records keep coming, the list and the detail of a group agree
	// whenever they show one reading (one sampled_at).
	g3 := groupOf[3]
	agreed := 0
	for i := 0; agreed < 3 && i < 200; i++ {
		produce(int32(i%3), 1)
		var l apiGroupList
		getJSON(t, nil, c.node(1).HTTPAddr, "/api/v1/groups", 200, &l)
		var d apiGroupDetail
		getJSON(t, nil, c.node(2).HTTPAddr, "/api/v1/groups/"+g3, 200, &d)
		for _, g := range l.Groups {
			if g.Group != g3 || g.SampledAt == nil || d.SampledAt == nil || !g.SampledAt.Equal(*d.SampledAt) {
				continue
			}
			agreed++
			var sum int64
			for _, pt := range d.Partitions {
				if pt.Lag != nil {
					sum += *pt.Lag
				}
			}
			if g.TotalLag != d.TotalLag || sum != d.TotalLag || g.Status != d.Status {
				t.Errorf("%s at %v: list lag %d status %q, detail lag %d (partitions %d) status %q", g3, g.SampledAt, g.TotalLag, g.Status, d.TotalLag, sum, d.Status)
			}
		}
	}
	if agreed < 3 {
		t.Errorf("the list and the detail of %s showed one reading only %d times in 200 tries", g3, agreed)
	}
	ends = trueEnds()

	// `cohort groups` through node 1's admin API: every group's id, and
	// a group coordinated elsewhere with its status and true lag.
	out := cohortCLI(t, "groups", "list", "--brokers", c.node(1).Addr, "--admin-url", "http://"+c.node(1).HTTPAddr, "--format", "json")
	var rows []struct {
		Group       string `json:"group"`
		CgpID       string `json:"cgp_id"`
		Coordinator struct {
			ID int32 `json:"id"`
		} `json:"coordinator"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("groups list: %v: %s", err, out)
	}
	listed := 0
	for _, r := range rows {
		if want, ok := coordOf[r.Group]; ok {
			listed++
			if !cgpID.MatchString(r.CgpID) || r.Coordinator.ID != want {
				t.Errorf("cohort groups list: %+v, want a cgp_ id and coordinator %d", r, want)
			}
		}
	}
	if listed != 3 {
		t.Errorf("cohort groups list: %d of the 3 groups: %s", listed, out)
	}
	groupEventually(t, 30*time.Second, "cohort groups lag shows the true lag and a status for a group node 3 coordinates", func() (bool, string) {
		out := cohortCLI(t, "groups", "lag", g3, "--brokers", c.node(1).Addr, "--admin-url", "http://"+c.node(1).HTTPAddr, "--format", "json")
		var lags []struct {
			TotalLag int64  `json:"total_lag"`
			Status   string `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &lags); err != nil || len(lags) != 1 {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		total, _ := wantLag(g3, ends)
		return lags[0].TotalLag == total && lags[0].Status != "" && lags[0].Status != "UNKNOWN", out
	})

	// Node 3 dies. The survivors say so, serve its group again with its
	// offsets, and mark its partition's leader dead.
	c.node(3).Kill()
	groupEventually(t, 30*time.Second, "node 1 sees node 3 gone and its group moved, offsets kept", func() (bool, string) {
		var l apiGroupList
		getJSON(t, &spec, c.node(1).HTTPAddr, "/api/v1/groups", 200, &l)
		for _, n := range l.Nodes {
			if n.ID == 3 && n.State != "gone" {
				return false, fmt.Sprintf("node 3 is %s", n.State)
			}
		}
		for _, g := range l.Groups {
			if g.Group == g3 {
				if g.Coordinator == nil || *g.Coordinator == 3 {
					return false, fmt.Sprintf("%s coordinated by %v", g3, g.Coordinator)
				}
				coordOf[g3] = *g.Coordinator
				var d apiGroupDetail
				getJSON(t, &spec, c.node(1).HTTPAddr, "/api/v1/groups/"+g3, 200, &d)
				for _, pt := range d.Partitions {
					if pt.CommittedOffset != committed[g3][pt.Partition] {
						return false, fmt.Sprintf("%s partition %d committed %d, want %d", g3, pt.Partition, pt.CommittedOffset, committed[g3][pt.Partition])
					}
				}
				return !l.Partial && len(d.Partitions) == 3, fmt.Sprintf("partial %v %+v", l.Partial, l.Unanswered)
			}
		}
		return false, g3 + " not listed"
	})
	var ts struct {
		Topics []struct {
			Name       string `json:"name"`
			Partitions []struct {
				Partition   int32 `json:"partition"`
				LeaderAlive *bool `json:"leader_alive"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	getJSON(t, &spec, c.node(2).HTTPAddr, "/api/v1/topics", 200, &ts)
	for _, tp := range ts.Topics {
		for _, p := range tp.Partitions {
			if tp.Name == topic && (p.LeaderAlive == nil || *p.LeaderAlive != (p.Partition != 2)) {
				t.Errorf("after the kill, node 2: %s/%d leader alive %v, want %v", topic, p.Partition, p.LeaderAlive, p.Partition != 2)
			}
		}
	}
	// Partition 2's leader is gone: its end offset is the last read, and
	// the groups' metrics still come from one node each.
	groupEventually(t, 30*time.Second, "after the kill, each group's metrics from one survivor", func() (bool, string) {
		var ok bool
		var why string
		for g := range committed {
			exporters := 0
			for _, id := range []int32{1, 2} {
				if sample(scrape(t, c.node(id).HTTPAddr), "kafka_consumergroup_members", map[string]string{"consumergroup": g}) >= 0 {
					exporters++
				}
			}
			if exporters != 1 {
				return false, fmt.Sprintf("%s exported by %d nodes", g, exporters)
			}
			ok = true
		}
		return ok, why
	})
}

// cohortCLI runs the cohort binary with args and returns its stdout; a
// failure or any warning on stderr fails the test.
func cohortCLI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testkit.Binary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("cohort %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}
