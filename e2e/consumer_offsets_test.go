package e2e

// __consumer_offsets with real clients: franz-go reads the topic without
// a group and decodes every record with Kafka's record types (kmsg's for
// offsets and classic groups, package offsetstopic's for the KIP-848
// records, which kmsg lacks), checking what it reads against what the
// group APIs say; Metadata shows the topic as internal, writes to it are
// refused with Kafka's errors, and its offsets never go backwards across
// a restart.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const cofTopic = offsetstopic.Name

// cofWait bounds each wait for the topic to show a state.
const cofWait = 20 * time.Second

// cofConfig is a coordinator quick to form groups: a 200 ms initial
// rebalance delay for classic groups, KIP-848 heartbeats every 200 ms
// and no assignment throttle.
var cofConfig = coordinator.Config{
	InitialRebalanceDelay:      200 * time.Millisecond,
	InitialRebalanceQuiet:      50 * time.Millisecond,
	ConsumerHeartbeatInterval:  200 * time.Millisecond,
	ConsumerSessionTimeout:     10 * time.Second,
	ConsumerAssignmentInterval: -1,
}

// cofReader consumes __consumer_offsets without a group and keeps what a
// reader of Kafka's topic keeps: the latest value of every key, decoded.
type cofReader struct {
	t      *testing.T
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	state map[string]string // a key, rendered → its value, rendered
	// tombstones are the keys whose deletion was read.
	tombstones map[string]bool
	// last is the highest offset read in each partition; first the
	// lowest.
	last, first map[int32]int64
	records     int
	problems    []string
}

// newCOFReader starts reading every partition of __consumer_offsets, from
// start, or from the offsets given.
func newCOFReader(t *testing.T, addr string, from map[int32]int64) *cofReader {
	t.Helper()
	return newCOFReaderSeeds(t, []string{addr}, from)
}

// newCOFReaderSeeds is newCOFReader with several seed brokers.
func newCOFReaderSeeds(t *testing.T, seeds []string, from map[int32]int64) *cofReader {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("cohort-e2e-cof-reader"),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	if from == nil {
		opts = append(opts, kgo.ConsumeTopics(cofTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	} else {
		ps := map[int32]kgo.Offset{}
		for p, o := range from {
			ps[p] = kgo.NewOffset().At(o)
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cofTopic: ps}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &cofReader{t: t, cl: cl, cancel: cancel, done: make(chan struct{}),
		state: map[string]string{}, tombstones: map[string]bool{}, last: map[int32]int64{}, first: map[int32]int64{}}
	go r.run(ctx)
	t.Cleanup(r.close)
	return r
}

func (r *cofReader) close() {
	r.cancel()
	<-r.done
	r.cl.Close()
}

func (r *cofReader) run(ctx context.Context) {
	defer close(r.done)
	for ctx.Err() == nil {
		fs := r.cl.PollFetches(ctx)
		r.mu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				r.problems = append(r.problems, fmt.Sprintf("fetch %s/%d: %v", topic, p, err))
			}
		})
		fs.EachRecord(r.add)
		r.mu.Unlock()
	}
}

// add decodes one record. The caller holds mu.
func (r *cofReader) add(rec *kgo.Record) {
	r.records++
	if last, ok := r.last[rec.Partition]; ok && rec.Offset <= last {
		r.problems = append(r.problems, fmt.Sprintf("partition %d: offset %d after %d", rec.Partition, rec.Offset, last))
	}
	if _, ok := r.first[rec.Partition]; !ok {
		r.first[rec.Partition] = rec.Offset
	}
	r.last[rec.Partition] = rec.Offset
	key, value, err := decodeCOF(rec.Key, rec.Value)
	if err != nil {
		r.problems = append(r.problems, fmt.Sprintf("partition %d offset %d: %v", rec.Partition, rec.Offset, err))
		return
	}
	if rec.Value == nil {
		delete(r.state, key)
		r.tombstones[key] = true
		return
	}
	r.state[key] = value
}

