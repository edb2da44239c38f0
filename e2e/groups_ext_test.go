package e2e

// This file runs classic consumer groups with real clients that are not
// written in Go: kcat -G (librdkafka 2.0.2), kafka-python 2.0.2's
// KafkaConsumer and KafkaAdminClient (testdata/kafka_python_groups.py) and
// kafkajs 2.2.4's consumer and admin client (js/groups.mjs), against a
// node with short group timers (startGroupNode). Every test runs one
// scenario, runExtGroup, with three members of one group on a 6-partition
// topic:
//
//  1. franz-go produces records before the members start. The members must
//     settle on one generation with 2 partitions each, and the broker's
//     DescribeGroups (kadm) must agree: state Stable, the client's assignor,
//     each member's client id, subscription and assignment as the member
//     reported it.
//  2. franz-go produces more. They are consumed and committed: kadm
//     FetchOffsets, the offsets the members report committing and (kafka-
//     python, kafkajs) the client's own admin client's ListGroups,
//     DescribeGroups and OffsetFetch all agree, with no rebalance since
//     the group settled.
//  3. Member 2 leaves. Members 0 and 1 must settle with 3 partitions each,
//     resuming from the commits; franz-go produces more, consumed and
//     committed as in 2.
//  4. The members stop and leave the group: it is Empty well within a
//     session timeout (so by LeaveGroup, not by expiry), its offsets kept.
//
// In the end every record has been consumed with every field intact: those
// produced in a settled generation exactly once, in order, by the member
// owning their partition; those produced before the group first settled at
// least once (a partition may move while the group forms). Each member
// reports its assignments (kcat's "% Group ... rebalanced" lines on stderr;
// JSON lines from the scripts) and what it consumed; the checks are all
// here. External processes run under extTimeout and every wait has a
// deadline.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	extGroupMembers = 3
	extGroupParts   = 6
	extGroupBefore  = 300 // records produced before the members start
	extGroupAfter   = 600 // records produced once the group has settled
	// extGroupSession is the members' session timeout (Kafka's default
	// minimum); heartbeats go every 500 ms and the rebalance timeout is
	// 30 s.
	extGroupSession = 6 * time.Second
	// extGroupWait bounds each wait for the group or the consumers.
	extGroupWait = 30 * time.Second
)

// TestGroupExtKcat: three kcat -G processes (librdkafka's range assignor,
// auto.offset.reset=earliest, auto-commit) share a group; each prints its
// assignments on stderr and its records on stdout, and leaves on SIGTERM.
// They commit at librdkafka's default interval, 5 s: kcat's -X
// auto.commit.interval.ms sets the legacy topic property of that name, not
// the consumer's.
func TestGroupExtKcat(t *testing.T) {
	longTest(t)
	runExtGroup(t, "kcat-group", nil, startKcatGroup)
}

// TestGroupExtPython: three kafka-python KafkaConsumers (roundrobin assignor,
// a synchronous commit after every poll) share a group, each in a thread of
// one process; KafkaAdminClient's list_consumer_groups,
// describe_consumer_groups and list_consumer_group_offsets see the group
// Stable, its members and assignments and its offsets as the consumers
// reported them.
func TestGroupExtPython(t *testing.T) {
	pythonKafka(t)
	runExtGroup(t, "py-group", nil, func(t *testing.T, addr, topic, group string) *extGroupClient {
		script := filepath.Join(testkit.ModuleRoot(), "e2e", "testdata", "kafka_python_groups.py")
		return startScriptGroup(t, "kafka-python", "roundrobin", addr, topic, group, "cohort-e2e-py",
			func(spec string) []string { return []string{systemPython, "-I", script, spec} },
			map[string]any{"members": extGroupMembers, "log_level": "INFO"})
	})
}

// TestGroupExtKafkajs: three kafkajs consumers (RoundRobinAssigner, autocommit
// after every batch; two with eachMessage, one with eachBatch) share a
// group in one Node.js process, reporting their assignments from the
// GROUP_JOIN event; kafkajs's admin listGroups, describeGroups and
// fetchOffsets see the group Stable, its members and assignments and its
// offsets as the consumers reported them.
func TestGroupExtKafkajs(t *testing.T) {
	dir := jsDir(t)
	// kafkajs decompresses gzip only, unless given codecs of its own.
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression()}
	runExtGroup(t, "kafkajs-group", codecs, func(t *testing.T, addr, topic, group string) *extGroupClient {
		return startScriptGroup(t, "kafkajs", "RoundRobinAssigner", addr, topic, group, "cohort-e2e-kafkajs",
			func(spec string) []string { return []string{"node", filepath.Join(dir, "groups.mjs"), spec} },
			map[string]any{"modes": []string{"eachMessage", "eachBatch", "eachMessage"}, "log_level": "INFO"})
	})
}

