package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactedKeylessConfluent is librdkafka's own
// tests/0011-produce_batch.c test_message_single_partition_record_fail,
// through confluent-kafka-go: 100 messages to partition 0 of a topic
// made compacted with IncrementalAlterConfigs APPEND, every tenth without
// a key.
//
// What Kafka and librdkafka do, and so what this test expects: Kafka's
// LogValidator refuses the whole batch (nothing appended) with
// INVALID_RECORD and names each keyless record in RecordErrors (Produce
// v8+, KIP-467). librdkafka (rdkafka_request.c,
// rd_kafka_msgbatch_handle_Produce_result_record_errors) does not retry
// INVALID_RECORD: it fails the named messages with INVALID_RECORD and
// every other message of the batch with its local
// _INVALID_DIFFERENT_RECORD, which "can be retried manually, depending on
// the application logic" (CHANGELOG, v2.4.0). The Java producer does the
// same (InvalidRecordException; KafkaException "part of a batch which had
// one more more invalid records"). So the batch's other records are kept
// only when the application produces them again, or when they travel in
// batches of their own:
//
//   - one batch (linger.ms long, sent by Flush): 10 INVALID_RECORD and 90
//     _INVALID_DIFFERENT_RECORD; the 90 produced again are delivered at
//     offsets 0-89.
//   - batch.size=1, a batch per message: 10 INVALID_RECORD, 90 delivered.
func TestCompactedKeylessConfluent(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), confluentTimeout)
	defer cancel()
	logs := newRdLog()
	defer logs.close()
	adm, err := kafka.NewAdminClient(rdConfig(n.KafkaAddr(), "cohort-e2e-compact-admin", logs, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	for _, c := range []struct {
		name      string
		oneBatch  bool
		batchSize int
	}{{"one batch", true, 1000000}, {"a batch per message", false, 1}} {
		topic := fmt.Sprintf("rd-compact-%d", c.batchSize)
		res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}})
		if err != nil || res[0].Error.Code() != kafka.ErrNoError {
			t.Fatalf("create: %v %v", err, res)
		}
		ares, err := adm.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic, Config: []kafka.ConfigEntry{
			{Name: "cleanup.policy", Value: "compact", IncrementalOperation: kafka.AlterConfigOpTypeAppend},
		}}})
		if err != nil || ares[0].Error.Code() != kafka.ErrNoError {
			t.Fatalf("incremental alter: %v %v", err, ares)
		}

		p, err := kafka.NewProducer(rdConfig(n.KafkaAddr(), "cohort-e2e-compact", logs, kafka.ConfigMap{
			"linger.ms":  10000, // nothing leaves before Flush
			"batch.size": c.batchSize,
		}))
		if err != nil {
			t.Fatal(err)
		}
		reports := make(chan kafka.Event, 100)
		produce := func(i int) {
			t.Helper()
			m := &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
				Value:          fmt.Appendf(nil, "compacted test message #%d", i),
				Opaque:         i,
			}
			if i%10 != 0 {
				m.Key = fmt.Appendf(nil, "key #%d", i)
			}
			if err := p.Produce(m, reports); err != nil {
				t.Fatalf("%s: produce #%d: %v", c.name, i, err)
			}
		}
		// deliver flushes the producer and returns the error code of
		// each of the want messages' delivery reports, by index.
		deliver := func(want int) map[int]kafka.ErrorCode {
			t.Helper()
			if left := p.Flush(int(time.Until(deadline(ctx)).Milliseconds())); left != 0 {
				t.Fatalf("%s: %d messages left after Flush", c.name, left)
			}
			codes := map[int]kafka.ErrorCode{}
			for len(codes) < want {
				var ev kafka.Event
				select {
				case ev = <-reports:
				case <-ctx.Done():
					t.Fatalf("%s: %d of %d delivery reports: %v", c.name, len(codes), want, ctx.Err())
				}
				m, ok := ev.(*kafka.Message)
				if !ok {
					t.Fatalf("%s: unexpected event %v", c.name, ev)
				}
				code := kafka.ErrNoError
				if m.TopicPartition.Error != nil {
					code = m.TopicPartition.Error.(kafka.Error).Code()
				}
				codes[m.Opaque.(int)] = code
			}
			return codes
		}

		for i := range 100 {
			produce(i)
		}
		var again []int
		for i, code := range deliver(100) {
			want := kafka.ErrNoError
			switch {
			case i%10 == 0:
				want = kafka.ErrInvalidRecord
			case c.oneBatch:
				want = kafka.ErrInvalidDifferentRecord
				again = append(again, i)
			}
			if code != want {
				t.Errorf("%s: message #%d (keyless %v): %v, want %v", c.name, i, i%10 == 0, code, want)
			}
		}
		// The other records of a refused batch, produced again.
		for _, i := range again {
			produce(i)
		}
		for i, code := range deliver(len(again)) {
			if code != kafka.ErrNoError {
				t.Errorf("%s: message #%d produced again: %v", c.name, i, code)
			}
		}
		// Exactly the 90 keyed messages are stored: nothing of a
		// refused batch was appended.
		lo, hi, err := p.QueryWatermarkOffsets(topic, 0, 10000)
		if err != nil || lo != 0 || hi != 90 {
			t.Fatalf("%s: watermarks %d-%d (%v), want 0-90", c.name, lo, hi, err)
		}
		p.Close()
	}
	// The responses parsed, with record errors: Produce v8 or later.
	logs.mu.Lock()
	versions := logs.sent["cohort-e2e-compact"]["Produce"]
	logs.mu.Unlock()
	for v := range versions {
		if v < 8 {
			t.Errorf("librdkafka sent ProduceRequest v%d, which has no record errors", v)
		}
	}
	if len(versions) == 0 {
		t.Error("no ProduceRequest in librdkafka's log")
	}
	logs.reportProblems(t)
}

// deadline is ctx's deadline.
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// TestCompactedKeylessFranz: franz-go, which does not read record errors,
// gets INVALID_RECORD (not retried) for a keyless record produced to a
// compacted topic, and for the keyed records of the same batch; keyed
// records alone are appended, from offset 0.
func TestCompactedKeylessFranz(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("compacted"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "compacted"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("a keyless record: %v, want INVALID_RECORD", err)
	}
	// One batch (the records wait out the linger together).
	rs := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}, &kgo.Record{Value: []byte("no key")})
	for i, r := range rs {
		if !errors.Is(r.Err, kerr.InvalidRecord) {
			t.Fatalf("record %d of the mixed batch: %v, want INVALID_RECORD", i, r.Err)
		}
	}
	r, err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).First()
	if err != nil || r.Offset != 0 {
		t.Fatalf("a keyed record: offset %d, %v; want offset 0", r.Offset, err)
	}
}
