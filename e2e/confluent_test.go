package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluentTimeout bounds the whole confluent-kafka-go test.
const confluentTimeout = 2 * time.Minute

// rdLog collects librdkafka's debug log ("debug": "protocol,broker"),
// forwarded by confluent-kafka-go to a shared channel: for each client
// instance, the request versions it sent, and any log lines that show a
// protocol problem.
type rdLog struct {
	ch   chan kafka.LogEvent
	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	sent     map[string]map[string]map[int]bool // client → request → versions
	problems []string
	lines    int
	tags     map[string]int
}

// reportProblems fails t with the first 20 problems librdkafka logged.
func (l *rdLog) reportProblems(t *testing.T) {
	t.Helper()
	for i, p := range l.problems {
		if i == 20 {
			t.Errorf("... %d more", len(l.problems)-i)
			break
		}
		t.Errorf("librdkafka: %s", p)
	}
}

// rdSent matches librdkafka's protocol debug line for a request on the
// wire, e.g. "Sent ProduceRequest (v9, 1234 bytes @ 0, CorrId 5)".
var rdSent = regexp.MustCompile(`Sent (\w+)Request \(v(\d+),`)

// rdProblemTags are librdkafka log tags for malformed or refused
// protocol exchanges.
var rdProblemTags = map[string]bool{"PROTOERR": true, "PROTOUFLOW": true}

func newRdLog() *rdLog {
	l := &rdLog{
		ch:   make(chan kafka.LogEvent, 1024),
		done: make(chan struct{}),
		sent: map[string]map[string]map[int]bool{},
		tags: map[string]int{},
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case ev := <-l.ch:
				l.add(ev)
			case <-l.done:
				return
			}
		}
	}()
	return l
}

func (l *rdLog) add(ev kafka.LogEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines++
	l.tags[ev.Tag]++
	// Two closes are librdkafka's own housekeeping, not failures: it drops
	// its bootstrap connection once Metadata names the broker
	// (_DESTROY_BROKER), and its internal GroupCoordinator handle closes
	// whatever it had open when FindCoordinator names the coordinator
	// ("nodename change"; whether it had started connecting is timing).
	// Any other connection failure is a problem.
	if ev.Tag == "FAIL" && !strings.Contains(ev.Message, "_DESTROY_BROKER") && !strings.Contains(ev.Message, "due to nodename change") {
		l.problems = append(l.problems, fmt.Sprintf("%s %s: %s", ev.Name, ev.Tag, ev.Message))
	}
	if m := rdSent.FindStringSubmatch(ev.Message); m != nil {
		// The instance name is client.id#type-n, e.g.
		// "cohort-e2e-producer#producer-3"; the test gives each kind of
		// client its own client.id.
		client, _, _ := strings.Cut(ev.Name, "#")
		if l.sent[client] == nil {
			l.sent[client] = map[string]map[int]bool{}
		}
		if l.sent[client][m[1]] == nil {
			l.sent[client][m[1]] = map[int]bool{}
		}
		var v int
		fmt.Sscan(m[2], &v)
		l.sent[client][m[1]][v] = true
	}
	msg := strings.ToLower(ev.Message)
	if rdProblemTags[ev.Tag] || strings.Contains(msg, "parse failure") || strings.Contains(msg, "underflow") ||
		strings.Contains(msg, "unsupported_version") || strings.Contains(msg, "unsupported version") ||
		strings.Contains(msg, "invalid_request") || strings.Contains(msg, "corrupt") {
		l.problems = append(l.problems, fmt.Sprintf("%s %s: %s", ev.Name, ev.Tag, ev.Message))
	}
}

// close stops collecting. Call it after every client is closed.
func (l *rdLog) close() {
	close(l.done)
	l.wg.Wait()
	for {
		select {
		case ev := <-l.ch:
			l.add(ev)
		default:
			return
		}
	}
}

// summary is one line per client kind: request → versions.
func (l *rdLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	clients := make([]string, 0, len(l.sent))
	for c := range l.sent {
		clients = append(clients, c)
	}
	sort.Strings(clients)
	for _, c := range clients {
		fmt.Fprintf(&b, "\n  %s:", c)
		reqs := make([]string, 0, len(l.sent[c]))
		for r := range l.sent[c] {
			reqs = append(reqs, r)
		}
		sort.Strings(reqs)
		for _, r := range reqs {
			var vs []string
			for v := range l.sent[c][r] {
				vs = append(vs, fmt.Sprint("v", v))
			}
			sort.Strings(vs)
			fmt.Fprintf(&b, " %s %s;", r, strings.Join(vs, ","))
		}
	}
	return b.String()
}