// extGroupView is what one member (a kcat process, or one consumer of a
// script) has reported so far.
type extGroupView struct {
	member   string          // its latest member id
	assigned []int32         // its latest assignment, sorted; nil before the first and after a revocation
	events   int             // assignments and revocations so far
	recs     []rec           // what it consumed, in order
	commits  map[int32]int64 // the latest offset it reported committing, per partition
}

// extGroupClient is one client's three members, running.
type extGroupClient struct {
	name     string
	protocol string // the assignor the group must choose
	clientID func(i int) string
	// views parses what the members have reported so far.
	views func(t *testing.T) []extGroupView
	// reportsCommits says whether the members report their commits.
	reportsCommits bool
	// admin, if set, checks the client's own admin view of the group while
	// it is Stable with every offset committed.
	admin func(t *testing.T, views []extGroupView, ends map[int32]int64)
	// leave stops member i (which leaves the group) and waits for it to
	// close cleanly.
	leave func(t *testing.T, i int)
	// stop stops the other members likewise, and waits for each to exit
	// cleanly.
	stop func(t *testing.T)
}

// extGroupEpoch is a batch of records produced in one state of the group:
// from offset first[p] of each partition p, consumed by owner[p] exactly
// once, in order; owner nil means produced before the group settled,
// consumed at least once by anyone.
type extGroupEpoch struct {
	first map[int32]int64
	owner map[int32]int
}

// runExtGroup runs the scenario of this file's top comment with the
// members start starts. franz-go produces with codecs, a slice of the
// records with each; nil means every codec (franzProduce).
func runExtGroup(t *testing.T, name string, codecs []kgo.CompressionCodec, start func(t *testing.T, addr, topic, group string) *extGroupClient) {
	began := time.Now()
	addr := startGroupNode(t)
	topic, group := name, name+"-g"
	extCreateTopic(t, addr, topic, extGroupParts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// produce produces n more records, a new epoch consumed by owner, and
	// returns the end offsets.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var want []rec
	var epochs []extGroupEpoch
	produce := func(n int, owner map[int32]int) map[int32]int64 {
		first := extGroupEnds(want, extGroupParts)
		recs := extGroupProduce(t, addr, topic, codecs, makeRecs(fmt.Sprintf("%s-%d", name, len(epochs)), n, base.Add(time.Duration(len(epochs))*time.Minute)))
		want = append(want, recs...)
		ends := extGroupEnds(want, extGroupParts)
		for p, o := range ends {
			if o == first[p] {
				t.Fatalf("records %d: none went to partition %d; every partition, so every member, should get some", len(epochs), p)
			}
		}
		epochs = append(epochs, extGroupEpoch{first, owner})
		return ends
	}
	produce(extGroupBefore, nil)

	// 1. One generation, 2 partitions each, as the broker describes it.
	c := start(t, addr, topic, group)
	all := []int{0, 1, 2}
	started := time.Now()
	stable, owner := settleExtGroup(t, adm, c, topic, group, all)
	t.Logf("%s: the group settled %v after the members started", c.name, time.Since(started).Round(time.Millisecond))

	// 2. Every record consumed and committed, in the same generation.
	ends := produce(extGroupAfter, owner)
	consumeExtGroup(t, adm, c, topic, group, all, stable, owner, len(want), ends)
	if c.admin != nil {
		c.admin(t, stable, ends)
	}

	// 3. Member 2 leaves: members 0 and 1 take over its partitions from
	// its commits, 3 partitions each.
	c.leave(t, 2)
	left := time.Now()
	two := []int{0, 1}
	stable, owner = settleExtGroup(t, adm, c, topic, group, two)
	t.Logf("%s: the group settled %v after member 2 left", c.name, time.Since(left).Round(time.Millisecond))
	ends = produce(extGroupAfter, owner)
	consumeExtGroup(t, adm, c, topic, group, two, stable, owner, len(want), ends)

	// 4. Stopped: every member left, the offsets stay.
	c.stop(t)
	stopped := time.Now()
	waitExtGroupFor(t, extGroupSession*2/3, "the group to be Empty once its members have left", func() string {
		ctx, cancel := context.WithTimeout(context.Background(), extGroupWait)
		defer cancel()
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return fmt.Sprintf("describe groups: %v", err)
		}
		g := d[group]
		if g.Err != nil || g.State != "Empty" || len(g.Members) != 0 {
			return fmt.Sprintf("group state %q, %d members, error %v", g.State, len(g.Members), g.Err)
		}
		return ""
	})
	t.Logf("%s: the group was Empty %v after the members exited", c.name, time.Since(stopped).Round(time.Millisecond))
	if why := extGroupCommitted(t, adm, group, topic, ends); why != "" {
		t.Errorf("%s: after the members left: %s", c.name, why)
	}
	checkExtGroupRecords(t, c.name, want, epochs, c.views(t))
	t.Logf("%s: scenario done in %v", c.name, time.Since(began).Round(time.Millisecond))
}

