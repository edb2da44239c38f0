package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	cliTopic      = "cli-t"
	cliPartitions = 3
	// cliFirst records per partition are consumed and committed, then
	// cliMore more are produced: the lag of every partition is cliMore.
	cliFirst, cliMore = 10, 5
	cliWait           = 20 * time.Second
	cliInstance       = "cli-static-1"
)

// cliRun runs `cohort args...` as main does and returns its exit code,
// stdout and stderr.
func cliRun(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// cliJSON runs a groups command with --format json, which must succeed,
// and decodes its output into v.
func cliJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	code, out, errOut := cliRun(append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("cohort %v: exit %d: %s", args, code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("cohort %v: decode %q: %v", args, out, err)
	}
}

// cliFixture is a node with one topic, a classic and a KIP-848 group
// that have consumed and committed cliFirst records per partition, and
// cliMore more records per partition produced after the commits. Record
// k of a partition has the timestamp base + k minutes.
type cliFixture struct {
	addr              string
	adminURL          string // the node's admin listener
	base              time.Time
	adm               *kadm.Client
	classic, consumer *kgo.Client
}

func newCLIFixture(t *testing.T) *cliFixture {
	t.Helper()
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0", LagSampleInterval: 50 * time.Millisecond, Groups: coordinator.Config{
		InitialRebalanceDelay:      50 * time.Millisecond,
		InitialRebalanceQuiet:      20 * time.Millisecond,
		ConsumerHeartbeatInterval:  200 * time.Millisecond,
		ConsumerAssignmentInterval: -1,
	}})
	f := &cliFixture{addr: n.KafkaAddr(), adminURL: "http://" + n.HTTPAddr(), base: time.Now().Add(-20 * time.Minute).Truncate(time.Millisecond)}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(cliTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	f.adm = kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	if _, err := f.adm.CreateTopic(ctx, cliPartitions, 1, nil, cliTopic); err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		// One record a request: each is its own batch, so that the
		// by-time lookups below meet record timestamps, not batch ones.
		for k := from; k < to; k++ {
			for p := range int32(cliPartitions) {
				r := &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d", k), Timestamp: f.base.Add(time.Duration(k) * time.Minute)}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatalf("produce: %v", err)
				}
			}
		}
	}
	produce(0, cliFirst)

	consume := func(group string, opts ...kgo.Opt) *kgo.Client {
		c, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(f.addr), kgo.ClientID("cli-" + group), kgo.ConsumerGroup(group), kgo.ConsumeTopics(cliTopic),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(100 * time.Millisecond),
		}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		for got := 0; got < cliFirst*cliPartitions; {
			fs := c.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("group %s consumed %d records: %v", group, got, err)
			}
			got += fs.NumRecords()
		}
		if err := c.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("group %s: commit: %v", group, err)
		}
		return c
	}
	// A static member (KIP-345), so that describe shows INSTANCE-ID.
	f.classic = consume("classic-g", kgo.InstanceID(cliInstance))
	f.consumer = consume("kip848-g", kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
	produce(cliFirst, cliFirst+cliMore)
	return f
}

// committed is the group's committed offsets, by OffsetFetch.
func (f *cliFixture) committed(t *testing.T, group string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	os, err := f.adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
	return out
}

func (f *cliFixture) waitState(t *testing.T, group, state string) {
	t.Helper()
	testkit.Eventually(t, cliWait, group+" reaches "+state, func() bool {
		var gs []describedGroup
		code, out, _ := cliRun("groups", "describe", group, "--brokers", f.addr, "--format", "json")
		return code == 0 && json.Unmarshal([]byte(out), &gs) == nil && gs[0].State == state
	})
}

func allAt(n int64) map[int32]int64 {
	m := map[int32]int64{}
	for p := range int32(cliPartitions) {
		m[p] = n
	}
	return m
}

