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