// settleExtGroup waits for members active to settle in one generation with
// the partitions shared evenly, as the broker describes it too, and
// returns the members' views then and the owner of each partition.
func settleExtGroup(t *testing.T, adm *kadm.Client, c *extGroupClient, topic, group string, active []int) ([]extGroupView, map[int32]int) {
	t.Helper()
	var views []extGroupView
	waitExtGroup(t, fmt.Sprintf("members %v to settle with %d partitions each", active, extGroupParts/len(active)), func() string {
		views = c.views(t)
		return extGroupUnsettled(t, adm, c, topic, group, views, active)
	})
	owner := map[int32]int{}
	for _, i := range active {
		for _, p := range views[i].assigned {
			owner[p] = i
		}
		t.Logf("%s member %d (%s): partitions %v", c.name, i, views[i].member, views[i].assigned)
	}
	return views, owner
}

// consumeExtGroup waits for the members to consume all n records produced
// so far, and for the group to commit ends (and each partition's owner to
// report so, if the members report their commits); then checks that the
// members active are still as in stable: no rebalance.
func consumeExtGroup(t *testing.T, adm *kadm.Client, c *extGroupClient, topic, group string, active []int, stable []extGroupView, owner map[int32]int, n int, ends map[int32]int64) {
	t.Helper()
	waitExtGroup(t, "every record to be consumed", func() string {
		type po struct {
			p int32
			o int64
		}
		seen := map[po]bool{}
		for _, v := range c.views(t) {
			for _, r := range v.recs {
				seen[po{r.Partition, r.Offset}] = true
			}
		}
		if len(seen) < n {
			return fmt.Sprintf("%d of %d records consumed", len(seen), n)
		}
		return ""
	})
	waitExtGroup(t, "the committed offsets to reach the end offsets", func() string {
		if why := extGroupCommitted(t, adm, group, topic, ends); why != "" {
			return why
		}
		if !c.reportsCommits {
			return ""
		}
		// The commits the owners report, which they print once the
		// broker has answered.
		views := c.views(t)
		for p, i := range owner {
			if got, ok := views[i].commits[p]; !ok || got != ends[p] {
				return fmt.Sprintf("member %d reports committing %d (any: %v) for its partition %d, want the end offset %d", i, got, ok, p, ends[p])
			}
		}
		return ""
	})
	now := c.views(t)
	if why := extGroupUnsettled(t, adm, c, topic, group, now, active); why != "" {
		t.Fatalf("%s: the group is no longer as it settled: %s", c.name, why)
	}
	for _, i := range active {
		v := now[i]
		if v.member != stable[i].member || v.events != stable[i].events {
			t.Fatalf("%s member %d: member id %s after %d rebalance events, was %s after %d when the group settled: nothing should have rebalanced",
				c.name, i, v.member, v.events, stable[i].member, stable[i].events)
		}
	}
}

// waitExtGroup waits up to extGroupWait for cond to return "", logging each
// new reason it gives for not yet.
func waitExtGroup(t *testing.T, what string, cond func() string) {
	t.Helper()
	waitExtGroupFor(t, extGroupWait, what, cond)
}