func TestGroupsCLI(t *testing.T) {
	f := newCLIFixture(t)
	b := []string{"--brokers", f.addr}
	cli := func(args ...string) []string { return append(append([]string{"groups"}, args...), b...) }
	wantTotal := int64(cliMore * cliPartitions)

	t.Run("list", func(t *testing.T) {
		var all []listedGroup
		cliJSON(t, &all, cli("list")...)
		got := map[string]listedGroup{}
		for _, g := range all {
			got[g.Group] = g
		}
		if c, k := got["classic-g"], got["kip848-g"]; len(all) != 2 || c.Type != "classic" || c.State != "Stable" || k.Type != "consumer" || k.State != "Stable" {
			t.Fatalf("list = %+v", all)
		}
		var consumer []listedGroup
		cliJSON(t, &consumer, cli("list", "--type", "consumer")...)
		if len(consumer) != 1 || consumer[0].Group != "kip848-g" {
			t.Errorf("list --type consumer = %+v", consumer)
		}
		var empty []listedGroup
		cliJSON(t, &empty, cli("list", "--state", "empty")...)
		if len(empty) != 0 {
			t.Errorf("list --state empty = %+v", empty)
		}
		code, out, _ := cliRun(cli("list", "--type", "classic")...)
		if code != 0 || !strings.Contains(out, "GROUP") || !strings.Contains(out, "classic-g") || strings.Contains(out, "kip848-g") {
			t.Errorf("list --type classic: exit %d:\n%s", code, out)
		}
	})

	t.Run("describe-classic", func(t *testing.T) {
		var gs []describedGroup
		cliJSON(t, &gs, cli("describe", "classic-g")...)
		g := gs[0]
		member, _ := f.classic.GroupMetadata()
		if g.Group != "classic-g" || g.Type != "classic" || g.State != "Stable" || g.Balancer != "cooperative-sticky" ||
			len(g.Members) != 1 || g.Members[0].MemberID != member || g.Members[0].ClientID != "cli-classic-g" || g.TotalLag != wantTotal || g.Epoch != nil {
			t.Fatalf("describe classic-g = %+v", g)
		}
		checkPartitions(t, g, member, "cli-classic-g")
		code, out, _ := cliRun(cli("describe", "classic-g")...)
		for _, want := range []string{"BALANCER", "TOPIC  PARTITION  CURRENT-OFFSET  LOG-START-OFFSET  LOG-END-OFFSET  LAG  MEMBER-ID", member} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("describe text: exit %d, no %q in:\n%s", code, want, out)
			}
		}
		if !regexp.MustCompile(`(?m)^TOTAL-LAG +15$`).MatchString(out) {
			t.Errorf("describe text: no TOTAL-LAG 15 in:\n%s", out)
		}
		if !strings.Contains(out, "INSTANCE-ID") || !strings.Contains(out, cliInstance) {
			t.Errorf("describe text: no INSTANCE-ID column for a static member:\n%s", out)
		}
		if code, out, _ := cliRun(cli("describe", "kip848-g")...); code != 0 || strings.Contains(out, "INSTANCE-ID") {
			t.Errorf("INSTANCE-ID shown without static members:\n%s", out)
		}
	})

	t.Run("describe-consumer", func(t *testing.T) {
		var gs []describedGroup
		cliJSON(t, &gs, cli("describe", "kip848-g")...)
		g := gs[0]
		member, epoch := f.consumer.GroupMetadata()
		want := []topicPartitions{{cliTopic, []int32{0, 1, 2}}}
		if g.Type != "consumer" || g.State != "Stable" || g.Balancer != "uniform" || g.Epoch == nil || *g.Epoch < 1 || *g.AssignmentEpoch != *g.Epoch ||
			len(g.Members) != 1 || g.TotalLag != wantTotal {
			t.Fatalf("describe kip848-g = %+v", g)
		}
		m := g.Members[0]
		if m.MemberID != member || m.MemberEpoch == nil || *m.MemberEpoch != epoch || !slices.EqualFunc(m.Assignment, want, eqTP) || !slices.EqualFunc(m.TargetAssignment, want, eqTP) {
			t.Errorf("member = %+v (epoch %v), want %s at epoch %d assigned %v", m, *m.MemberEpoch, member, epoch, want)
		}
		checkPartitions(t, g, member, "cli-kip848-g")
		code, out, _ := cliRun(cli("describe", "kip848-g")...)
		if code != 0 || !strings.Contains(out, "MEMBER-EPOCH") || !strings.Contains(out, "cli-t:0,1,2") {
			t.Errorf("describe text: exit %d:\n%s", code, out)
		}
	})

	t.Run("describe-members-state", func(t *testing.T) {
		// kafka-consumer-groups.sh --describe --members and --state.
		row := func(out string, cells ...string) bool {
			for i := range cells {
				cells[i] = regexp.QuoteMeta(cells[i])
			}
			return regexp.MustCompile(`(?m)^` + strings.Join(cells, `\s{2,}`) + `\s*$`).MatchString(out)
		}
		member, _ := f.classic.GroupMetadata()
		code, out, _ := cliRun(cli("describe", "classic-g", "--members", "--verbose")...)
		if code != 0 || !row(out, "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT") ||
			!regexp.MustCompile(`(?m)^classic-g\s+`+regexp.QuoteMeta(member)+`\s+`+cliInstance+`\s+\S+\s+cli-classic-g\s+3\s+cli-t:0,1,2\s*$`).MatchString(out) {
			t.Errorf("describe --members --verbose: exit %d:\n%s", code, out)
		}
		code, out, _ = cliRun(cli("describe", "kip848-g", "--state")...)
		if code != 0 || !row(out, "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS") ||
			!regexp.MustCompile(`(?m)^kip848-g\s+`+regexp.QuoteMeta(f.addr)+`  \(0\)\s+\S+\s+Stable\s+1\s*$`).MatchString(out) {
			t.Errorf("describe --state: exit %d:\n%s", code, out)
		}
	})

	t.Run("admin-url", func(t *testing.T) {
		// The groups committed once and stopped with lag: STOP once a
		// window of samples is in, and no time to clear.
		var gs []describedGroup
		testkit.Eventually(t, cliWait, "classic-g's lag status STOP", func() bool {
			gs = nil // omitted fields must not keep an earlier answer's values
			cliJSON(t, &gs, cli("describe", "classic-g", "--admin-url", f.adminURL)...)
			return gs[0].Status == "STOP"
		})
		g := gs[0]
		if !regexp.MustCompile(`^cgp_[0-9A-Z]{26}$`).MatchString(g.CgpID) || g.RRL != "default/consumer-groups/classic-g" || g.TimeToClearSeconds != nil {
			t.Fatalf("describe --admin-url = %+v", g)
		}
		for _, p := range g.Partitions {
			if p.Status != "STOP" {
				t.Errorf("partition %d status %q, want STOP", p.Partition, p.Status)
			}
		}
		code, out, _ := cliRun(cli("describe", "classic-g", "--admin-url", f.adminURL)...)
		for _, re := range []string{`(?m)^CGP-ID +` + g.CgpID + `$`, `(?m)^LAG-STATUS +STOP$`, `(?m)^TIME-TO-CLEAR +-$`, `(?m)HOST +STATUS$`} {
			if code != 0 || !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("describe --admin-url text: exit %d, no %s in:\n%s", code, re, out)
			}
		}
		// Without --admin-url none of it, as against any Kafka broker.
		if code, out, _ := cliRun(cli("describe", "classic-g")...); code != 0 || strings.Contains(out, "CGP-ID") || strings.Contains(out, "STATUS") {
			t.Errorf("describe without --admin-url shows Cohort's fields:\n%s", out)
		}
		var ls []groupLag
		cliJSON(t, &ls, cli("lag", "kip848-g", "--admin-url", f.adminURL)...)
		if len(ls) != 1 || ls[0].Status == "" || ls[0].Partitions[0].Status == "" {
			t.Errorf("lag --admin-url = %+v", ls)
		}
		code, out, _ = cliRun(cli("lag", "classic-g", "--admin-url", f.adminURL)...)
		if code != 0 || !regexp.MustCompile(`(?m)^classic-g +Stable +15 +STOP +-$`).MatchString(out) {
			t.Errorf("lag --admin-url text: exit %d:\n%s", code, out)
		}
		// list --admin-url reads the API's list page by page: by one
		// here, every group still gets its id.
		defer func(n int) { adminListPage = n }(adminListPage)
		adminListPage = 1
		var rows []listedGroup
		cliJSON(t, &rows, cli("list", "--admin-url", f.adminURL)...)
		if len(rows) < 2 {
			t.Errorf("list --admin-url: %+v", rows)
		}
		for _, r := range rows {
			if !regexp.MustCompile(`^cgp_[0-9A-Z]{26}$`).MatchString(r.CgpID) || r.RRL != "default/consumer-groups/"+r.Group {
				t.Errorf("list --admin-url, one group a page: %+v", r)
			}
		}
		// An admin URL that answers nothing is an error, not silence.
		if code, _, errOut := cliRun(cli("lag", "classic-g", "--admin-url", "http://127.0.0.1:1")...); code == 0 || !strings.Contains(errOut, "--admin-url") {
			t.Errorf("unreachable --admin-url: exit %d: %s", code, errOut)
		}
	})

	t.Run("lag", func(t *testing.T) {
		var ls []groupLag
		cliJSON(t, &ls, cli("lag", "kip848-g", "classic-g")...)
		if len(ls) != 2 || ls[0].Group != "kip848-g" || ls[1].Group != "classic-g" || ls[0].TotalLag != wantTotal || ls[1].TotalLag != wantTotal || len(ls[1].Partitions) != cliPartitions {
			t.Fatalf("lag = %+v", ls)
		}
		code, out, _ := cliRun(cli("lag", "classic-g")...)
		if code != 0 || !strings.Contains(out, "classic-g  Stable  15") {
			t.Errorf("lag text: exit %d:\n%s", code, out)
		}
	})

	t.Run("unknown-group", func(t *testing.T) {
		code, out, errOut := cliRun(cli("describe", "nope")...)
		if code != 1 || out != "" || errOut != "cohort groups describe: group \"nope\" does not exist: GROUP_ID_NOT_FOUND: The group id does not exist.\n" {
			t.Errorf("describe nope: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("refused-with-members", func(t *testing.T) {
		for _, g := range []string{"classic-g", "kip848-g"} {
			code, _, errOut := cliRun(cli("delete", g)...)
			if code != 1 || !strings.Contains(errOut, "NON_EMPTY_GROUP") {
				t.Errorf("delete %s: exit %d: %q", g, code, errOut)
			}
			code, out, errOut := cliRun(cli("seek", g, "--to", "start")...)
			if code != 1 || out != "" || !strings.Contains(errOut, `group "`+g+`" is Stable with 1 members`) {
				t.Errorf("seek %s: exit %d: %q %q", g, code, out, errOut)
			}
		}
		if got := f.committed(t, "classic-g"); !mapsEqual(got, allAt(cliFirst)) {
			t.Errorf("offsets changed: %v", got)
		}
	})

	t.Run("seek", func(t *testing.T) {
		// A static member does not leave when it closes (KIP-345): remove
		// it as an operator would.
		f.classic.Close()
		ctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		if _, err := f.adm.LeaveGroup(ctx, kadm.LeaveGroup("classic-g").InstanceIDs(cliInstance)); err != nil {
			t.Fatal(err)
		}
		f.waitState(t, "classic-g", "Empty")
		seek := func(dry bool, to string, extra ...string) seekResult {
			t.Helper()
			args := cli(append([]string{"seek", "classic-g", "--to", to}, extra...)...)
			if dry {
				args = append(args, "--dry-run")
			}
			var r seekResult
			cliJSON(t, &r, args...)
			return r
		}
		newOffsets := func(r seekResult) map[int32]int64 {
			m := map[int32]int64{}
			for _, p := range r.Partitions {
				if p.Error != "" {
					t.Errorf("%+v", p)
				}
				m[p.Partition] = p.NewOffset
			}
			return m
		}
		for _, tc := range []struct {
			to    string
			extra []string
			want  map[int32]int64 // the new offsets of the partitions sought
		}{
			{"start", nil, allAt(0)},
			{"end", nil, allAt(cliFirst + cliMore)},
			{"7", []string{"--topics", cliTopic + ":1"}, map[int32]int64{1: 7}},
			{"100", []string{"--topics", cliTopic}, allAt(cliFirst + cliMore)},
			{f.base.Add(3 * time.Minute).Format(time.RFC3339Nano), nil, allAt(3)},
			{f.base.Add(time.Hour).Format(time.RFC3339), nil, allAt(cliFirst + cliMore)}, // nothing after: the end
			// 11m30s ago is base + 8m30s and a few seconds: record 9 is the first after it.
			{"-11m30s", nil, allAt(9)},
		} {
			before := f.committed(t, "classic-g")
			plan := seek(true, tc.to, tc.extra...)
			if !plan.DryRun || !mapsEqual(newOffsets(plan), tc.want) {
				t.Errorf("seek --to %s --dry-run: plan %+v, want %v", tc.to, plan, tc.want)
			}
			if got := f.committed(t, "classic-g"); !mapsEqual(got, before) {
				t.Errorf("seek --to %s --dry-run changed the offsets: %v, were %v", tc.to, got, before)
			}
			res := seek(false, tc.to, tc.extra...)
			if res.DryRun || !mapsEqual(newOffsets(res), tc.want) {
				t.Errorf("seek --to %s: %+v, want %v", tc.to, res, tc.want)
			}
			want := before
			for p, o := range tc.want {
				want[p] = o
			}
			if got := f.committed(t, "classic-g"); !mapsEqual(got, want) {
				t.Errorf("seek --to %s: OffsetFetch %v, want %v", tc.to, got, want)
			}
		}
		code, out, _ := cliRun(cli("seek", "classic-g", "--to", "start", "--dry-run")...)
		if code != 0 || !strings.Contains(out, "NEW-OFFSET") || !strings.Contains(out, "dry run") {
			t.Errorf("seek text: exit %d:\n%s", code, out)
		}

		// A KIP-848 group, once its member has left.
		f.consumer.Close()
		f.waitState(t, "kip848-g", "Empty")
		seekConsumer := func() seekResult {
			var r seekResult
			cliJSON(t, &r, cli("seek", "kip848-g", "--to", "start")...)
			return r
		}
		if r := seekConsumer(); !mapsEqual(newOffsets(r), allAt(0)) || !mapsEqual(f.committed(t, "kip848-g"), allAt(0)) {
			t.Errorf("seek kip848-g --to start: %+v, OffsetFetch %v", r, f.committed(t, "kip848-g"))
		}

		// A group that does not exist yet (Dead) may be sought too, as
		// kafka-consumer-groups.sh allows: naming its partitions.
		if code, _, errOut := cliRun(cli("seek", "fresh-g", "--to", "end")...); code != 1 || !strings.Contains(errOut, "no committed offsets") {
			t.Errorf("seek fresh-g without --topics: exit %d: %q", code, errOut)
		}
		var r seekResult
		cliJSON(t, &r, cli("seek", "fresh-g", "--to", "end", "--topics", cliTopic+":0,2")...)
		if want := map[int32]int64{0: cliFirst + cliMore, 2: cliFirst + cliMore}; !mapsEqual(newOffsets(r), want) || !mapsEqual(f.committed(t, "fresh-g"), want) {
			t.Errorf("seek fresh-g: %+v, OffsetFetch %v", r, f.committed(t, "fresh-g"))
		}
	})

	t.Run("delete-offsets", func(t *testing.T) {
		var rs []offsetResult
		cliJSON(t, &rs, cli("delete-offsets", "classic-g", "--topic", cliTopic+":2")...)
		if len(rs) != 1 || rs[0].Partition != 2 || rs[0].Error != "" {
			t.Fatalf("delete-offsets = %+v", rs)
		}
		if got := f.committed(t, "classic-g"); len(got) != 2 || got[0] < 0 || got[1] < 0 {
			t.Errorf("after delete-offsets: %v", got)
		}
		code, out, errOut := cliRun(cli("delete-offsets", "classic-g", "--topic", "no-such-topic")...)
		if code != 1 || out != "" || !strings.Contains(errOut, "no-such-topic") {
			t.Errorf("delete-offsets of an unknown topic: exit %d: %q %q", code, out, errOut)
		}
	})

	t.Run("delete", func(t *testing.T) {
		var ds []deletedGroup
		cliJSON(t, &ds, cli("delete", "classic-g", "kip848-g", "fresh-g")...)
		if len(ds) != 3 || ds[0].Error != "" || ds[1].Error != "" || ds[2].Error != "" {
			t.Fatalf("delete = %+v", ds)
		}
		var all []listedGroup
		cliJSON(t, &all, cli("list")...)
		if len(all) != 0 {
			t.Errorf("list after delete = %+v", all)
		}
		code, _, errOut := cliRun(cli("delete", "classic-g")...)
		if code != 1 || !strings.Contains(errOut, "GROUP_ID_NOT_FOUND") {
			t.Errorf("delete again: exit %d: %q", code, errOut)
		}
	})
}

// checkPartitions checks that every partition of g is owned by member,
// committed at cliFirst, ends at cliFirst+cliMore and lags cliMore.
func checkPartitions(t *testing.T, g describedGroup, member, client string) {
	t.Helper()
	if len(g.Partitions) != cliPartitions {
		t.Fatalf("partitions = %+v", g.Partitions)
	}
	for i, p := range g.Partitions {
		if static := p.InstanceID != nil && *p.InstanceID == cliInstance; static != (g.Type == "classic") {
			t.Errorf("partition %d: instance id %v", i, p.InstanceID)
		}
		if p.Topic != cliTopic || p.Partition != int32(i) || p.CurrentOffset != cliFirst || p.LogStartOffset != 0 ||
			p.LogEndOffset != cliFirst+cliMore || p.Lag != cliMore || p.MemberID != member || p.ClientID != client || p.Host == "" || p.Error != "" {
			t.Errorf("partition %d = %+v", i, p)
		}
	}
}

func eqTP(a, b topicPartitions) bool {
	return a.Topic == b.Topic && slices.Equal(a.Partitions, b.Partitions)
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestGroupsUnreachable: a broker that refuses connections is one line on
// stderr naming it, and exit 1, within the timeout.
func TestGroupsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	code, out, errOut := cliRun("groups", "list", "--brokers", addr, "--timeout", "300ms")
	want := "cohort groups list: cannot reach brokers " + addr + " within 300ms: "
	if code != 1 || out != "" || !strings.HasPrefix(errOut, want) || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "connection refused") {
		t.Errorf("exit %d, stdout %q, stderr %q; want one line starting %q", code, out, errOut, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v with a 300ms timeout", d)
	}
}

func TestGroupsCommandLine(t *testing.T) {
	t.Setenv("COHORT_BROKERS", "127.0.0.1:1")
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"groups"}, 2, "Usage: cohort groups"},
		{[]string{"groups", "--help"}, 0, "delete-offsets"},
		{[]string{"groups", "bogus"}, 2, `unknown command "bogus"`},
		{[]string{"groups", "describe"}, 2, "missing argument: GROUP..."},
		{[]string{"groups", "list", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"groups", "list", "--format", "xml"}, 2, "--format must be text or json"},
		{[]string{"groups", "list", "--type", "streams"}, 2, "--type takes classic, consumer or share"},
		{[]string{"groups", "describe", "g", "--members", "--state"}, 2, "--members and --state are exclusive"},
		{[]string{"groups", "seek", "g"}, 2, "--to is required"},
		{[]string{"groups", "seek", "g", "--to", "yesterday"}, 2, "use start, end"},
		{[]string{"groups", "seek", "g", "--to", "-3"}, 2, "must not be negative"},
		{[]string{"groups", "delete-offsets", "g"}, 2, "--topic is required"},
		{[]string{"groups", "delete-offsets", "g", "--topic", "t:x"}, 2, `bad partition "x"`},
		{[]string{"groups", "seek", "--help"}, 0, "-dry-run"},
		// The environment gives the brokers; flags after arguments count.
		{[]string{"groups", "lag", "g", "--timeout", "200ms"}, 1, "cannot reach brokers 127.0.0.1:1 within 200ms"},
	} {
		code, out, errOut := cliRun(tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.out) {
			t.Errorf("cohort %v: exit %d, want %d; output does not contain %q:\n%s%s", tc.args, code, tc.code, tc.out, out, errOut)
		}
	}
}