// decodeCOF renders a record of __consumer_offsets, decoded with Kafka's
// record types: the key's version says which. kmsg has the offset commit
// (key 0 and 1) and group metadata (2) records; offsetstopic the KIP-848
// ones (3, 5–8).
func decodeCOF(k, v []byte) (key, value string, err error) {
	if len(k) < 2 {
		return "", "", fmt.Errorf("key %x", k)
	}
	switch version := int16(k[0])<<8 | int16(k[1]); version {
	case 0, 1:
		var kk kmsg.OffsetCommitKey
		if err := kk.ReadFrom(k); err != nil {
			return "", "", err
		}
		key = fmt.Sprintf("offset %s %s/%d", kk.Group, kk.Topic, kk.Partition)
		if v != nil {
			var kv kmsg.OffsetCommitValue
			if err := kv.ReadFrom(v); err != nil {
				return "", "", err
			}
			if kv.Version != 3 {
				return "", "", fmt.Errorf("%s: OffsetCommitValue version %d, want 3 as Kafka writes", key, kv.Version)
			}
			value = fmt.Sprintf("%d epoch=%d meta=%q", kv.Offset, kv.LeaderEpoch, kv.Metadata)
		}
	case 2:
		var kk kmsg.GroupMetadataKey
		if err := kk.ReadFrom(k); err != nil {
			return "", "", err
		}
		key = "group " + kk.Group
		if v != nil {
			var kv kmsg.GroupMetadataValue
			if err := kv.ReadFrom(v); err != nil {
				return "", "", err
			}
			if kv.Version != 3 {
				return "", "", fmt.Errorf("%s: GroupMetadataValue version %d, want 3 as Kafka writes", key, kv.Version)
			}
			value = renderGroup(kv)
		}
	default:
		kk, err := offsetstopic.ReadKey(k)
		if err != nil {
			return "", "", err
		}
		kv, err := offsetstopic.ReadValue(kk, v)
		if err != nil {
			return "", "", err
		}
		key = strings.TrimPrefix(fmt.Sprintf("%T %+v", kk, kk), "*offsetstopic.")
		if v != nil {
			value = strings.TrimPrefix(fmt.Sprintf("%T %+v", kv, kv), "*offsetstopic.")
		}
	}
	return key, value, nil
}

func renderGroup(v kmsg.GroupMetadataValue) string {
	s := fmt.Sprintf("type=%s gen=%d protocol=%s leader=%s", v.ProtocolType, v.Generation, deref(v.Protocol), deref(v.Leader))
	for _, m := range v.Members {
		s += fmt.Sprintf(" member=%s client=%s session=%d", m.MemberID, m.ClientID, m.SessionTimeoutMillis)
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// snapshot returns the state read so far, the tombstones and the last
// offsets, and fails the test on any problem.
func (r *cofReader) snapshot() (state map[string]string, tombstones map[string]bool, last map[int32]int64) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) > 0 {
		r.t.Fatalf("reading %s: %s", cofTopic, strings.Join(r.problems, "; "))
	}
	return maps.Clone(r.state), maps.Clone(r.tombstones), maps.Clone(r.last)
}

// waitFor waits until check, given the state read, returns "" (else
// what is missing), failing the test after cofWait.
func (r *cofReader) waitFor(what string, check func(state map[string]string, tombstones map[string]bool) string) {
	r.t.Helper()
	var last string
	deadline := time.Now().Add(cofWait)
	for {
		state, tombs, _ := r.snapshot()
		if last = check(state, tombs); last == "" {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: %s\nstate read:\n%s", what, last, renderState(state))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func renderState(state map[string]string) string {
	keys := slices.Sorted(maps.Keys(state))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s = %s\n", k, state[k])
	}
	return b.String()
}

// offsetsOf is what the state says group has committed.
func offsetsOf(state map[string]string, group string) map[string]string {
	out := map[string]string{}
	pfx := "offset " + group + " "
	for k, v := range state {
		if strings.HasPrefix(k, pfx) {
			out[strings.TrimPrefix(k, pfx)] = strings.Fields(v)[0]
		}
	}
	return out
}

// fetchedOffsets is what OffsetFetch says group has committed, rendered
// as offsetsOf renders the topic's.
func fetchedOffsets(t *testing.T, adm *kadm.Client, group string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cofWait)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[string]string{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = fmt.Sprint(o.At)
		}
	})
	return out
}

