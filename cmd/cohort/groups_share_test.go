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
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// TestGroupsShareCLI: `cohort groups` on a share group (KIP-932) that a
// franz-go share consumer made, over the node's ShareGroupDescribe and
// share offset APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets): list; describe with kafka-share-groups.sh's
// columns and its --members and --state; lag; the node's records in
// flight with --admin-url; seek and delete-offsets refused while the
// consumer runs, and once it has left, changing what describe shows.
func TestGroupsShareCLI(t *testing.T) {
	// Records held stay acquired for the whole test.
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0", LagSampleInterval: 20 * time.Millisecond,
		ShareState: sharestate.Config{Limits: sharestate.Limits{LockDuration: 10 * time.Minute}}})
	addr, adminURL := n.KafkaAddr(), "http://"+n.HTTPAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "jobs"); err != nil || r.Err != nil {
		t.Fatalf("create jobs: %v %v", err, r.Err)
	}
	// Partition 0: start offset 10, in flight to 16, 4 acquired (one a
	// redelivery), 1 acknowledged, 1 archived; lag 16 - 10 - 2.
	// Partition 1: start offset 4, nothing in flight, lag 0.
	c := testkit.ShareInFlight(ctx, t, addr, "workers", "jobs", "cli-share")

	b := []string{"--brokers", addr}
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
		q := make([]string, len(cells))
		for i, c := range cells {
			q[i] = regexp.QuoteMeta(c)
		}
		return regexp.MustCompile(`(?m)^` + strings.Join(q, `\s{2,}`) + `\s*$`).MatchString(out)
	}
	describe := func(t *testing.T, args ...string) describedGroup {
		t.Helper()
		var gs []describedGroup
		cliJSON(t, &gs, cli(append([]string{"describe", "workers"}, args...)...)...)
		if len(gs) != 1 {
			t.Fatalf("describe workers = %+v", gs)
		}
		return gs[0]
	}
	// The released record taken again.
	want := shareCounts{InFlight: 6, Acquired: 4, Acknowledged: 1, Archived: 1, Redelivered: 1}
	testkit.Eventually(t, cliWait, "the released record acquired again", func() bool {
		p0 := describe(t, "--admin-url", adminURL).Partitions[0]
		return p0.Share != nil && *p0.Share == want
	})

	t.Run("list", func(t *testing.T) {
		var gs []listedGroup
		cliJSON(t, &gs, cli("list", "--type", "share")...)
		if len(gs) != 1 || gs[0].Group != "workers" || gs[0].Type != "share" || gs[0].State != "Stable" {
			t.Fatalf("list --type share = %+v", gs)
		}
		if out := text(t, "list", "--type", "share"); !regexp.MustCompile(`(?m)^workers\s+\d+ \S+\s+Stable\s+share\s+share\s*$`).MatchString(out) {
			t.Errorf("list --type share:\n%s", out)
		}
	})

	t.Run("describe", func(t *testing.T) {
		g := describe(t)
		if g.Type != "share" || g.ProtocolType != "share" || g.State != "Stable" || g.Balancer != "simple" || g.Epoch == nil ||
			len(g.Members) != 1 || g.Members[0].ClientID != "cli-share" || g.Members[0].Host != "/127.0.0.1" || g.TotalLag != 4 || g.Error != "" {
			t.Fatalf("describe workers = %+v", g)
		}
		if len(g.Partitions) != 2 {
			t.Fatalf("partitions %+v", g.Partitions)
		}
		m := g.Members[0]
		p0, p1 := g.Partitions[0], g.Partitions[1]
		if *p0.StartOffset != 10 || p0.Lag != 4 || p0.LeaderEpoch == nil || *p0.LeaderEpoch != 0 || !slices.Equal(p0.MemberIDs, []string{m.MemberID}) ||
			p0.CurrentOffset != -1 || p0.LogStartOffset != 0 || p0.LogEndOffset != 16 || p0.Share != nil || p0.Error != "" {
			t.Errorf("partition 0: %+v", p0)
		}
		if *p1.StartOffset != 4 || p1.Lag != 0 || !slices.Equal(p1.MemberIDs, []string{m.MemberID}) || p1.LogEndOffset != 4 || p1.Error != "" {
			t.Errorf("partition 1: %+v", p1)
		}

		// kafka-share-groups.sh --describe's columns (Kafka 4.2's
		// ShareGroupCommand), the members' above them.
		out := text(t, "describe", "workers")
		for _, row := range [][]string{
			{"TYPE", "share"}, {"BALANCER", "simple"}, {"TOTAL-LAG", "4"},
			{"CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"}, {m.MemberID, "/127.0.0.1", "cli-share", "2", "jobs:0,1"},
			{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}, {"workers", "jobs", "0", "10", "4"}, {"workers", "jobs", "1", "4", "0"},
		} {
			if !hasRow(out, row...) {
				t.Errorf("describe: no row %q in\n%s", row, out)
			}
		}
		out = text(t, "describe", "workers", "--verbose")
		if !hasRow(out, "GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG") || !hasRow(out, "workers", "jobs", "0", "0", "10", "4") {
			t.Errorf("describe --verbose:\n%s", out)
		}

		out = text(t, "describe", "workers", "--members")
		if !hasRow(out, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT") || !hasRow(out, "workers", m.MemberID, "/127.0.0.1", "cli-share", "2", "jobs:0,1") {
			t.Errorf("describe --members:\n%s", out)
		}
		out = text(t, "describe", "workers", "--members", "--verbose")
		if !hasRow(out, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT") ||
			!hasRow(out, "workers", m.MemberID, "/127.0.0.1", "cli-share", "2", fmt.Sprint(*m.MemberEpoch), "jobs:0,1") {
			t.Errorf("describe --members --verbose:\n%s", out)
		}
		out = text(t, "describe", "workers", "--state")
		if !hasRow(out, "GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS") ||
			!hasRow(out, "workers", fmt.Sprintf("%s  (%d)", addr, g.Coordinator.ID), "Stable", "1") {
			t.Errorf("describe --state:\n%s", out)
		}
		out = text(t, "describe", "workers", "--state", "--verbose")
		if !hasRow(out, "GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS") ||
			!hasRow(out, "workers", fmt.Sprintf("%s  (%d)", addr, g.Coordinator.ID), "Stable", fmt.Sprint(*g.Epoch), fmt.Sprint(*g.AssignmentEpoch), "1") {
			t.Errorf("describe --state --verbose:\n%s", out)
		}
	})

	t.Run("admin-url", func(t *testing.T) {
		// The node's records in flight, beside the broker's start
		// offsets and lag.
		g := describe(t, "--admin-url", adminURL)
		if g.CgpID == "" || g.TotalLag != 4 {
			t.Errorf("with the node's view: %+v", g)
		}
		if p0 := g.Partitions[0]; p0.Share == nil || *p0.Share != want || p0.Lag != 4 || *p0.StartOffset != 10 {
			t.Errorf("partition 0 with the node's state: %+v %+v", p0, p0.Share)
		}
		if p1 := g.Partitions[1]; p1.Share == nil || *p1.Share != (shareCounts{}) || p1.Lag != 0 || *p1.StartOffset != 4 {
			t.Errorf("partition 1 with the node's state: %+v %+v", p1, p1.Share)
		}
		out := text(t, "describe", "workers", "--admin-url", adminURL)
		if !hasRow(out, "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG", "IN-FLIGHT", "ACQUIRED", "ARCHIVED", "STATUS") {
			t.Errorf("describe --admin-url:\n%s", out)
		}
		for _, row := range []string{`workers\s+jobs\s+0\s+10\s+4\s+6\s+4\s+1\s+\S+`, `workers\s+jobs\s+1\s+4\s+0\s+0\s+0\s+0\s+\S+`} {
			if !regexp.MustCompile(`(?m)^` + row + `\s*$`).MatchString(out) {
				t.Errorf("describe --admin-url: no row %s in\n%s", row, out)
			}
		}
	})

	t.Run("lag", func(t *testing.T) {
		var ls []groupLag
		cliJSON(t, &ls, cli("lag", "workers")...)
		if len(ls) != 1 || ls[0].Type != "share" || ls[0].TotalLag != 4 || len(ls[0].Partitions) != 2 {
			t.Fatalf("lag = %+v", ls)
		}
		out := text(t, "lag", "workers")
		if !hasRow(out, "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG") || !hasRow(out, "workers", "jobs", "0", "10", "4") ||
			!hasRow(out, "workers", "jobs", "1", "4", "0") || !hasRow(out, "workers", "Stable", "4") || strings.Contains(out, "CURRENT-OFFSET") {
			t.Errorf("lag:\n%s", out)
		}
	})

	t.Run("refused-with-members", func(t *testing.T) {
		code, _, errOut := cliRun(cli("seek", "workers", "--to", "end")...)
		if code != 1 || !strings.Contains(errOut, `group "workers" is Stable with 1 members`) {
			t.Errorf("seek with a member: exit %d: %s", code, errOut)
		}
		// The node's answer: Kafka refuses a share group with members.
		code, _, errOut = cliRun(cli("delete-offsets", "workers", "--topic", "jobs")...)
		if code != 1 || !strings.Contains(errOut, "NON_EMPTY_GROUP") {
			t.Errorf("delete-offsets with a member: exit %d: %s", code, errOut)
		}
		if g := describe(t); *g.Partitions[0].StartOffset != 10 || *g.Partitions[1].StartOffset != 4 {
			t.Errorf("start offsets after the refusals: %+v", g.Partitions)
		}
	})

	c.Close() // leaves the group, releasing what it holds
	testkit.Eventually(t, cliWait, "workers empty", func() bool { return describe(t).State == "Empty" })

	t.Run("seek", func(t *testing.T) {
		var plan seekResult
		cliJSON(t, &plan, cli("seek", "workers", "--to", "8", "--dry-run")...)
		want := []seekRow{{Topic: "jobs", Partition: 0, CurrentOffset: 10, NewOffset: 8}, {Topic: "jobs", Partition: 1, CurrentOffset: 4, NewOffset: 4}}
		if !plan.DryRun || !slices.Equal(plan.Partitions, want) {
			t.Fatalf("seek --dry-run (the partitions with a start offset, the offset within the log) = %+v, want %+v", plan, want)
		}
		if g := describe(t); *g.Partitions[0].StartOffset != 10 {
			t.Fatalf("after the dry run: %+v", g.Partitions[0])
		}
		var res seekResult
		cliJSON(t, &res, cli("seek", "workers", "--to", "3", "--topics", "jobs:0")...)
		if want := []seekRow{{Topic: "jobs", Partition: 0, CurrentOffset: 10, NewOffset: 3}}; !slices.Equal(res.Partitions, want) {
			t.Fatalf("seek --to 3 = %+v, want %+v", res.Partitions, want)
		}
		// Partition 0 starts again at 3, with nothing in flight: all 13
		// records from it are to be delivered; partition 1 is as it was.
		// The records in flight are the node's lag sampler's reading,
		// the next one after the seek.
		var g describedGroup
		testkit.Eventually(t, cliWait, "the seek in the node's reading", func() bool {
			g = describe(t, "--admin-url", adminURL)
			return g.Partitions[0].Share != nil && g.Partitions[0].Share.InFlight == 0
		})
		p0, p1 := g.Partitions[0], g.Partitions[1]
		if g.State != "Empty" || g.TotalLag != 13 || *p0.StartOffset != 3 || p0.Lag != 13 || p0.Share == nil || p0.Share.InFlight != 0 ||
			*p1.StartOffset != 4 || p1.Lag != 0 {
			t.Fatalf("after the seek: %+v, partitions %+v %+v", g, p0, p1)
		}
		if out := text(t, "describe", "workers"); !hasRow(out, "workers", "jobs", "0", "3", "13") || !hasRow(out, "workers", "jobs", "1", "4", "0") {
			t.Errorf("describe after the seek:\n%s", out)
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
		if g := describe(t); len(g.Partitions) != 0 || g.TotalLag != 0 {
			t.Errorf("describe after delete-offsets: %+v", g)
		}
		out := text(t, "describe", "workers")
		if !strings.Contains(out, "Share group 'workers' has no offset information.") || strings.Contains(out, "START-OFFSET") {
			t.Errorf("describe after delete-offsets:\n%s", out)
		}
		// An unknown topic is the node's UNKNOWN_TOPIC_OR_PARTITION.
		code, out, errOut = cliRun(cli("delete-offsets", "workers", "--topic", "no-such-topic")...)
		if code != 1 || !strings.Contains(out, "UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(errOut, "UNKNOWN_TOPIC_OR_PARTITION") {
			t.Errorf("delete-offsets of an unknown topic: exit %d: %s %s", code, out, errOut)
		}
	})
}