func waitExtGroupFor(t *testing.T, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	last := ""
	testkit.Eventually(t, timeout, fmt.Sprintf("waiting for %s (the log says why not)", what), func() bool {
		why := cond()
		if why != last && why != "" {
			t.Logf("waiting for %s: %s", what, why)
		}
		last = why
		return why == ""
	})
}

// extGroupProduce produces recs to topic with franz-go, a slice of them
// with each of codecs (nil: franzProduce, every codec), and returns them
// with the partitions and offsets the broker acknowledged.
func extGroupProduce(t *testing.T, addr, topic string, codecs []kgo.CompressionCodec, recs []rec) []rec {
	t.Helper()
	if codecs == nil {
		return franzProduce(t, addr, topic, recs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), franzTimeout)
	defer cancel()
	out := slices.Clone(recs)
	per := (len(recs) + len(codecs) - 1) / len(codecs)
	for ci, codec := range codecs {
		lo, hi := ci*per, min((ci+1)*per, len(recs))
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
		if err != nil {
			t.Fatal(err)
		}
		var krs []*kgo.Record
		for _, r := range recs[lo:hi] {
			kr := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
			}
			krs = append(krs, kr)
		}
		err = cl.ProduceSync(ctx, krs...).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatalf("franz-go produce to %s: %v", topic, err)
		}
		for i, kr := range krs { // ProduceSync set them
			out[lo+i].Partition, out[lo+i].Offset = kr.Partition, kr.Offset
		}
	}
	return out
}

// extGroupEnds returns the end offset of each of n partitions after recs.
func extGroupEnds(recs []rec, n int) map[int32]int64 {
	ends := map[int32]int64{}
	for p := range int32(n) {
		ends[p] = 0
	}
	for _, r := range recs {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return ends
}

// extGroupUnsettled returns why views are not one settled generation of
// the group of members active with the partitions shared evenly, as the
// broker describes it too, or "" if they are.
func extGroupUnsettled(t *testing.T, adm *kadm.Client, c *extGroupClient, topic, group string, views []extGroupView, active []int) string {
	t.Helper()
	if len(views) != extGroupMembers {
		t.Fatalf("%s: %d member views, want %d", c.name, len(views), extGroupMembers)
	}
	owners := map[int32]int{}
	ids := map[string]int{}
	for _, i := range active {
		v := views[i]
		switch {
		case v.assigned == nil:
			return fmt.Sprintf("member %d has no current assignment", i)
		case len(v.assigned) != extGroupParts/len(active):
			return fmt.Sprintf("member %d (%s) has partitions %v", i, v.member, v.assigned)
		case v.member == "":
			return fmt.Sprintf("member %d has no member id", i)
		}
		if j, dup := ids[v.member]; dup {
			return fmt.Sprintf("members %d and %d have the same member id %s", j, i, v.member)
		}
		ids[v.member] = i
		for _, p := range v.assigned {
			if j, dup := owners[p]; dup {
				return fmt.Sprintf("members %d and %d both have partition %d", j, i, p)
			}
			if p < 0 || p >= extGroupParts {
				return fmt.Sprintf("member %d has partition %d of a %d-partition topic", i, p, extGroupParts)
			}
			owners[p] = i
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), extGroupWait)
	defer cancel()
	d, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Sprintf("describe groups: %v", err)
	}
	g, ok := d[group]
	switch {
	case !ok:
		return fmt.Sprintf("describe groups: no %s in %v", group, d.Names())
	case g.Err != nil:
		return fmt.Sprintf("describe groups: %v (%s)", g.Err, g.ErrMessage)
	case g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != c.protocol:
		return fmt.Sprintf("the broker describes state %q, protocol type %q, protocol %q; want Stable, consumer, %s", g.State, g.ProtocolType, g.Protocol, c.protocol)
	case len(g.Members) != len(active):
		var ms []string
		for _, m := range g.Members {
			ms = append(ms, m.MemberID)
		}
		return fmt.Sprintf("the broker describes %d members %v", len(g.Members), ms)
	}
	for _, m := range g.Members {
		i, ok := ids[m.MemberID]
		if !ok {
			return fmt.Sprintf("the broker describes member %s, which no member reports being", m.MemberID)
		}
		if m.ClientID != c.clientID(i) {
			return fmt.Sprintf("the broker describes member %d (%s) with client id %q, want %q", i, m.MemberID, m.ClientID, c.clientID(i))
		}
		if !strings.Contains(m.ClientHost, "127.0.0.1") {
			return fmt.Sprintf("the broker describes member %d (%s) with client host %q, want 127.0.0.1", i, m.MemberID, m.ClientHost)
		}
		if md, ok := m.Join.AsConsumer(); !ok || !slices.Equal(md.Topics, []string{topic}) {
			return fmt.Sprintf("the broker describes member %d (%s) subscribed to %+v, want [%s]", i, m.MemberID, md, topic)
		}
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			return fmt.Sprintf("the broker describes member %d (%s) with no consumer assignment", i, m.MemberID)
		}
		var got []int32
		for _, at := range a.Topics {
			if at.Topic != topic {
				return fmt.Sprintf("the broker describes member %d (%s) assigned topic %s", i, m.MemberID, at.Topic)
			}
			got = append(got, at.Partitions...)
		}
		slices.Sort(got)
		if !slices.Equal(got, views[i].assigned) {
			return fmt.Sprintf("the broker describes member %d (%s) assigned %v; it reports %v", i, m.MemberID, got, views[i].assigned)
		}
	}
	return ""
}