// rdConfig is the configuration every client in the test shares: the
// Cohort node, and librdkafka's protocol and broker debugging to l.
func rdConfig(addr, clientID string, l *rdLog, extra kafka.ConfigMap) *kafka.ConfigMap {
	cfg := kafka.ConfigMap{
		"bootstrap.servers":      addr,
		"client.id":              clientID,
		"broker.address.family":  "v4",
		"debug":                  "protocol,broker",
		"go.logs.channel.enable": true,
		"go.logs.channel":        l.ch,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return &cfg
}

// TestConfluentProduceConsume: confluent-kafka-go (cgo over its bundled
// librdkafka) against Cohort, groupless.
//
//   - AdminClient: CreateTopics (4 partitions, a topic config), again to
//     get TOPIC_ALREADY_EXISTS; DescribeConfigs of the topic;
//     DescribeCluster.
//   - An idempotent producer (acks=all) per compression codec (none, gzip,
//     snappy, lz4, zstd), 2,500 records each with keys, headers and
//     timestamps; the delivery reports give partitions and offsets.
//   - A consumer with a group.id (confluent-kafka-go demands one) but no
//     subscription: Assign of every partition at OffsetBeginning, no
//     commits, no offset store. It reads back exactly the records, at the
//     reported offsets, up to partition EOF; QueryWatermarkOffsets and
//     OffsetsForTimes agree with what was produced.
//   - librdkafka's protocol debug log: which request versions each client
//     sent (logged), that nothing failed to parse, and that the consumer
//     sent no group request (JoinGroup, SyncGroup, Heartbeat, OffsetFetch,
//     OffsetCommit, LeaveGroup), which Cohort does not serve.
//
// librdkafka 2.15.1 picks ApiVersions v3, Metadata v13, CreateTopics v4,
// DescribeConfigs v1, InitProducerId v4, Produce v10, Fetch v16 (topic
// ids), ListOffsets v7 and FindCoordinator v2; DescribeCluster is a
// Metadata request. Because of its group.id the consumer looks up its
// coordinator (FindCoordinator) but, assigned and not committing, sends
// nothing else to it.
func TestConfluentProduceConsume(t *testing.T) {
	ver, verStr := kafka.LibraryVersion()
	t.Logf("confluent-kafka-go with librdkafka %s (0x%08x)", verStr, ver)

	n := testkit.StartNode(t, node.Config{})
	addr := n.KafkaAddr()
	ctx, cancel := context.WithTimeout(context.Background(), confluentTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	logs := newRdLog()
	closedLogs := false
	defer func() {
		if !closedLogs {
			logs.close()
		}
	}()

	const topic = "confluent"
	const partitions = 4

	// Admin.
	adm, err := kafka.NewAdminClient(rdConfig(addr, "cohort-e2e-admin", logs, nil))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	spec := kafka.TopicSpecification{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1,
		Config: map[string]string{"retention.ms": "3600000"}}
	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{spec}, kafka.SetAdminOperationTimeout(10*time.Second))
	if err != nil {
		adm.Close()
		t.Fatalf("create topics: %v", err)
	}
	if len(res) != 1 || res[0].Topic != topic || res[0].Error.Code() != kafka.ErrNoError {
		adm.Close()
		t.Fatalf("create topic %s: %v", topic, res)
	}
	res, err = adm.CreateTopics(ctx, []kafka.TopicSpecification{spec})
	if err != nil {
		t.Errorf("create topics again: %v", err)
	} else if len(res) != 1 || res[0].Error.Code() != kafka.ErrTopicAlreadyExists {
		t.Errorf("create existing topic: %v, want %v", res, kafka.ErrTopicAlreadyExists)
	}
	// An invalid partition count is refused for that topic only.
	res, err = adm.CreateTopics(ctx, []kafka.TopicSpecification{
		{Topic: "confluent-bad", NumPartitions: 1, ReplicationFactor: 3},
		{Topic: "confluent-other", NumPartitions: 2, ReplicationFactor: 1},
	})
	if err != nil {
		t.Errorf("create two topics: %v", err)
	} else if len(res) != 2 || res[0].Error.Code() != kafka.ErrInvalidReplicationFactor || res[1].Error.Code() != kafka.ErrNoError {
		t.Errorf("create topics with replication factor 3 and 1: %v, want [%v, success]", res, kafka.ErrInvalidReplicationFactor)
	}

	cres, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		t.Errorf("describe configs: %v", err)
	} else if len(cres) != 1 || cres[0].Error.Code() != kafka.ErrNoError {
		t.Errorf("describe configs of %s: %v", topic, cres)
	} else {
		cfg := cres[0].Config
		if e, ok := cfg["retention.ms"]; !ok || e.Value != "3600000" || e.Source != kafka.ConfigSourceDynamicTopic {
			t.Errorf("retention.ms: %+v, want 3600000 from %v", e, kafka.ConfigSourceDynamicTopic)
		}
		if e, ok := cfg["cleanup.policy"]; !ok || e.Value != "delete" || e.Source != kafka.ConfigSourceDefault {
			t.Errorf("cleanup.policy: %+v, want delete from %v", e, kafka.ConfigSourceDefault)
		}
		t.Logf("describe configs: %d topic configs", len(cfg))
	}

	cl, err := adm.DescribeCluster(ctx)
	if err != nil {
		t.Errorf("describe cluster: %v", err)
	} else {
		if cl.ClusterID == nil || *cl.ClusterID == "" {
			t.Errorf("describe cluster: no cluster id")
		}
		if len(cl.Nodes) != 1 || cl.Controller == nil || cl.Controller.ID != cl.Nodes[0].ID ||
			fmt.Sprintf("%s:%d", cl.Nodes[0].Host, cl.Nodes[0].Port) != addr {
			t.Errorf("describe cluster: controller %v, nodes %v; want this one node at %s", cl.Controller, cl.Nodes, addr)
		}
	}
	adm.Close()

	// Produce, one idempotent producer per codec.
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	const perCodec = 2500
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var want []rec
	for ci, codec := range codecs {
		recs := makeRecs("confluent-"+codec, perCodec, base.Add(time.Duration(ci)*time.Minute))
		want = append(want, confluentProduce(t, ctx, addr, logs, topic, codec, recs)...)
	}
	used := map[int32]int64{}
	for _, r := range want {
		used[r.Partition]++
	}
	if len(used) != partitions {
		t.Errorf("records went to partitions %v, want all %d", used, partitions)
	}
	// Each partition's offsets are 0..count-1: an idempotent producer
	// neither loses nor duplicates.
	seen := map[int32]map[int64]bool{}
	for _, r := range want {
		if seen[r.Partition] == nil {
			seen[r.Partition] = map[int64]bool{}
		}
		if r.Offset < 0 || r.Offset >= used[r.Partition] || seen[r.Partition][r.Offset] {
			t.Fatalf("delivery report: partition %d offset %d (repeated or beyond %d records)", r.Partition, r.Offset, used[r.Partition])
		}
		seen[r.Partition][r.Offset] = true
	}

	// Consume, groupless: Assign, no subscription.
	c, err := kafka.NewConsumer(rdConfig(addr, "cohort-e2e-consumer", logs, kafka.ConfigMap{
		"group.id":                 "cohort-e2e-assign-only",
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
		"auto.offset.reset":        "error",
		"enable.partition.eof":     true,
	}))
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	consumerClosed := false
	defer func() {
		if !consumerClosed {
			c.Close()
		}
	}()
	var assign []kafka.TopicPartition
	for p := int32(0); p < partitions; p++ {
		assign = append(assign, kafka.TopicPartition{Topic: ptr(topic), Partition: p, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(assign); err != nil {
		t.Fatalf("assign: %v", err)
	}
	var got []rec
	eof := map[int32]kafka.Offset{}
	for len(got) < len(want) || len(eof) < partitions {
		if time.Now().After(deadline) {
			t.Fatalf("consume: %d of %d records, EOF on %v, within %v", len(got), len(want), eof, confluentTimeout)
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("consume: %v", ev.TopicPartition.Error)
			}
			if ev.TimestampType != kafka.TimestampCreateTime {
				t.Fatalf("consume: timestamp type %v", ev.TimestampType)
			}
			r := rec{Partition: ev.TopicPartition.Partition, Offset: int64(ev.TopicPartition.Offset),
				Key: ev.Key, Value: ev.Value, Timestamp: ev.Timestamp}
			for _, h := range ev.Headers {
				r.Headers = append(r.Headers, hdr{h.Key, string(h.Value)})
			}
			got = append(got, r)
			delete(eof, r.Partition) // EOF must come after the last record
		case kafka.PartitionEOF:
			eof[ev.Partition] = ev.Offset
		case kafka.Error:
			t.Fatalf("consumer error: %v (code %v, fatal %v)", ev, ev.Code(), ev.IsFatal())
		}
	}
	checkSame(t, want, got, false)
	for p, off := range eof {
		if int64(off) != used[p] {
			t.Errorf("partition %d: EOF at %d, want %d", p, off, used[p])
		}
	}

	// Watermarks: low 0, high the record count.
	for p := int32(0); p < partitions; p++ {
		lo, hi, err := c.QueryWatermarkOffsets(topic, p, 10000)
		if err != nil {
			t.Errorf("query watermarks of partition %d: %v", p, err)
		} else if lo != 0 || hi != used[p] {
			t.Errorf("partition %d watermarks [%d, %d), want [0, %d)", p, lo, hi, used[p])
		}
	}

	// OffsetsForTimes: the first offset with a timestamp at or after each
	// time, or -1 when there is none.
	targets := []time.Time{base.Add(-time.Hour), base.Add(1234 * time.Millisecond),
		base.Add(2*time.Minute + 77*time.Millisecond), base.Add(4*time.Minute + 2499*time.Millisecond),
		base.Add(2 * time.Hour)}
	for _, ts := range targets {
		var q []kafka.TopicPartition
		for p := int32(0); p < partitions; p++ {
			q = append(q, kafka.TopicPartition{Topic: ptr(topic), Partition: p, Offset: kafka.Offset(ts.UnixMilli())})
		}
		offs, err := c.OffsetsForTimes(q, 10000)
		if err != nil {
			t.Errorf("offsets for time %v: %v", ts, err)
			continue
		}
		for _, o := range offs {
			exp := int64(-1)
			for _, r := range want {
				if r.Partition == o.Partition && !r.Timestamp.Before(ts) && (exp < 0 || r.Offset < exp) {
					exp = r.Offset
				}
			}
			if o.Error != nil || int64(o.Offset) != exp {
				t.Errorf("offsets for time %v, partition %d: %v (%v), want %d", ts.Sub(base), o.Partition, o.Offset, o.Error, exp)
			}
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("close consumer: %v", err)
	}
	consumerClosed = true

	logs.close()
	closedLogs = true
	t.Logf("librdkafka debug: %d lines; requests sent:%s", logs.lines, logs.summary())
	t.Logf("librdkafka debug log tags: %v", logs.tags)
	for _, c := range []string{"admin", "producer", "consumer"} {
		if len(logs.sent["cohort-e2e-"+c]) == 0 {
			t.Errorf("no protocol debug lines from the %s", c)
		}
	}
	for _, r := range []string{"JoinGroup", "SyncGroup", "Heartbeat", "OffsetFetch", "OffsetCommit", "LeaveGroup", "ConsumerGroupHeartbeat"} {
		if vs := logs.sent["cohort-e2e-consumer"][r]; len(vs) > 0 {
			t.Errorf("assign-only consumer sent %sRequest %v", r, vs)
		}
	}
	logs.reportProblems(t)
}

// confluentProduce produces recs to topic with one idempotent
// confluent-kafka-go producer (acks=all) using codec, and returns them
// with the partitions and offsets of the delivery reports.
func confluentProduce(t *testing.T, ctx context.Context, addr string, logs *rdLog, topic, codec string, recs []rec) []rec {
	t.Helper()
	p, err := kafka.NewProducer(rdConfig(addr, "cohort-e2e-producer", logs, kafka.ConfigMap{
		"enable.idempotence": true,
		"acks":               "all",
		"compression.type":   codec,
		"linger.ms":          5,
	}))
	if err != nil {
		t.Fatalf("producer with %s: %v", codec, err)
	}
	defer p.Close()
	reports := make(chan kafka.Event, len(recs))
	for i, r := range recs {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: ptr(topic), Partition: kafka.PartitionAny},
			Key:            r.Key,
			Value:          r.Value,
			Timestamp:      r.Timestamp,
			Opaque:         i,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
		}
		if err := p.Produce(m, reports); err != nil {
			t.Fatalf("produce with %s: %v", codec, err)
		}
	}
	out := make([]rec, len(recs))
	done := make([]bool, len(recs))
	for range recs {
		var ev kafka.Event
		select {
		case ev = <-reports:
		case <-ctx.Done():
			t.Fatalf("produce with %s: delivery reports: %v", codec, ctx.Err())
		}
		m, ok := ev.(*kafka.Message)
		if !ok {
			t.Fatalf("produce with %s: unexpected event %v", codec, ev)
		}
		if m.TopicPartition.Error != nil {
			t.Fatalf("produce with %s: %v", codec, m.TopicPartition.Error)
		}
		i := m.Opaque.(int)
		if done[i] {
			t.Fatalf("produce with %s: two delivery reports for record %d", codec, i)
		}
		done[i] = true
		out[i] = recs[i]
		out[i].Partition, out[i].Offset = m.TopicPartition.Partition, int64(m.TopicPartition.Offset)
	}
	// Every record is acknowledged; also no producer-level error.
	for {
		select {
		case ev := <-p.Events():
			if e, ok := ev.(kafka.Error); ok {
				t.Fatalf("producer with %s: %v", codec, e)
			}
			continue
		default:
		}
		break
	}
	return out
}

func ptr[T any](v T) *T { return &v }
