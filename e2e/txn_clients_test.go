package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatCommitted reads a topic to its end with kcat (librdkafka) as a
// read_committed consumer and returns the values, sorted.
func kcatCommitted(t *testing.T, addr, topic string) []string {
	t.Helper()
	out := extRun(t, nil, kcatPath(t), "-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-X", "isolation.level=read_committed", "-f", "%s\n")
	var vs []string
	for _, l := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		if l != "" {
			vs = append(vs, l)
		}
	}
	slices.Sort(vs)
	return vs
}

func txnTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(addr)))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
}

func wantValues(prefixes []string, n int) []string {
	var out []string
	for _, p := range prefixes {
		for i := range n {
			out = append(out, fmt.Sprintf("%s-%02d", p, i))
		}
	}
	slices.Sort(out)
	return out
}

// TestTxnSaramaProducer: Sarama's transactional producer commits a
// transaction, aborts one and commits another; kcat reading with
// read_committed sees the committed records only.
func TestTxnSaramaProducer(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	const topic = "txn-sarama"
	txnTopic(t, n.KafkaAddr(), topic, 3)
	saramaTxnRounds(t, n.KafkaAddr(), topic, "sarama-txn")
	if got, want := kcatCommitted(t, n.KafkaAddr(), topic), wantValues([]string{"c1", "c2"}, 10); !slices.Equal(got, want) {
		t.Fatalf("read_committed: %v\nwant %v", got, want)
	}
}

// TestTxnConfluentProducer: confluent-kafka-go's (librdkafka's)
// transactional producer commits, aborts and commits; kcat reading with
// read_committed sees the committed records only.
func TestTxnConfluentProducer(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	const topic = "txn-confluent"
	txnTopic(t, n.KafkaAddr(), topic, 3)
	ctx, cancel := context.WithTimeout(context.Background(), confluentTimeout)
	defer cancel()
	logs := newRdLog()
	defer logs.close()
	p, err := kafka.NewProducer(rdConfig(n.KafkaAddr(), "cohort-e2e-txn", logs, kafka.ConfigMap{"transactional.id": "confluent-txn"}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("init: %v", err)
	}
	tp := topic
	for _, round := range []string{"c1", "a1", "c2"} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for i := range 10 {
			if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &tp, Partition: kafka.PartitionAny}, Value: fmt.Appendf(nil, "%s-%02d", round, i)}, nil); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if round[0] == 'a' {
			err = p.AbortTransaction(ctx)
		} else {
			err = p.CommitTransaction(ctx)
		}
		if err != nil {
			t.Fatalf("end %s: %v", round, err)
		}
	}
	go func() {
		for range p.Events() {
		}
	}()
	if got, want := kcatCommitted(t, n.KafkaAddr(), topic), wantValues([]string{"c1", "c2"}, 10); !slices.Equal(got, want) {
		t.Fatalf("read_committed: %v\nwant %v", got, want)
	}
}

// saramaTxnRounds has Sarama's transactional producer (id txnID) commit
// ten records c1-00..c1-09 to topic, abort ten a1-.., and commit ten
// c2-...
func saramaTxnRounds(t *testing.T, addr, topic, txnID string) {
	t.Helper()
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = txnID
	cfg.Producer.Retry.Max = 10
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, round := range []string{"c1", "a1", "c2"} {
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		var msgs []*sarama.ProducerMessage
		for i := range 10 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("%s-%02d", round, i))})
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("send: %v", err)
		}
		if round[0] == 'a' {
			err = p.AbortTxn()
		} else {
			err = p.CommitTxn()
		}
		if err != nil {
			t.Fatalf("end %s: %v", round, err)
		}
	}
}

// TestTxnConfluentConsumeTransformProduce is exactly-once
// consume-transform-produce with confluent-kafka-go (librdkafka): a
// read_committed group consumer reads an input topic, and a transactional
// producer writes one output record per input record and commits the
// consumer's positions inside the same transaction
// (SendOffsetsToTransaction: AddOffsetsToTxn and TxnOffsetCommit with
// the group's generation and member id). The output, read with
// read_committed by kcat, holds every input record once, and the group's
// committed offsets are the input's ends.
func TestTxnConfluentConsumeTransformProduce(t *testing.T) {
	// Its groups have one member each: the default 3 s initial
	// rebalance delay would only wait for members that never come.
	var cfg node.Config
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := testkit.StartNode(t, cfg)
	addr := n.KafkaAddr()
	const in, out, group, records = "eos-in", "eos-out", "eos-group", 30
	txnTopic(t, addr, in, 3)
	txnTopic(t, addr, out, 3)
	ctx, cancel := context.WithTimeout(context.Background(), confluentTimeout)
	defer cancel()
	src := mustClient(t, kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(in), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range records {
		if err := src.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "in-%02d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	logs := newRdLog()
	defer logs.close()
	c, err := kafka.NewConsumer(rdConfig(addr, "cohort-e2e-eos-consumer", logs, kafka.ConfigMap{
		"group.id":           group,
		"isolation.level":    "read_committed",
		"enable.auto.commit": false,
		"auto.offset.reset":  "earliest",
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(in, nil); err != nil {
		t.Fatal(err)
	}
	p, err := kafka.NewProducer(rdConfig(addr, "cohort-e2e-eos-producer", logs, kafka.ConfigMap{"transactional.id": "eos-confluent"}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() {
		for range p.Events() {
		}
	}()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("init: %v", err)
	}

	outTopic := out
	done := 0
	for done < records {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d input records processed before the deadline", done, records)
		}
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			t.Fatalf("consume: %v", err)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		v := strings.Replace(string(m.Value), "in-", "out-", 1)
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &outTopic, Partition: kafka.PartitionAny}, Value: []byte(v)}, nil); err != nil {
			t.Fatalf("produce: %v", err)
		}
		assigned, err := c.Assignment()
		if err != nil {
			t.Fatal(err)
		}
		positions, err := c.Position(assigned)
		if err != nil {
			t.Fatal(err)
		}
		meta, err := c.GetConsumerGroupMetadata()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SendOffsetsToTransaction(ctx, positions, meta); err != nil {
			t.Fatalf("send offsets: %v", err)
		}
		if err := p.CommitTransaction(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		done++
	}

	var want []string
	for i := range records {
		want = append(want, fmt.Sprintf("out-%02d", i))
	}
	if got := kcatCommitted(t, addr, out); !slices.Equal(got, want) {
		t.Fatalf("read_committed output: %v\nwant %v", got, want)
	}
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(addr)))
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if e.Offset != records/3 {
			t.Errorf("input %s/%d ends at %d, want %d: the records were not spread", in, e.Partition, e.Offset, records/3)
		}
		if got, ok := committed.Lookup(in, e.Partition); !ok || got.At != e.Offset {
			t.Errorf("group offset of %s/%d: %+v (found %v), want the end %d", in, e.Partition, got.At, ok, e.Offset)
		}
	})
}