func diffMaps(got, want map[string]string) string {
	if maps.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("got %v, want %v", got, want)
}

// startCOFNode starts a node on dir.
func startCOFNode(t *testing.T, dir string) *node.Node {
	return testkit.StartNode(t, node.Config{DataDir: dir, Groups: cofConfig})
}

// consume runs a consumer until it has read n records, committing them
// synchronously; the client stays in its group.
func consume(t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cofWait)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// TestConsumerOffsetsTopic: a classic group (franz-go, cooperative-sticky),
// a KIP-848 group (franz-go, kgo.ServerSideBalancer) and simple commits
// (kadm), one group's offset deleted and another group deleted; a
// groupless franz-go reader of __consumer_offsets decodes every record
// and finds exactly what OffsetFetch, DescribeGroups and
// ConsumerGroupDescribe say, with tombstones for what was deleted. Then
// the node restarts: a reader resuming where it was reads only higher
// offsets, and a new reader from the start finds the same state.
func TestConsumerOffsetsTopic(t *testing.T) {
	dir := t.TempDir()
	n := startCOFNode(t, dir)
	addr := n.KafkaAddr()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*cofWait)
	defer cancel()

	const topic, records = "cof-orders", 30
	createTopic(t, adm, topic, 3)
	franzProduce(t, addr, topic, makeRecs("cof", records, time.Now().Add(-time.Hour)))

	// Metadata: internal, one partition per shard, each led by this node.
	shards := n.Coordinator().Shards()
	td, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := td[cofTopic]
	if !ok || !d.IsInternal || len(d.Partitions) != shards || d.Err != nil {
		t.Fatalf("metadata of %s: %+v (listed: %v), want internal with %d partitions", cofTopic, d, ok, shards)
	}
	for _, p := range d.Partitions {
		if p.Leader != 0 || p.Err != nil {
			t.Errorf("partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
		}
	}
	if td, err := adm.ListTopics(ctx); err != nil || td.Has(cofTopic) {
		t.Errorf("ListTopics (internal topics excluded by the client) lists %s: %v", cofTopic, err)
	}

	// The groups.
	classic, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cof-classic-client"),
		kgo.ConsumerGroup("cof-classic"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer classic.Close()
	consume(t, classic, records)

	k848, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cof-848-client"),
		kgo.ConsumerGroup("cof-848"), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer k848.Close()
	consume(t, k848, records)

	simple := kadm.Offsets{}
	for p := range int32(3) {
		simple.AddOffset(topic, p, int64(p)+1, -1)
	}
	for _, g := range []string{"cof-simple", "cof-gone"} {
		if resp, err := adm.CommitOffsets(ctx, g, simple); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, resp.Error())
		}
	}

	r := newCOFReader(t, addr, nil)
	// Before the deletions: every group's offsets, cof-gone's too.
	groups := []string{"cof-classic", "cof-848", "cof-simple"}
	r.waitFor("the committed offsets", func(state map[string]string, _ map[string]bool) string {
		for _, g := range append(groups, "cof-gone") {
			if diff := diffMaps(offsetsOf(state, g), fetchedOffsets(t, adm, g)); diff != "" {
				return g + ": " + diff
			}
		}
		return ""
	})

	// Delete one offset of cof-simple, and the whole of cof-gone.
	if resp, err := adm.DeleteOffsets(ctx, "cof-simple", kadm.TopicsSet{topic: {0: {}}}); err != nil || resp.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, resp.Error())
	}
	if resp, err := adm.DeleteGroups(ctx, "cof-gone"); err != nil || resp.Error() != nil {
		t.Fatalf("delete group: %v %v", err, resp.Error())
	}

	// What the group APIs say, against what the topic says.
	memberID, generation := classic.GroupMetadata()
	described, err := adm.DescribeGroups(ctx, "cof-classic")
	if err != nil || described.Error() != nil {
		t.Fatalf("describe: %v %v", err, described.Error())
	}
	dg := described["cof-classic"]
	if len(dg.Members) != 1 || dg.Members[0].MemberID != memberID {
		t.Fatalf("described %+v, want one member %s", dg, memberID)
	}
	wantGroup := fmt.Sprintf("type=consumer gen=%d protocol=%s leader=%s member=%s client=cof-classic-client session=45000",
		generation, dg.Protocol, memberID, memberID)
	topicID := topicIDOf(t, adm, topic)
	r.waitFor("the state after the deletions", func(state map[string]string, tombs map[string]bool) string {
		for _, g := range groups {
			if diff := diffMaps(offsetsOf(state, g), fetchedOffsets(t, adm, g)); diff != "" {
				return g + ": " + diff
			}
		}
		if !tombs["offset cof-simple "+topic+"/0"] {
			return "no tombstone for cof-simple's deleted offset"
		}
		if len(offsetsOf(state, "cof-gone")) != 0 || state["group cof-gone"] != "" {
			return "cof-gone is still there"
		}
		if !tombs["group cof-gone"] || !tombs["offset cof-gone "+topic+"/2"] {
			return "no tombstones for cof-gone"
		}
		if got := state["group cof-classic"]; got != wantGroup {
			return fmt.Sprintf("classic group %q, want %q", got, wantGroup)
		}
		return check848(t, adm, state, "cof-848", topic, topicID)
	})

	// The reader's position and state, then a restart.
	classic.Close() // the groups empty
	k848.Close()
	r.waitFor("the groups emptied", func(state map[string]string, tombs map[string]bool) string {
		if g := state["group cof-classic"]; !strings.Contains(g, "protocol=<nil>") || strings.Contains(g, "member=") {
			return "classic group " + g
		}
		for k := range state {
			if strings.Contains(k, "Member") && strings.Contains(k, "cof-848") {
				return "848 member record left: " + k
			}
		}
		return ""
	})
	before, _, last := r.snapshot()
	r.close()
	shutdown(t, n)

	n = startCOFNode(t, dir)
	addr = n.KafkaAddr()
	from := map[int32]int64{}
	for p := range int32(shards) {
		from[p] = last[p] + 1 // where a reader goes on from; 1 where none was read
	}
	resumed := newCOFReader(t, addr, from)
	fresh := newCOFReader(t, addr, nil)
	for name, rr := range map[string]*cofReader{"resumed": resumed, "fresh": fresh} {
		rr.waitFor(name+" reader after the restart", func(state map[string]string, _ map[string]bool) string {
			return diffMaps(state, before)
		})
		_, _, got := rr.snapshot()
		rr.mu.Lock()
		first := maps.Clone(rr.first)
		rr.mu.Unlock()
		for p, off := range first {
			if off <= last[p] {
				t.Errorf("%s reader: partition %d read offset %d after the restart, at or below %d read before", name, p, off, last[p])
			}
		}
		if len(got) == 0 {
			t.Errorf("%s reader read nothing", name)
		}
	}
}

