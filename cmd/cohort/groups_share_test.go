package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/record"
)

// nodeShareAdmin is a fake of the share offset APIs (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets: keys 90–92, which the
// node does not serve yet) over the node's share coordinator, as the wire
// layer will call it: the commands each names, topics by id, the lag of
// KIP-1226 against the high watermark, and Kafka's NON_EMPTY_GROUP for a
// change to a group with members. ShareGroupDescribe is the node's own.
type nodeShareAdmin struct {
	adm *kadm.Client
	n   *node.Node
}

func (f nodeShareAdmin) DescribeShareGroups(ctx context.Context, groups ...string) (kadm.DescribedShareGroups, error) {
	return f.adm.DescribeShareGroups(ctx, groups...)
}

// topics maps the node's topic ids to their names.
func (f nodeShareAdmin) topics(ctx context.Context) (map[[16]byte]string, error) {
	ts, err := f.adm.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[[16]byte]string{}
	for name, td := range ts {
		out[td.ID] = name
	}
	return out, nil
}

func (f nodeShareAdmin) DescribeShareGroupOffsets(ctx context.Context, groups ...string) (kadm.DescribedShareGroupsOffsets, error) {
	names, err := f.topics(ctx)
	if err != nil {
		return nil, err
	}
	out := kadm.DescribedShareGroupsOffsets{}
	for _, g := range groups {
		d := kadm.DescribedShareGroupOffsets{Group: g, Offsets: kadm.ShareOffsets{}}
		for _, desc := range f.n.ShareCoordinator().Describe(ctx, sharestate.DescribeCmd{Group: g}) {
			topic := names[desc.Key.TopicID]
			ends, err := f.adm.ListEndOffsets(ctx, topic)
			if err != nil {
				return nil, err
			}
			end, _ := ends.Lookup(topic, desc.Key.Partition)
			done := int64(0)
			for _, r := range desc.Runs {
				if r.State == record.ShareAcknowledged || r.State == record.ShareArchived {
					done += r.Last - r.First + 1
				}
			}
			if d.Offsets[topic] == nil {
				d.Offsets[topic] = map[int32]kadm.ShareOffset{}
			}
			d.Offsets[topic][desc.Key.Partition] = kadm.ShareOffset{Topic: topic, TopicID: desc.Key.TopicID, Partition: desc.Key.Partition,
				StartOffset: desc.StartOffset, LeaderEpoch: end.LeaderEpoch, Lag: max(0, end.Offset-desc.StartOffset-done)}
		}
		out[g] = d
	}
	return out, nil
}

// empty refuses a change to a group with members, as Kafka.
func (f nodeShareAdmin) empty(ctx context.Context, group string) error {
	ds, err := f.adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return err
	}
	if len(ds[group].Members) > 0 {
		return kerr.NonEmptyGroup
	}
	return nil
}

func (f nodeShareAdmin) key(ctx context.Context, group, topic string, p int32) (sharestate.Key, error) {
	ts, err := f.adm.ListTopics(ctx, topic)
	if err != nil {
		return sharestate.Key{}, err
	}
	return sharestate.Key{Group: group, TopicID: ts[topic].ID, Partition: p}, nil
}

func (f nodeShareAdmin) AlterShareGroupOffsets(ctx context.Context, group string, offsets kadm.Offsets) (kadm.AlterShareGroupOffsetsResponses, error) {
	if err := f.empty(ctx, group); err != nil {
		return nil, err
	}
	out := kadm.AlterShareGroupOffsetsResponses{}
	var err error
	offsets.Each(func(o kadm.Offset) {
		k, kerr := f.key(ctx, group, o.Topic, o.Partition)
		if kerr != nil {
			err = kerr
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]error{}
		}
		r := f.n.ShareCoordinator().Alter(ctx, sharestate.AlterCmd{Key: k, StartOffset: o.At})
		out[o.Topic][o.Partition] = errForCode(r.Code)
	})
	return out, err
}

func (f nodeShareAdmin) DeleteShareGroupOffsets(ctx context.Context, group string, topics ...string) (kadm.DeleteShareGroupOffsetsResponses, error) {
	if err := f.empty(ctx, group); err != nil {
		return nil, err
	}
	names, err := f.topics(ctx)
	if err != nil {
		return nil, err
	}
	out := kadm.DeleteShareGroupOffsetsResponses{}
	for _, t := range topics {
		out[t] = nil
	}
	for _, d := range f.n.ShareCoordinator().Describe(ctx, sharestate.DescribeCmd{Group: group}) {
		if t := names[d.Key.TopicID]; slices.Contains(topics, t) {
			if r := f.n.ShareCoordinator().Delete(ctx, sharestate.DeleteCmd{Key: d.Key}); r.Code != 0 {
				out[t] = errForCode(r.Code)
			}
		}
	}
	return out, nil
}

