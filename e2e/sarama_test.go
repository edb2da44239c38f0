package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saramaVersion is the newest Kafka version Sarama knows. Sarama picks
// each request's version from it (Produce v10, Fetch v12, Metadata v11,
// CreateTopics v7, InitProducerId v4, ListOffsets v6, ApiVersions v4),
// all within what Cohort advertises.
var saramaVersion = sarama.MaxVersion

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "cohort-e2e"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// TestSaramaProduceConsume: Sarama's idempotent SyncProducer (acks=all)
// writes 12,500 records over 4 partitions, a fifth of them with each
// compression codec (one producer per codec); a PartitionConsumer per
// partition reads from the oldest offset and gets back exactly those
// records at the acknowledged offsets.
func TestSaramaProduceConsume(t *testing.T) {
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs := []string{n.KafkaAddr()}

	const topic = "sarama"
	const partitions = 4
	adm, err := sarama.NewClusterAdmin(addrs, saramaConfig())
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false)
	if cerr := adm.Close(); cerr != nil {
		t.Errorf("close admin: %v", cerr)
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}

	codecs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD}
	var want []rec
	base := time.Now().Add(-time.Hour)
	usedPart := map[int32]bool{}
	for ci, codec := range codecs {
		cfg := saramaConfig()
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Retry.Max = 5
		cfg.Producer.Retry.Backoff = 50 * time.Millisecond
		cfg.Producer.Return.Successes = true
		cfg.Producer.Return.Errors = true
		cfg.Producer.Compression = codec
		cfg.Producer.Partitioner = sarama.NewHashPartitioner
		prod, err := sarama.NewSyncProducer(addrs, cfg)
		if err != nil {
			t.Fatalf("producer with %s: %v", codec, err)
		}

		recs := makeRecs(codec.String(), 2500, base.Add(time.Duration(ci)*time.Minute))
		msgs := make([]*sarama.ProducerMessage, len(recs))
		for i, r := range recs {
			m := &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(r.Key), Value: sarama.ByteEncoder(r.Value), Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
			}
			msgs[i] = m
		}
		// SendMessages is bounded by the producer's own timeouts and
		// retries; it sets each message's acknowledged partition and offset.
		err = prod.SendMessages(msgs)
		if cerr := prod.Close(); cerr != nil {
			t.Errorf("close producer with %s: %v", codec, cerr)
		}
		if err != nil {
			var perrs sarama.ProducerErrors
			if errors.As(err, &perrs) && len(perrs) > 0 {
				t.Fatalf("produce with %s: %d failed, first: %v", codec, len(perrs), perrs[0].Err)
			}
			t.Fatalf("produce with %s: %v", codec, err)
		}
		for i, m := range msgs {
			if m.Offset < 0 {
				t.Fatalf("produce with %s: message %d acknowledged at offset %d", codec, i, m.Offset)
			}
			recs[i].Partition, recs[i].Offset = m.Partition, m.Offset
			usedPart[m.Partition] = true
		}
		want = append(want, recs...)
	}
	if len(usedPart) != partitions {
		t.Fatalf("records went to %d partitions, want %d", len(usedPart), partitions)
	}

	perPart := map[int32]int{}
	for _, r := range want {
		perPart[r.Partition]++
	}

	ccfg := saramaConfig()
	ccfg.Consumer.Return.Errors = true
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	ccfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cons, err := sarama.NewConsumer(addrs, ccfg)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer func() {
		if err := cons.Close(); err != nil {
			t.Errorf("close consumer: %v", err)
		}
	}()

	var got []rec
	for p := int32(0); p < partitions; p++ {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("consume partition %d: %v", p, err)
		}
		for i := 0; i < perPart[p]; i++ {
			select {
			case m := <-pc.Messages():
				r := rec{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
				for _, h := range m.Headers {
					r.Headers = append(r.Headers, hdr{string(h.Key), string(h.Value)})
				}
				got = append(got, r)
			case cerr := <-pc.Errors():
				t.Fatalf("partition %d: consume error after %d records: %v", p, i, cerr)
			case <-ctx.Done():
				t.Fatalf("partition %d: got %d records of %d before timeout", p, i, perPart[p])
			}
		}
		// Nothing may follow the produced records: the high watermark is
		// exactly one past the last acknowledged offset.
		if hwm, last := pc.HighWaterMarkOffset(), got[len(got)-1].Offset; hwm != last+1 {
			t.Errorf("partition %d: high watermark %d, want %d", p, hwm, last+1)
		}
		if err := pc.Close(); err != nil {
			t.Errorf("close partition consumer %d: %v", p, err)
		}
	}
	checkSame(t, want, got, false)
	checkCodecs(t, codecCounts(ctx, t, n.KafkaAddr(), topic, len(want)), 2500)
}

// codecCounts reads the whole topic with franz-go, which reports each
// record's batch attributes, and counts the records per compression codec
// the log holds them in (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd): proof
// that the client under test really sent compressed batches and that
// Cohort kept them as sent.
func codecCounts(ctx context.Context, t *testing.T, addr, topic string, total int) map[uint8]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	counts := map[uint8]int{}
	seen := 0
	for seen < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back codecs: %d of %d records before timeout", seen, total)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("read back codecs: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) {
			counts[r.Attrs.CompressionType()]++
			seen++
		})
	}
	return counts
}

// checkCodecs fails unless each of the 5 codecs holds exactly per records.
func checkCodecs(t *testing.T, counts map[uint8]int, per int) {
	t.Helper()
	for c := uint8(0); c <= 4; c++ {
		if counts[c] != per {
			t.Errorf("codec %d: %d records in the log, want %d (all: %v)", c, counts[c], per, counts)
		}
	}
}
