package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe/timeline"
)

// TestShareGroupViews: a share group on a real node, its share-partition
// state made through the node's share coordinator as ShareFetch and
// ShareAcknowledge make it, shows in the JSON API's list and detail (its
// members, each partition's members, start offset, lag and records in
// flight by state), in /metrics and in the rebalance timeline.
func TestShareGroupViews(t *testing.T) {
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0", LagSampleInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "jobs"); err != nil || r.Err != nil {
		t.Fatalf("create jobs: %v %v", err, r.Err)
	}
	// Ten records on partition 0, four on 1, one a batch.
	for p, count := range []int{10, 4} {
		for i := range count {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Partition: int32(p), Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	shareJoin(t, n.Coordinator(), "workers", "m1", "jobs")

	td, err := adm.ListTopics(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	h := n.ShareCoordinator()
	key := sharestate.Key{Group: "workers", TopicID: td["jobs"].ID, Partition: 0}
	fetch := func(max int) {
		t.Helper()
		next := h.Next(ctx, sharestate.NextCmd{Key: key, Log: sharestate.Log{Latest: 10, AtTime: -1}, Reset: sharestate.ResetEarliest})
		if next.Code != 0 {
			t.Fatalf("next: %v", kerr.ErrorForCode(next.Code))
		}
		var batches []sharestate.Range
		for o := next.Offset; o < 10; o++ {
			batches = append(batches, sharestate.Range{First: o, Last: o})
		}
		if a := h.Acquire(ctx, sharestate.AcquireCmd{Key: key, Member: "m1", FetchOffset: next.Offset, Batches: batches, MaxRecords: max}); a.Code != 0 {
			t.Fatalf("acquire: %v", kerr.ErrorForCode(a.Code))
		}
	}
	ack := func(first, last int64, typ sharestate.AckType) {
		t.Helper()
		if r := h.Ack(ctx, sharestate.AckCmd{Key: key, Member: "m1", Acks: []sharestate.Ack{{First: first, Last: last, Types: []sharestate.AckType{typ}}}}); r.Code != 0 {
			t.Fatalf("ack %d-%d: %v", first, last, kerr.ErrorForCode(r.Code))
		}
	}
	// 0-5 delivered; 0-1 accepted and 2 rejected (the start moves to 3),
	// 3 released, 5 accepted; then 3 delivered again with 6 and 7, and 7
	// rejected. In flight from 3 to 8: 3 (its second delivery), 4 and 6
	// acquired, 5 acknowledged, 7 archived.
	fetch(6)
	ack(0, 1, sharestate.AckAccept)
	ack(2, 2, sharestate.AckReject)
	ack(3, 3, sharestate.AckRelease)
	ack(5, 5, sharestate.AckAccept)
	fetch(3)
	ack(7, 7, sharestate.AckReject)
	want := admin.SharePartition{StartOffset: 3, EndOffset: 8, ShareCounts: admin.ShareCounts{
		InFlight: 5, Acquired: 3, Acknowledged: 1, Archived: 1, Redelivered: 1}}
	// KIP-1226: the high watermark (10) less the start (3) less the
	// records done in flight (5 and 7).
	const wantLag = 5

	// The list, from the sampler's reading.
	var row admin.GroupSummary
	testkit.Eventually(t, 10*time.Second, "the share group's lag in the list", func() bool {
		var list struct{ Groups []admin.GroupSummary }
		getJSON(t, n.HTTPAddr(), "/api/v1/groups", &list)
		for _, g := range list.Groups {
			if g.Group == "workers" {
				row = g
			}
		}
		return row.TotalLag == wantLag
	})
	if row.Type != "share" || row.ProtocolType != "share" || row.State != "Stable" || row.Members != 1 || row.Share == nil || *row.Share != want.ShareCounts {
		t.Errorf("listed: %+v (share %+v), want a Stable share group of 1 member, in flight %+v", row, row.Share, want.ShareCounts)
	}

	// The detail, read now.
	var d admin.GroupDetail
	getJSON(t, n.HTTPAddr(), "/api/v1/groups/workers", &d)
	if d.Balancer != "simple" || d.Epoch == nil || d.AssignmentEpoch == nil || *d.Epoch != *d.AssignmentEpoch || len(d.MemberList) != 1 {
		t.Fatalf("detail: %+v", d)
	}
	if m := d.MemberList[0]; m.MemberID != "m1" || m.MemberEpoch == nil || len(m.Assignment) != 1 || !slices.Equal(m.Assignment[0].Partitions, []int32{0, 1}) {
		t.Errorf("member %+v", m)
	}
	if len(d.Partitions) != 2 {
		t.Fatalf("partitions %+v", d.Partitions)
	}
	p0, p1 := d.Partitions[0], d.Partitions[1]
	if p0.Share == nil || p0.Share.StartOffset != want.StartOffset || p0.Share.EndOffset != want.EndOffset || p0.Share.ShareCounts != want.ShareCounts ||
		p0.Lag == nil || *p0.Lag != wantLag || !slices.Equal(p0.MemberIDs, []string{"m1"}) || p0.MemberID != "" || p0.CommittedOffset != -1 || p0.LogEndOffset != 10 {
		t.Errorf("partition 0: %+v (share %+v)", p0, p0.Share)
	}
	// Never fetched: no state, no lag; its member all the same.
	if p1.Share != nil || p1.Lag != nil || !slices.Equal(p1.MemberIDs, []string{"m1"}) || p1.LogEndOffset != 4 {
		t.Errorf("partition 1: %+v", p1)
	}

	// The timeline: the member's join, a rebalance of protocol share.
	var tl struct{ Rebalances []timeline.Rebalance }
	getJSON(t, n.HTTPAddr(), "/api/v1/groups/workers/timeline", &tl)
	if len(tl.Rebalances) == 0 || tl.Rebalances[0].Protocol != "share" || tl.Rebalances[0].Cause != "member-joined" || tl.Rebalances[0].Members != 1 ||
		len(tl.Rebalances[0].MemberEvents) != 1 || tl.Rebalances[0].MemberEvents[0].MemberID != "m1" {
		t.Errorf("timeline: %+v", tl.Rebalances)
	}

	// /metrics.
	got := scrape(t, n.HTTPAddr())
	for series, v := range map[string]float64{
		`cohort_sharegroup_start_offset{org="default",partition="0",sharegroup="workers",topic="jobs"}`:             3,
		`cohort_sharegroup_lag{org="default",partition="0",sharegroup="workers",topic="jobs"}`:                      wantLag,
		`cohort_sharegroup_lag_sum{org="default",sharegroup="workers",topic="jobs"}`:                                wantLag,
		`cohort_sharegroup_records_in_flight{org="default",sharegroup="workers",state="available",topic="jobs"}`:    0,
		`cohort_sharegroup_records_in_flight{org="default",sharegroup="workers",state="acquired",topic="jobs"}`:     3,
		`cohort_sharegroup_records_in_flight{org="default",sharegroup="workers",state="acknowledged",topic="jobs"}`: 1,
		`cohort_sharegroup_records_in_flight{org="default",sharegroup="workers",state="archived",topic="jobs"}`:     1,
		`cohort_sharegroup_records_redelivered{org="default",sharegroup="workers",topic="jobs"}`:                    1,
		`cohort_groups{org="default",state="Stable",type="share"}`:                                                  1,
		`cohort_rebalances_total{cause="member-joined",type="share"}`:                                               1,
		`cohort_group_member_events_total{event="joined",type="share"}`:                                             1,
	} {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", series, g, ok, v)
		}
	}
}

// shareJoin makes member join share group, subscribed to topic, through
// the coordinator (ShareGroupHeartbeat, KIP-932).
func shareJoin(t *testing.T, co *coordinator.Coordinator, group, member, topic string) {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = group, member, []string{topic}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, ok := co.Handle(ctx, coordinator.Request{Msg: req, ClientID: "test"})().(*kmsg.ShareGroupHeartbeatResponse)
	if !ok {
		t.Fatalf("share join: unexpected answer %+v", resp)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("share join: %v", err)
	}
}

// scrape reads the node's /metrics as an operator: every series, by its
// name and labels in Prometheus' text form.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get((&url.URL{Scheme: "http", Host: addr, Path: "/metrics"}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			slices.Sort(ls)
			v := m.GetGauge().GetValue()
			if c := m.GetCounter(); c != nil {
				v = c.GetValue()
			}
			out[name+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}