func TestParseSeekTarget(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want seekTarget
	}{
		{"start", seekTarget{start: true, offset: -1}},
		{"END", seekTarget{end: true, offset: -1}},
		{"0", seekTarget{offset: 0}},
		{"42", seekTarget{offset: 42}},
		{"-15m", seekTarget{offset: -1, at: now.Add(-15 * time.Minute)}},
		{"-2h", seekTarget{offset: -1, at: now.Add(-2 * time.Hour)}},
		{"2026-01-02T14:00:00Z", seekTarget{offset: -1, at: now.Add(-time.Hour)}},
	} {
		got, err := parseSeekTarget(tc.in, now)
		if err != nil || got != tc.want {
			t.Errorf("parseSeekTarget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestGroupsUnreachableNode: the seed answers, but the node the command
// needs next (here the only node, advertised at an address that refuses
// connections) does not: the one line names that node and its address,
// not the seed as unreachable.
func TestGroupsUnreachableNode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	n := testkit.StartNode(t, node.Config{AdvertisedKafkaAddr: dead})
	code, out, errOut := cliRun("groups", "list", "--brokers", n.KafkaAddr(), "--timeout", "500ms")
	want := "cohort groups list: reached " + n.KafkaAddr() + ", but not node "
	if code != 1 || out != "" || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, " at "+dead+" within 500ms: ") ||
		!strings.Contains(errOut, "connection refused") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want one line starting %q naming %s", code, out, errOut, want, dead)
	}
	t.Log(strings.TrimSpace(errOut))
}

// TestGroupsSeveralSeeds: --brokers takes several seeds, and a dead one
// among them costs nothing but a refused connection: the command answers
// from the live one, whichever order they are named in.
func TestGroupsSeveralSeeds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	n := testkit.StartNode(t, node.Config{})
	for _, seeds := range []string{dead + "," + n.KafkaAddr(), n.KafkaAddr() + "," + dead} {
		code, out, errOut := cliRun("groups", "list", "--brokers", seeds, "--timeout", "10s", "--format", "json")
		if code != 0 || strings.TrimSpace(out) != "[]" || errOut != "" {
			t.Errorf("--brokers %s: exit %d, stdout %q, stderr %q; want an empty list", seeds, code, out, errOut)
		}
	}
}