// extGroupCommitted returns why the group's committed offsets (kadm
// FetchOffsets) are not exactly ends for topic, or "".
func extGroupCommitted(t *testing.T, adm *kadm.Client, group, topic string, ends map[int32]int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), extGroupWait)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return fmt.Sprintf("fetch offsets: %v", err)
	}
	got := map[int32]int64{}
	var other []string
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != topic {
			other = append(other, fmt.Sprintf("%s[%d]", o.Topic, o.Partition))
			return
		}
		got[o.Partition] = o.At
	})
	if len(other) > 0 {
		t.Fatalf("group %s has offsets for %v: it only consumes %s", group, other, topic)
	}
	if fmt.Sprint(got) != fmt.Sprint(ends) {
		return fmt.Sprintf("committed %v, end offsets %v", got, ends)
	}
	return ""
}

// checkExtGroupRecords checks what the members consumed against want,
// produced in epochs: each record intact, and consumed as its epoch says.
func checkExtGroupRecords(t *testing.T, client string, want []rec, epochs []extGroupEpoch, views []extGroupView) {
	t.Helper()
	type po struct {
		p int32
		o int64
	}
	epochOf := func(k po) extGroupEpoch {
		e := epochs[0]
		for _, next := range epochs[1:] {
			if k.o >= next.first[k.p] {
				e = next
			}
		}
		return e
	}
	first := map[po]rec{}
	by := map[po][]int{}
	var union []rec
	for i, v := range views {
		last := map[int32]int64{}
		for _, r := range v.recs {
			k := po{r.Partition, r.Offset}
			if f, ok := first[k]; !ok {
				first[k] = r
				union = append(union, r)
			} else if !bytes.Equal(f.Key, r.Key) || !bytes.Equal(f.Value, r.Value) {
				t.Fatalf("%s: partition %d offset %d consumed twice with different contents: %q/%.40q and %q/%.40q", client, k.p, k.o, f.Key, f.Value, r.Key, r.Value)
			}
			by[k] = append(by[k], i)
			e := epochOf(k)
			if e.owner == nil {
				continue
			}
			if e.owner[k.p] != i {
				t.Errorf("%s member %d consumed partition %d offset %d, produced when member %d owned it", client, i, k.p, k.o, e.owner[k.p])
			}
			if l, ok := last[k.p]; ok && k.o <= l {
				t.Errorf("%s member %d consumed partition %d offset %d after offset %d", client, i, k.p, k.o, l)
			}
			last[k.p] = k.o
		}
	}
	again := 0
	for k, who := range by {
		if epochOf(k).owner != nil && len(who) != 1 {
			t.Errorf("%s: partition %d offset %d, produced in a settled generation, consumed by members %v", client, k.p, k.o, who)
		}
		again += len(who) - 1
	}
	checkSame(t, want, union, false)
	t.Logf("%s: %d records consumed, %d of them again while the group formed", client, len(want), again)
}

// lockedBuffer is a bytes.Buffer that a process writes while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the complete lines written so far.
func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	s := b.buf.String()
	b.mu.Unlock()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// extProc is an external client running in the background under
// extTimeout; it is killed, if still running, when the test ends.
type extProc struct {
	name           string
	cmd            *exec.Cmd
	stdin          io.WriteCloser // nil unless asked for
	stdout, stderr lockedBuffer
	done           chan struct{} // closed when it has exited
	err            error         // its exit, once done is closed
}

