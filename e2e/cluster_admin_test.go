package e2e

// The operator surface in cluster mode: a group's coordinator reports
// its lag for every partition, those other nodes lead included, in
// /metrics and in the JSON API; each partition's topic series comes from
// its leader alone.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestClusterLagAcrossNodes(t *testing.T) {
	c := startCluster(t, 1, 2, "--lag-sample-interval", "200ms")
	adm := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Partition 0 on node 1, partition 1 on node 2; 10 records each.
	c.createTopicOn("spread", 2, 1, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range int32(2) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "spread", Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A group coordinated by node 1 commits 4 and 7.
	group := c.groupOn(adm, "spread-lag", 1)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "spread", Partition: 0, At: 4})
	offs.Add(kadm.Offset{Topic: "spread", Partition: 1, At: 7})
	if resp, err := adm.CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	n1, n2 := c.node(1), c.node(2)
	lagOf := func(p int) float64 {
		return sample(scrape(t, n1.HTTPAddr), "kafka_consumergroup_lag", map[string]string{"consumergroup": group, "topic": "spread", "partition": fmt.Sprint(p)})
	}
	testkit.Eventually(t, 30*time.Second, "node 1 reports the lag of both partitions", func() bool {
		return lagOf(0) == 6 && lagOf(1) == 3
	})
	var d apiGroupDetail
	testkit.Eventually(t, 30*time.Second, "node 1's API shows the lag of both partitions", func() bool {
		d = apiGroupDetail{}
		getJSON(t, nil, n1.HTTPAddr, "/api/v1/groups/"+group, 200, &d)
		return d.TotalLag == 9 && len(d.Partitions) == 2 && d.Partitions[1].Lag != nil && *d.Partitions[1].Lag == 3
	})
	// The group is node 1's alone: node 2 answers for it by asking node
	// 1, and for itself alone (scope=node) does not have it. Each
	// partition's topic series is its leader's alone.
	var via2 apiGroupDetail
	getJSON(t, nil, n2.HTTPAddr, "/api/v1/groups/"+group, 200, &via2)
	if via2.CgpID != d.CgpID || via2.Coordinator == nil || *via2.Coordinator != 1 {
		t.Errorf("node 2's answer for %s: cgp_id %s coordinator %v, want node 1's %s from node 1", group, via2.CgpID, via2.Coordinator, d.CgpID)
	}
	getJSON(t, nil, n2.HTTPAddr, "/api/v1/groups/"+group+"?scope=node", 404, nil)
	for id, p := range map[*testkit.Proc][2]float64{n1: {10, -1}, n2: {-1, 10}} {
		mfs := scrape(t, id.HTTPAddr)
		for part, want := range p {
			if got := sample(mfs, "kafka_topic_partition_current_offset", map[string]string{"topic": "spread", "partition": fmt.Sprint(part)}); got != want {
				t.Errorf("node %s: kafka_topic_partition_current_offset{spread,%d} = %v, want %v", id.Addr, part, got, want)
			}
		}
	}

	// Node 2 dies, and its partition is offline (one copy): node 1 keeps
	// its last end offset, so the group's lag on it stays in the total
	// rather than dropping out as its leader died. 5 more records on
	// partition 0 show a sample made after the kill.
	n2.Kill()
	more := make([]*kgo.Record, 5)
	for i := range more {
		more[i] = &kgo.Record{Topic: "spread", Partition: 0, Value: []byte("after")}
	}
	if err := cl.ProduceSync(ctx, more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "node 1's API shows partition 0's new lag", func() bool {
		d = apiGroupDetail{}
		getJSON(t, nil, n1.HTTPAddr, "/api/v1/groups/"+group, 200, &d)
		return len(d.Partitions) == 2 && d.Partitions[0].Lag != nil && *d.Partitions[0].Lag == 11
	})
	if p1 := d.Partitions[1]; d.TotalLag != 14 || p1.Lag == nil || *p1.Lag != 3 || p1.LogEndOffset != 10 {
		t.Errorf("after node 2's death: total lag %d, partition 1 lag %v end %d; want 14, 3 (its last end, 10)", d.TotalLag, p1.Lag, p1.LogEndOffset)
	}
	if got := lagOf(1); got != 3 {
		t.Errorf("after node 2's death: kafka_consumergroup_lag{spread,1} = %v, want 3", got)
	}
}