// check848 compares the topic's KIP-848 records of group with what
// ConsumerGroupDescribe says ("" if they agree).
func check848(t *testing.T, adm *kadm.Client, state map[string]string, group, topic string, topicID [16]byte) string {
	ctx, cancel := context.WithTimeout(context.Background(), cofWait)
	defer cancel()
	dgs, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return err.Error()
	}
	dg := dgs[group]
	if dg.Err != nil || len(dg.Members) != 1 {
		return fmt.Sprintf("described %+v", dg)
	}
	m := dg.Members[0]
	parts := func(s kadm.TopicsSet) string {
		ps := s.Sorted()
		if len(ps) == 0 {
			return "[]"
		}
		var ids []int32
		for _, tp := range ps {
			ids = append(ids, tp.Partitions...)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		return fmt.Sprintf("[{TopicID:%v Partitions:%v}]", topicID, ids)
	}
	want := map[string]string{
		fmt.Sprintf("ConsumerGroupMetadataKey &{Group:%s}", group):                                     fmt.Sprintf("ConsumerGroupMetadataValue &{Epoch:%d}", dg.Epoch),
		fmt.Sprintf("ConsumerGroupTargetAssignmentMetadataKey &{Group:%s}", group):                     fmt.Sprintf("ConsumerGroupTargetAssignmentMetadataValue &{AssignmentEpoch:%d}", dg.AssignmentEpoch),
		fmt.Sprintf("ConsumerGroupTargetAssignmentMemberKey &{Group:%s Member:%s}", group, m.MemberID): fmt.Sprintf("ConsumerGroupTargetAssignmentMemberValue &{TopicPartitions:%s}", parts(m.TargetAssignment)),
		fmt.Sprintf("ConsumerGroupCurrentMemberAssignmentKey &{Group:%s Member:%s}", group, m.MemberID): fmt.Sprintf("ConsumerGroupCurrentMemberAssignmentValue &{MemberEpoch:%d PreviousMemberEpoch:%d State:0 AssignedPartitions:%s PartitionsPendingRevocation:[]}",
			m.MemberEpoch, m.MemberEpoch, parts(m.Assignment)),
	}
	for k, v := range want {
		got := state[k]
		if k == fmt.Sprintf("ConsumerGroupCurrentMemberAssignmentKey &{Group:%s Member:%s}", group, m.MemberID) {
			// The previous epoch is whatever the member had before.
			got = regexp.MustCompile(`PreviousMemberEpoch:\d+`).ReplaceAllString(got, fmt.Sprintf("PreviousMemberEpoch:%d", m.MemberEpoch))
		}
		if got != v {
			return fmt.Sprintf("%s = %q, want %q", k, got, v)
		}
	}
	mk := fmt.Sprintf("ConsumerGroupMemberMetadataKey &{Group:%s Member:%s}", group, m.MemberID)
	mv := state[mk]
	for _, part := range []string{"ClientID:" + m.ClientID, "SubscribedTopicNames:[" + topic + "]", "SubscribedTopicRegex:<nil>"} {
		if !strings.Contains(mv, part) {
			return fmt.Sprintf("%s = %q, lacks %s", mk, mv, part)
		}
	}
	return ""
}

