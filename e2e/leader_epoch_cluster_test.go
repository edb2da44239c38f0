package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLeaderEpochClusterConsumers: a franz-go and a librdkafka consumer
// read two partitions that node 2 of a cluster leads. Node 2 is killed
// (-9) and started again, which gives its partitions a new leader epoch,
// as Kafka's controller does for a partition whose leader comes back.
// Both clients see the new epoch in Metadata, are fenced on their next
// fetch (FENCED_LEADER_EPOCH), validate their positions with
// OffsetForLeaderEpoch (KIP-320: the old epoch ends where the new began)
// and carry on from exactly where they were: every record once, in
// order, none skipped, none read again. Metadata, Fetch and the batches
// carry the new epoch.
func TestLeaderEpochClusterConsumers(t *testing.T) {
	const topic, perPart = "epoch-moves", 20
	c := startCluster(t, 1, 2)
	c.createTopicOn(topic, 2, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	produce := func(round int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var recs []*kgo.Record
		for p := range int32(2) {
			for i := range perPart {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d-%d", round, p, i)})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", round, err)
		}
	}
	produce(0)

	// seen records each client's offsets per partition.
	type seen struct {
		mu   sync.Mutex
		offs map[int32][]int64
	}
	count := func(s *seen) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.offs[0]) + len(s.offs[1])
	}
	franz := &seen{offs: map[int32][]int64{}}
	fcl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumerGroup("epoch-franz"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer fcl.Close()
	fctx, fstop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for fctx.Err() == nil {
			fs := fcl.PollFetches(fctx)
			fs.EachRecord(func(r *kgo.Record) {
				franz.mu.Lock()
				franz.offs[r.Partition] = append(franz.offs[r.Partition], r.Offset)
				franz.mu.Unlock()
			})
		}
	}()

	logs := newRdLog()
	defer logs.close()
	rd, err := kafka.NewConsumer(rdConfig(c.node(1).Addr+","+c.node(2).Addr, "cohort-e2e-epochs", logs, kafka.ConfigMap{
		"group.id": "epoch-rd", "auto.offset.reset": "earliest", "fetch.wait.max.ms": 200,
		"topic.metadata.refresh.interval.ms": 1000,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := rd.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	rdSeen := &seen{offs: map[int32][]int64{}}
	rdPoll := func(until func() bool, what string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !until() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: librdkafka has %v, franz-go %v", what, rdSeen.offs, franz.offs)
			}
			switch ev := rd.Poll(100).(type) {
			case *kafka.Message:
				rdSeen.mu.Lock()
				rdSeen.offs[ev.TopicPartition.Partition] = append(rdSeen.offs[ev.TopicPartition.Partition], int64(ev.TopicPartition.Offset))
				rdSeen.mu.Unlock()
			case kafka.Error:
				t.Logf("librdkafka: %v", ev)
			}
		}
	}
	rdPoll(func() bool { return count(franz) == 2*perPart && count(rdSeen) == 2*perPart }, "the first round")

	epochOf := func() int32 {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(1).Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("metadata: %v %+v", err, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return -1
		}
		return p.LeaderEpoch
	}
	before := epochOf()
	c.node(2).Kill()
	c.start(2)
	c.waitServing()
	testkit.Eventually(t, 30*time.Second, "a new leader epoch in Metadata", func() bool { return epochOf() > before })
	produce(1)
	rdPoll(func() bool { return count(franz) >= 4*perPart && count(rdSeen) >= 4*perPart }, "the second round")
	fstop()
	wg.Wait()

	for name, s := range map[string]*seen{"franz-go": franz, "librdkafka": rdSeen} {
		for p := range int32(2) {
			got := s.offs[p]
			ok := len(got) == 2*perPart
			for i := 0; ok && i < len(got); i++ {
				ok = got[i] == int64(i)
			}
			if !ok {
				t.Errorf("%s partition %d: offsets %v, want 0 to %d once each in order", name, p, got, 2*perPart-1)
			}
		}
	}
	// Both checked their positions against the new epoch.
	mfs := scrape(t, c.node(2).HTTPAddr)
	if n := sample(mfs, "cohort_requests_total", map[string]string{"api": "OffsetForLeaderEpoch", "error_code": "0"}); n < 1 {
		t.Errorf("node 2 answered no OffsetForLeaderEpoch after its restart")
	}
	logs.mu.Lock()
	rdValidated := len(logs.sent["cohort-e2e-epochs"]["OffsetForLeaderEpoch"]) > 0
	logs.mu.Unlock()
	if !rdValidated {
		t.Errorf("librdkafka sent no OffsetForLeaderEpoch; it sent %v", logs.summary())
	}
}