func errForCode(code int16) error { return kerr.ErrorForCode(code) }

// shareHeartbeat sends member's ShareGroupHeartbeat at epoch (0 joins,
// subscribed to topic; -1 leaves) through the coordinator.
func shareHeartbeat(t *testing.T, co *coordinator.Coordinator, group, member, topic string, epoch int32) {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{topic}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	resp, ok := co.Handle(ctx, coordinator.Request{Msg: req, ClientID: "cli-share", ClientHost: "/127.0.0.1"})().(*kmsg.ShareGroupHeartbeatResponse)
	if !ok || resp.ErrorCode != 0 {
		t.Fatalf("share heartbeat of %s at %d: %+v", member, epoch, resp)
	}
}

// TestGroupsShareCLI: `cohort groups` on a share group (KIP-932): list,
// describe with kafka-share-groups.sh's columns and its --members and
// --state, lag, the node's records in flight with --admin-url (and its
// start offsets where the broker has no DescribeShareGroupOffsets), seek
// and delete-offsets refused while the group has a member and done once
// it is empty. The share offset APIs (90–92) are nodeShareAdmin's until
// the node serves them.
func TestGroupsShareCLI(t *testing.T) {
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0", LagSampleInterval: 20 * time.Millisecond})
	adminURL := "http://" + n.HTTPAddr()
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
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
	for p, count := range []int{10, 4} {
		for i := range count {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Partition: int32(p), Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	shareHeartbeat(t, n.Coordinator(), "workers", "m1", "jobs", 0)

	// Partition 0's state as in admin's TestShareGroupViews: start 3,
	// in flight to 8, 3 acquired (one of them a redelivery), 1
	// acknowledged, 1 archived; lag 10 - 3 - 2.
	td, err := adm.ListTopics(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	h := n.ShareCoordinator()
	key := sharestate.Key{Group: "workers", TopicID: td["jobs"].ID, Partition: 0}
	fetch := func(max int) {
		next := h.Next(ctx, sharestate.NextCmd{Key: key, Log: sharestate.Log{Latest: 10, AtTime: -1}, Reset: sharestate.ResetEarliest})
		var batches []sharestate.Range
		for o := next.Offset; o < 10; o++ {
			batches = append(batches, sharestate.Range{First: o, Last: o})
		}
		if a := h.Acquire(ctx, sharestate.AcquireCmd{Key: key, Member: "m1", FetchOffset: next.Offset, Batches: batches, MaxRecords: max}); next.Code != 0 || a.Code != 0 {
			t.Fatalf("fetch: %d %d", next.Code, a.Code)
		}
	}
	ack := func(first, last int64, typ sharestate.AckType) {
		if r := h.Ack(ctx, sharestate.AckCmd{Key: key, Member: "m1", Acks: []sharestate.Ack{{First: first, Last: last, Types: []sharestate.AckType{typ}}}}); r.Code != 0 {
			t.Fatalf("ack %d-%d: %d", first, last, r.Code)
		}
	}
	fetch(6)
	ack(0, 1, sharestate.AckAccept)
	ack(2, 2, sharestate.AckReject)
	ack(3, 3, sharestate.AckRelease)
	ack(5, 5, sharestate.AckAccept)
	fetch(3)
	ack(7, 7, sharestate.AckReject)

	saved := shareAdminOf
	t.Cleanup(func() { shareAdminOf = saved })
	shareAdminOf = func(e *groupsEnv) shareAdmin { return nodeShareAdmin{e.client(), n} }

	b := []string{"--brokers", n.KafkaAddr()}
	cli := func(args ...string) []string { return append(append([]string{"groups"}, args...), b...) }
	text := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errOut := cliRun(cli(args...)...)
		if code != 0 {
			t.Fatalf("cohort groups %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	// hasRow reports whether out has a line of these cells, two or more
	// spaces apart (a table's row).
	hasRow := func(out string, cells ...string) bool {
		for i := range cells {
			cells[i] = regexp.QuoteMeta(cells[i])
		}
		return regexp.MustCompile(`(?m)^` + strings.Join(cells, `\s{2,}`) + `\s*$`).MatchString(out)
	}

	t.Run("list", func(t *testing.T) {
		var gs []listedGroup
		cliJSON(t, &gs, cli("list", "--type", "share")...)
		if len(gs) != 1 || gs[0].Group != "workers" || gs[0].Type != "share" || gs[0].State != "Stable" {
			t.Fatalf("list --type share = %+v", gs)
		}
	})

	t.Run("describe", func(t *testing.T) {
		var gs []describedGroup
		cliJSON(t, &gs, cli("describe", "workers")...)
		g := gs[0]
		if g.Type != "share" || g.ProtocolType != "share" || g.State != "Stable" || g.Balancer != "simple" || g.Epoch == nil ||
			len(g.Members) != 1 || g.Members[0].MemberID != "m1" || g.Members[0].ClientID != "cli-share" || g.TotalLag != 5 || g.Error != "" {
			t.Fatalf("describe workers = %+v", g)
		}
		if len(g.Partitions) != 2 {
			t.Fatalf("partitions %+v", g.Partitions)
		}
		p0, p1 := g.Partitions[0], g.Partitions[1]
		if *p0.StartOffset != 3 || p0.Lag != 5 || p0.LeaderEpoch == nil || *p0.LeaderEpoch != 0 || !slices.Equal(p0.MemberIDs, []string{"m1"}) ||
			p0.CurrentOffset != -1 || p0.LogEndOffset != 10 || p0.Share != nil {
			t.Errorf("partition 0: %+v", p0)
		}
		// Assigned, never fetched: no start offset, no lag.
		if *p1.StartOffset != -1 || p1.Lag != -1 || !slices.Equal(p1.MemberIDs, []string{"m1"}) || p1.LogEndOffset != 4 {
			t.Errorf("partition 1: %+v", p1)
		}

		out := text(t, "describe", "workers")
		for _, row := range [][]string{
			{"TYPE", "share"}, {"BALANCER", "simple"}, {"TOTAL-LAG", "5"},
			{"CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"}, {"m1", "/127.0.0.1", "cli-share", "2", "jobs:0,1"},
			{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}, {"workers", "jobs", "0", "3", "5"}, {"workers", "jobs", "1", "-", "-"},
		} {
			if !hasRow(out, row...) {
				t.Errorf("describe: no row %q in\n%s", row, out)
			}
		}
		out = text(t, "describe", "workers", "--verbose")
		if !hasRow(out, "GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG") || !hasRow(out, "workers", "jobs", "0", "0", "3", "5") {
			t.Errorf("describe --verbose:\n%s", out)
		}

		out = text(t, "describe", "workers", "--members")
		if !hasRow(out, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT") || !hasRow(out, "workers", "m1", "/127.0.0.1", "cli-share", "2", "jobs:0,1") {
			t.Errorf("describe --members:\n%s", out)
		}
		out = text(t, "describe", "workers", "--members", "--verbose")
		if !hasRow(out, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT") ||
			!hasRow(out, "workers", "m1", "/127.0.0.1", "cli-share", "2", fmt.Sprint(*g.Members[0].MemberEpoch), "jobs:0,1") {
			t.Errorf("describe --members --verbose:\n%s", out)
		}
		coord := fmt.Sprintf("%s  (%d)", n.KafkaAddr(), g.Coordinator.ID)
		out = text(t, "describe", "workers", "--state")
		if !hasRow(out, "GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS") || !strings.Contains(out, coord) || !strings.Contains(out, "Stable") {
			t.Errorf("describe --state:\n%s", out)
		}
		out = text(t, "describe", "workers", "--state", "--verbose")
		if !hasRow(out, "GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS") {
			t.Errorf("describe --state --verbose:\n%s", out)
		}
	})

	t.Run("admin-url", func(t *testing.T) {
		// The node's records in flight; its lag agrees with the broker's.
		var gs []describedGroup
		testkit.Eventually(t, cliWait, "the node's sample of workers", func() bool {
			cliJSON(t, &gs, cli("describe", "workers", "--admin-url", adminURL)...)
			return gs[0].CgpID != "" && gs[0].Partitions[0].Share != nil
		})
		want := shareCounts{InFlight: 5, Acquired: 3, Acknowledged: 1, Archived: 1, Redelivered: 1}
		if p0 := gs[0].Partitions[0]; *p0.Share != want || p0.Lag != 5 || *p0.StartOffset != 3 {
			t.Errorf("partition 0 with the node's state: %+v %+v", p0, p0.Share)
		}
		out := text(t, "describe", "workers", "--admin-url", adminURL)
		if !hasRow(out, "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG", "IN-FLIGHT", "ACQUIRED", "ARCHIVED", "STATUS") {
			t.Errorf("describe --admin-url:\n%s", out)
		}
		if !regexp.MustCompile(`(?m)^workers\s+jobs\s+0\s+3\s+5\s+5\s+3\s+1\s+\S+\s*$`).MatchString(out) {
			t.Errorf("describe --admin-url: no row of partition 0 in\n%s", out)
		}

		// The real client: where the broker has no
		// DescribeShareGroupOffsets, the node's start offsets and lag.
		shareAdminOf = saved
		defer func() { shareAdminOf = func(e *groupsEnv) shareAdmin { return nodeShareAdmin{e.client(), n} } }()
		cliJSON(t, &gs, cli("describe", "workers", "--admin-url", adminURL)...)
		if p0 := gs[0].Partitions[0]; *p0.StartOffset != 3 || p0.Lag != 5 || gs[0].TotalLag != 5 {
			t.Errorf("partition 0 from the node alone: %+v (group error %q)", p0, gs[0].Error)
		}
	})

	t.Run("lag", func(t *testing.T) {
		var ls []groupLag
		cliJSON(t, &ls, cli("lag", "workers")...)
		if len(ls) != 1 || ls[0].Type != "share" || ls[0].TotalLag != 5 || len(ls[0].Partitions) != 2 {
			t.Fatalf("lag = %+v", ls)
		}
		out := text(t, "lag", "workers")
		if !hasRow(out, "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG") || !hasRow(out, "workers", "jobs", "0", "3", "5") ||
			!hasRow(out, "workers", "Stable", "5") || strings.Contains(out, "CURRENT-OFFSET") {
			t.Errorf("lag:\n%s", out)
		}
	})

	t.Run("refused-with-members", func(t *testing.T) {
		code, _, errOut := cliRun(cli("seek", "workers", "--to", "end")...)
		if code != 1 || !strings.Contains(errOut, `group "workers" is Stable with 1 members`) {
			t.Errorf("seek with a member: exit %d: %s", code, errOut)
		}
		code, _, errOut = cliRun(cli("delete-offsets", "workers", "--topic", "jobs")...)
		if code != 1 || !strings.Contains(errOut, "NON_EMPTY_GROUP") {
			t.Errorf("delete-offsets with a member: exit %d: %s", code, errOut)
		}
	})

	shareHeartbeat(t, n.Coordinator(), "workers", "m1", "jobs", -1)

	t.Run("seek", func(t *testing.T) {
		var plan seekResult
		cliJSON(t, &plan, cli("seek", "workers", "--to", "8", "--dry-run")...)
		if len(plan.Partitions) != 1 || plan.Partitions[0] != (seekRow{Topic: "jobs", Partition: 0, CurrentOffset: 3, NewOffset: 8}) {
			t.Fatalf("seek --dry-run (the partitions with a start offset) = %+v", plan)
		}
		var res seekResult
		cliJSON(t, &res, cli("seek", "workers", "--to", "end", "--topics", "jobs")...)
		want := []seekRow{{Topic: "jobs", Partition: 0, CurrentOffset: 3, NewOffset: 10}, {Topic: "jobs", Partition: 1, CurrentOffset: -1, NewOffset: 4}}
		if !slices.Equal(res.Partitions, want) {
			t.Fatalf("seek --to end = %+v, want %+v", res.Partitions, want)
		}
		// The share coordinator's state moved: new epochs, nothing in
		// flight.
		var gs []describedGroup
		cliJSON(t, &gs, cli("describe", "workers")...)
		if g := gs[0]; g.State != "Empty" || len(g.Partitions) != 2 || *g.Partitions[0].StartOffset != 10 || *g.Partitions[1].StartOffset != 4 || g.TotalLag != 0 {
			t.Fatalf("after the seek: %+v", g)
		}
	})

	t.Run("delete-offsets", func(t *testing.T) {
		code, _, errOut := cliRun(cli("delete-offsets", "workers", "--topic", "jobs:0")...)
		if code != 2 || !strings.Contains(errOut, "deleted by whole topics") {
			t.Errorf("delete-offsets of a partition: exit %d: %s", code, errOut)
		}
		var res []shareOffsetResult
		cliJSON(t, &res, cli("delete-offsets", "workers", "--topic", "jobs")...)
		if len(res) != 1 || res[0] != (shareOffsetResult{Topic: "jobs"}) {
			t.Fatalf("delete-offsets = %+v", res)
		}
		if ds := h.Describe(ctx, sharestate.DescribeCmd{Group: "workers"}); len(ds) != 0 {
			t.Errorf("state left: %+v", ds)
		}
		out := text(t, "describe", "workers")
		if !strings.Contains(out, "Share group 'workers' has no offset information.") || strings.Contains(out, "START-OFFSET") {
			t.Errorf("describe after delete-offsets:\n%s", out)
		}
	})
}