// topicIDOf is the topic's id, as Metadata gives it.
func topicIDOf(t *testing.T, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cofWait)
	defer cancel()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, td[topic].Err)
	}
	return td[topic].ID
}

// shutdown stops a node now (its test cleanup then does nothing more).
func shutdown(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// TestConsumerOffsetsTopicRefusesWrites: Kafka's answers to writes to an
// internal topic (kafka/consumer_offsets.go); reads of its offsets work
// as for any topic.
func TestConsumerOffsetsTopicRefusesWrites(t *testing.T) {
	n := startCOFNode(t, t.TempDir())
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), cofWait)
	defer cancel()

	err = cl.ProduceSync(ctx, &kgo.Record{Topic: cofTopic, Partition: 0, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("produce: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, cofTopic); !errors.Is(err, kerr.TopicAlreadyExists) && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		t.Errorf("create: %v %v, want TOPIC_ALREADY_EXISTS", err, resp.Err)
	}
	if resp, err := adm.DeleteTopic(ctx, cofTopic); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(resp.Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("delete: %v %v, want TOPIC_AUTHORIZATION_FAILED", err, resp.Err)
	}
	if resp, err := adm.CreatePartitions(ctx, 1, cofTopic); err != nil || !errors.Is(resp[cofTopic].Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("create partitions: %v %+v, want TOPIC_AUTHORIZATION_FAILED", err, resp)
	}
	// Still there, still internal.
	td, err := adm.ListTopicsWithInternal(ctx, cofTopic)
	if err != nil || !td[cofTopic].IsInternal || len(td[cofTopic].Partitions) != n.Coordinator().Shards() {
		t.Fatalf("after the refusals: %+v %v", td[cofTopic], err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, cofTopic)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rc.On(cofTopic, nil); err != nil || !slices.ContainsFunc(c.Configs, func(c kadm.Config) bool { return c.Key == "cleanup.policy" && deref(c.Value) == "compact" }) {
		t.Errorf("configs: %+v %v, want cleanup.policy=compact", c, err)
	}

	// A commit to a group of shard s lands in partition s: ListOffsets
	// sees it, earliest 0, and a timestamp before it finds it.
	const topic = "cof-list"
	createTopic(t, adm, topic, 1)
	group := "cof-list-group"
	shard := int32(n.Coordinator().ShardFor("", group))
	before := time.Now().Add(-time.Second).UnixMilli()
	offs := kadm.Offsets{}
	offs.AddOffset(topic, 0, 5, -1)
	if resp, err := adm.CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	var end int64
	testkit.Eventually(t, cofWait, "the commit reaches __consumer_offsets", func() bool {
		ends, err := adm.ListEndOffsets(ctx, cofTopic)
		if err != nil {
			return false
		}
		o, _ := ends.Lookup(cofTopic, shard)
		end = o.Offset
		return o.Err == nil && end > 0
	})
	starts, err := adm.ListStartOffsets(ctx, cofTopic)
	if o, _ := starts.Lookup(cofTopic, shard); err != nil || o.Err != nil || o.Offset != 0 {
		t.Errorf("earliest: %+v %v, want 0", o, err)
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, before, cofTopic)
	if o, _ := after.Lookup(cofTopic, shard); err != nil || o.Err != nil || o.Offset < 0 || o.Offset >= end {
		t.Errorf("by timestamp: %+v %v, want an offset below %d", o, err, end)
	}
}

// TestConsumerOffsetsBrokerRegex: a KIP-848 member subscribing with a
// regex that the broker resolves (franz-go's ConsumeRegex with
// kgo.ServerSideBalancer and no excludes) is assigned __consumer_offsets,
// as Kafka's broker-side resolution matches internal topics (franz-go's
// Test848RegexBrokerResolves).
func TestConsumerOffsetsBrokerRegex(t *testing.T) {
	n := startCOFNode(t, t.TempDir())
	// franz-go joins once its own evaluation of the regex (which skips
	// internal topics) finds a topic.
	createCl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer createCl.Close()
	createTopic(t, kadm.NewClient(createCl), "cof-regex-1", 1)
	assigned := make(chan map[string][]int32, 16)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumerGroup("cof-regex-848"),
		kgo.ConsumeRegex(), kgo.ConsumeTopics("cof-regex-.*", regexp.QuoteMeta(cofTopic)),
		kgo.ServerSideBalancer(), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { assigned <- a }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), cofWait)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	all := map[string][]int32{}
	for len(all[cofTopic]) < n.Coordinator().Shards() {
		select {
		case a := <-assigned:
			for topic, ps := range a {
				all[topic] = append(all[topic], ps...)
			}
		case <-ctx.Done():
			t.Fatalf("assigned %v, want every partition of %s", all, cofTopic)
		}
	}
	if !slices.Contains(cl.GetConsumeTopics(), cofTopic) {
		t.Errorf("consuming %v, not %s", cl.GetConsumeTopics(), cofTopic)
	}
}