func startExtProc(t *testing.T, name string, withStdin bool, prog string, args ...string) *extProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	p := &extProc{name: name, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, prog, args...)
	p.cmd.WaitDelay = 5 * time.Second
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if withStdin {
		var err error
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		if ctx.Err() != nil {
			p.err = fmt.Errorf("killed: no exit within %v (%v)", extTimeout, p.err)
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel() // kills it unless it has exited
		<-p.done // bounded by WaitDelay
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, tail(p.stderr.String()))
		}
	})
	return p
}

// terminate sends p SIGTERM.
func (p *extProc) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("%s: SIGTERM: %v", p.name, err)
	}
}

// wait waits up to extGroupWait for p to exit, which it was asked to do,
// and fails unless it exited 0.
func (p *extProc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(extGroupWait):
		t.Fatalf("%s: no exit within %v of being asked to stop", p.name, extGroupWait)
	}
	if p.err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", p.name, p.err, tail(p.stderr.String()))
	}
}

// kcatRebalanced is kcat -G's line for a rebalance (its rebalance callback):
// "% Group G rebalanced (memberid M): assigned: T [0], T [3]" or "revoked: ...".
var (
	kcatRebalanced = regexp.MustCompile(`^% Group (\S+) rebalanced \(memberid ([^)]*)\): (assigned|revoked):(.*)$`)
	kcatPartition  = regexp.MustCompile(`^(\S+) \[(\d+)\]$`)
)

// startKcatGroup starts three kcat -G processes in group, each printing
// its records in kcatFormat, unbuffered.
func startKcatGroup(t *testing.T, addr, topic, group string) *extGroupClient {
	kcat := kcatPath(t)
	clientID := func(i int) string { return fmt.Sprintf("cohort-e2e-kcat-%d", i) }
	procs := make([]*extProc, extGroupMembers)
	for i := range procs {
		procs[i] = startExtProc(t, clientID(i), false, kcat, "-b", addr,
			"-X", "client.id="+clientID(i),
			"-X", fmt.Sprintf("session.timeout.ms=%d", extGroupSession.Milliseconds()),
			"-X", "heartbeat.interval.ms=500",
			"-X", "max.poll.interval.ms=30000",
			"-X", "fetch.wait.max.ms=100",
			// Not -o beginning: with -G, kcat assigns every partition it
			// gets at that offset, ignoring the group's commits.
			"-X", "auto.offset.reset=earliest",
			"-u", "-f", kcatFormat,
			"-G", group, topic)
	}
	views := func(t *testing.T) []extGroupView {
		t.Helper()
		out := make([]extGroupView, len(procs))
		for i, p := range procs {
			v := &out[i]
			for _, line := range p.stderr.lines() {
				m := kcatRebalanced.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				if m[1] != group {
					t.Fatalf("%s: rebalance of group %s, want %s: %q", p.name, m[1], group, line)
				}
				v.member, v.events = m[2], v.events+1
				if m[3] == "revoked" {
					v.assigned = nil
					continue
				}
				v.assigned = []int32{}
				for _, tp := range strings.Split(strings.TrimSpace(m[4]), ", ") {
					if tp == "" {
						continue
					}
					pm := kcatPartition.FindStringSubmatch(tp)
					if pm == nil || pm[1] != topic {
						t.Fatalf("%s: assignment %q in %q: want %s [N]", p.name, tp, line, topic)
					}
					n, _ := strconv.Atoi(pm[2])
					v.assigned = append(v.assigned, int32(n))
				}
				slices.Sort(v.assigned)
			}
			var recs bytes.Buffer
			for _, l := range p.stdout.lines() {
				recs.WriteString(l + "\n")
			}
			v.recs = parseKcatFormat(t, recs.Bytes())
		}
		return out
	}
	c := &extGroupClient{
		name:     "kcat",
		protocol: "range", // librdkafka's first default
		clientID: clientID,
		views:    views,
	}
	// Members stop on SIGTERM: kcat closes its consumer, which commits
	// and leaves the group.
	left := make([]bool, len(procs))
	c.leave = func(t *testing.T, i int) {
		t.Helper()
		left[i] = true
		procs[i].terminate(t)
		procs[i].wait(t)
	}
	c.stop = func(t *testing.T) {
		t.Helper()
		for i, p := range procs {
			if !left[i] {
				p.terminate(t)
			}
		}
		for _, p := range procs {
			p.wait(t)
		}
	}
	return c
}