// TestConsumerOffsetsClientRegex: a classic consumer's client-side regex
// sees __consumer_offsets in Metadata, marked internal, and skips it
// (franz-go's TestConsumeRegex): it logs it as skipped_internal.
func TestConsumerOffsetsClientRegex(t *testing.T) {
	n := startCOFNode(t, t.TempDir())
	createCl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer createCl.Close()
	createTopic(t, kadm.NewClient(createCl), "cof-cr-1", 1)
	logs := &skipLog{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumerGroup("cof-regex-classic"),
		kgo.ConsumeRegex(), kgo.ConsumeTopics("cof-cr-.*", regexp.QuoteMeta(cofTopic)),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.WithLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testkit.Eventually(t, cofWait, cofTopic+" skipped as internal, cof-cr-1 consumed", func() bool {
		cl.ForceMetadataRefresh()
		return slices.Equal(cl.GetConsumeTopics(), []string{"cof-cr-1"}) && logs.skipped(cofTopic)
	})
}

// skipLog records the topics franz-go's regex evaluation skips as
// internal.
type skipLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *skipLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *skipLog) Log(_ kgo.LogLevel, msg string, kv ...any) {
	if msg != "consumer regular expressions evaluated on new topics" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "skipped_internal" {
			if ts, ok := kv[i+1].([]string); ok {
				l.seen = append(l.seen, ts...)
			}
		}
	}
}

func (l *skipLog) skipped(topic string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.seen, topic)
}

// shardOf is the coordinator shard of a default-tenant group when there
// are shards of them: coordinator.Coordinator.ShardFor's hash, for tests
// that run the nodes as processes.
func shardOf(group string, shards int) int32 {
	h := fnv.New32a()
	h.Write([]byte{0})
	h.Write([]byte(group))
	return int32(h.Sum32() % uint32(shards))
}

// TestClusterConsumerOffsets: on three nodes, partition p of
// __consumer_offsets is led, in every node's Metadata, by the node that
// FindCoordinator names for the groups of shard p, and is read there. When
// a coordinator is killed, its shards' partitions move with them: the new
// owner serves them, and the reader, going on from where it was, reads
// only higher offsets and the same state as OffsetFetch.
func TestClusterConsumerOffsets(t *testing.T) {
	c := startCluster(t, 3, 3)
	adm := c.admin()
	const shards = 16 // the nodes' default
	const topic = "cof-cluster"
	c.createTopicOn(topic, 1, 1)

	// A group of every shard, to ask FindCoordinator about its owner.
	byShard := map[int32]string{}
	for i := 0; len(byShard) < shards; i++ {
		g := fmt.Sprintf("cofc-%d", i)
		if _, ok := byShard[shardOf(g, shards)]; !ok {
			byShard[shardOf(g, shards)] = g
		}
	}
	leadersAgree := func() (bool, string) {
		owners := map[int32]int32{}
		for p, g := range byShard {
			id, err := c.coordinatorOf(adm, g)
			if err != nil {
				return false, fmt.Sprintf("coordinator of %s: %v", g, err)
			}
			owners[p] = id
		}
		for _, id := range c.live() {
			leaders, err := partitionLeaders(c.node(id).Addr, cofTopic)
			if err != nil {
				return false, fmt.Sprintf("node %d: %v", id, err)
			}
			if !maps.Equal(leaders, owners) {
				return false, fmt.Sprintf("node %d: leaders %v, coordinators %v", id, leaders, owners)
			}
		}
		return true, ""
	}
	groupEventually(t, 30*time.Second, "each partition led by its shard's coordinator", leadersAgree)

	// A group on each node, with a commit.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	commit := func(g string, offset int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.AddOffset(topic, 0, offset, -1)
		groupEventually(t, 30*time.Second, "commit to "+g, func() (bool, string) {
			resp, err := adm.CommitOffsets(ctx, g, offs)
			if err == nil {
				err = resp.Error()
			}
			return err == nil, fmt.Sprint(err)
		})
	}
	var groups []string
	for _, id := range c.live() {
		g := c.groupOn(adm, "cofc-node", id)
		groups = append(groups, g)
		commit(g, int64(id)*10)
	}
	r := newCOFReaderSeeds(t, c.seeds(), nil)
	matches := func(state map[string]string, _ map[string]bool) string {
		for _, g := range groups {
			if diff := diffMaps(offsetsOf(state, g), fetchedOffsets(t, adm, g)); diff != "" {
				return g + ": " + diff
			}
		}
		return ""
	}
	r.waitFor("every node's groups", matches)
	_, _, before := r.snapshot()

	// Kill the coordinator of the last group; its shards move.
	victim := c.live()[len(c.live())-1]
	moved := groups[len(groups)-1]
	p := shardOf(moved, shards)
	c.node(victim).Kill()
	groupEventually(t, 30*time.Second, "the victim's shards owned elsewhere", func() (bool, string) {
		id, err := c.coordinatorOf(adm, moved)
		return err == nil && id != victim, fmt.Sprintf("coordinator %d, %v", id, err)
	})
	groupEventually(t, 30*time.Second, "each partition led by its shard's coordinator, after the kill", leadersAgree)
	commit(moved, 99)
	r.waitFor("the moved group's new commit", matches)
	_, _, after := r.snapshot()
	if after[p] <= before[p] {
		t.Errorf("partition %d: last offset read %d after the move, %d before", p, after[p], before[p])
	}
}

// --offsets-topic=false: no __consumer_offsets in Metadata, and a commit
// still works.
func TestConsumerOffsetsTopicOff(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir(), "--offsets-topic=false")
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	extCreateTopic(t, p.Addr, "off", 1)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "off", Partition: 0, At: 0})
	if resp, err := adm.CommitOffsets(ctx, "off-g", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	ts, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ts.Has("__consumer_offsets") || !ts.Has("off") {
		t.Fatalf("topics %v: want off and no __consumer_offsets", ts.Names())
	}
}