// extGroupLine is one JSON line of kafka_python_groups.py's or
// groups.mjs's output; which fields are set depends on Kind.
type extGroupLine struct {
	Kind       string           `json:"kind"`
	C          int              `json:"c"`
	Member     string           `json:"member"`
	Partitions []int32          `json:"partitions"`
	P          int32            `json:"p"`
	O          int64            `json:"o"`
	Ts         int64            `json:"ts"`
	TsType     int              `json:"tstype"`
	K          []byte           `json:"k"` // base64; null stays nil
	V          []byte           `json:"v"`
	H          [][2]string      `json:"h"` // value base64
	Offsets    map[string]int64 `json:"offsets"`
	Error      string           `json:"error"`

	Groups       [][2]string `json:"groups"` // [group, protocol type]
	ErrorCode    int         `json:"error_code"`
	Group        string      `json:"group"`
	State        string      `json:"state"`
	ProtocolType string      `json:"protocol_type"`
	Protocol     string      `json:"protocol"`
	Members      []struct {
		Member   string             `json:"member"`
		Client   string             `json:"client"`
		Host     string             `json:"host"`
		Topics   []string           `json:"topics"`
		Assigned map[string][]int32 `json:"assigned"`
	} `json:"members"`
	GroupOffsets []struct {
		Topic    string `json:"topic"`
		P        int32  `json:"p"`
		Offset   int64  `json:"offset"`
		Metadata string `json:"metadata"`
	} `json:"group_offsets"`
}

// startScriptGroup starts a client script (kafka_python_groups.py or
// groups.mjs) with a spec: extra plus the bootstrap address, topic, group
// and client id prefix (member i's client id is clientID-i). argv returns
// its command line for the spec's path.
func startScriptGroup(t *testing.T, name, protocol, addr, topic, group, clientID string, argv func(spec string) []string, extra map[string]any) *extGroupClient {
	spec := map[string]any{"bootstrap": addr, "topic": topic, "group": group, "client_id": clientID}
	for k, v := range extra {
		spec[k] = v
	}
	args := argv(writeSpec(t, name+"-group", spec))
	p := startExtProc(t, name, true, args[0], args[1:]...)
	lines := func(t *testing.T) []extGroupLine {
		t.Helper()
		var ls []extGroupLine
		for _, l := range p.stdout.lines() {
			var gl extGroupLine
			if err := json.Unmarshal([]byte(l), &gl); err != nil {
				t.Fatalf("%s: output line %q: %v", name, l, err)
			}
			if gl.Kind == "error" || gl.Kind == "crash" {
				t.Fatalf("%s member %d: %s: %s", name, gl.C, gl.Kind, gl.Error)
			}
			ls = append(ls, gl)
		}
		return ls
	}
	c := &extGroupClient{
		name:           name,
		protocol:       protocol,
		clientID:       func(i int) string { return fmt.Sprintf("%s-%d", clientID, i) },
		reportsCommits: true,
	}
	c.views = func(t *testing.T) []extGroupView {
		t.Helper()
		out := make([]extGroupView, extGroupMembers)
		for _, l := range lines(t) {
			if l.Kind == "groups" || l.Kind == "described" || l.Kind == "group_offsets" || l.Kind == "admin_done" || l.Kind == "done" {
				continue
			}
			if l.C < 0 || l.C >= len(out) {
				t.Fatalf("%s: line for member %d: %+v", name, l.C, l)
			}
			v := &out[l.C]
			switch l.Kind {
			case "assigned":
				v.member, v.events = l.Member, v.events+1
				v.assigned = slices.Sorted(slices.Values(append([]int32{}, l.Partitions...)))
			case "revoked":
				v.assigned, v.events = nil, v.events+1
			case "rec":
				if l.TsType != 0 {
					t.Fatalf("%s member %d: record %+v with timestamp type %d, want CreateTime (0)", name, l.C, l, l.TsType)
				}
				r := rec{Partition: l.P, Offset: l.O, Key: l.K, Value: l.V, Timestamp: time.UnixMilli(l.Ts)}
				for _, h := range l.H {
					hv, err := base64.StdEncoding.DecodeString(h[1])
					if err != nil {
						t.Fatalf("%s header %q: %v", name, h, err)
					}
					r.Headers = append(r.Headers, hdr{h[0], string(hv)})
				}
				v.recs = append(v.recs, r)
			case "committed":
				if v.commits == nil {
					v.commits = map[int32]int64{}
				}
				for ps, o := range l.Offsets {
					pn, err := strconv.ParseInt(ps, 10, 32)
					if err != nil {
						t.Fatalf("%s: committed line %+v: %v", name, l, err)
					}
					v.commits[int32(pn)] = o
				}
			case "commit_failed", "closed":
			default:
				t.Fatalf("%s: unknown output line %+v", name, l)
			}
		}
		return out
	}
	c.admin = func(t *testing.T, views []extGroupView, ends map[int32]int64) {
		t.Helper()
		if _, err := io.WriteString(p.stdin, "admin\n"); err != nil {
			t.Fatalf("%s: write admin command: %v", name, err)
		}
		var byKind map[string]extGroupLine
		waitExtGroup(t, name+"'s admin client", func() string {
			byKind = map[string]extGroupLine{}
			for _, l := range lines(t) {
				byKind[l.Kind] = l
			}
			if _, ok := byKind["admin_done"]; !ok {
				return "no answer yet"
			}
			return ""
		})
		if gs := byKind["groups"].Groups; !slices.Contains(gs, [2]string{group, "consumer"}) {
			t.Errorf("%s admin: groups listed %v, want [%s consumer] among them", name, gs, group)
		}
		d := byKind["described"]
		if d.ErrorCode != 0 || d.Group != group || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != protocol {
			t.Errorf("%s admin: group described with error %d, group %q, state %q, protocol type %q, protocol %q; want 0, %s, Stable, consumer, %s",
				name, d.ErrorCode, d.Group, d.State, d.ProtocolType, d.Protocol, group, protocol)
		}
		var wantMembers, gotMembers []string
		for i, v := range views {
			wantMembers = append(wantMembers, fmt.Sprintf("%s client=%s topics=[%s] assigned=map[%s:%v]", v.member, c.clientID(i), topic, topic, v.assigned))
		}
		for _, m := range d.Members {
			if !strings.Contains(m.Host, "127.0.0.1") {
				t.Errorf("%s admin: member %s described with host %q, want 127.0.0.1", name, m.Member, m.Host)
			}
			gotMembers = append(gotMembers, fmt.Sprintf("%s client=%s topics=%v assigned=%v", m.Member, m.Client, m.Topics, m.Assigned))
		}
		sort.Strings(wantMembers)
		sort.Strings(gotMembers)
		if !slices.Equal(gotMembers, wantMembers) {
			t.Errorf("%s admin: members described as\n\t%s\nwant (as they report themselves)\n\t%s", name, strings.Join(gotMembers, "\n\t"), strings.Join(wantMembers, "\n\t"))
		}
		got := map[int32]int64{}
		for _, o := range byKind["group_offsets"].GroupOffsets {
			if o.Topic != topic || o.Metadata != "" {
				t.Errorf("%s admin: committed offset %+v, want topic %s, no metadata", name, o, topic)
			}
			got[o.P] = o.Offset
		}
		if fmt.Sprint(got) != fmt.Sprint(ends) {
			t.Errorf("%s admin: committed offsets %v, want the end offsets %v", name, got, ends)
		}
	}
	c.leave = func(t *testing.T, i int) {
		t.Helper()
		if _, err := fmt.Fprintf(p.stdin, "leave %d\n", i); err != nil {
			t.Fatalf("%s: write leave command: %v", name, err)
		}
		waitExtGroup(t, fmt.Sprintf("%s member %d to close", name, i), func() string {
			for _, l := range lines(t) {
				if l.Kind == "closed" && l.C == i {
					return ""
				}
			}
			return "not closed yet"
		})
	}
	c.stop = func(t *testing.T) {
		t.Helper()
		if err := p.stdin.Close(); err != nil {
			t.Fatalf("%s: close stdin: %v", name, err)
		}
		p.wait(t)
		ls := lines(t)
		if len(ls) == 0 || ls[len(ls)-1].Kind != "done" {
			t.Fatalf("%s did not finish:\n%s", name, tail(p.stdout.String()))
		}
	}
	return c
}
