package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// TestKafkaGoProduceConsume: segmentio/kafka-go's Writer (hash balancer,
// acks=all) writes 12,500 records over 4 partitions, a fifth of them with
// each compression codec (one Writer per codec); a groupless Reader per
// partition reads from the first offset and gets back exactly those
// records at the offsets the Writer reported. kafka-go negotiates
// Produce v8, Fetch v10, ListOffsets v1, Metadata v6/v8, CreateTopics v5.
func TestKafkaGoProduceConsume(t *testing.T) {
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := kafka.TCP(n.KafkaAddr())
	transport := &kafka.Transport{DialTimeout: 5 * time.Second, ClientID: "cohort-e2e"}
	defer transport.CloseIdleConnections()

	const topic = "kafkago"
	const partitions = 4
	cl := &kafka.Client{Addr: addr, Transport: transport, Timeout: 10 * time.Second}
	cresp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}},
	})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := cresp.Errors[topic]; err != nil {
		t.Fatalf("create topic: %v", err)
	}

	codecs := []compress.Compression{compress.None, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd}
	var want []rec
	base := time.Now().Add(-time.Hour)
	for ci, codec := range codecs {
		name := codec.String()
		var mu sync.Mutex
		var acked []kafka.Message
		w := &kafka.Writer{
			Addr:         addr,
			Topic:        topic,
			Balancer:     &kafka.Hash{},
			RequiredAcks: kafka.RequireAll,
			Compression:  codec,
			BatchSize:    200,
			// A partial batch waits this long for more messages; short, so
			// the last batch of each partition is not held back.
			BatchTimeout: 5 * time.Millisecond,
			MaxAttempts:  5,
			WriteTimeout: 10 * time.Second,
			Transport:    transport,
			// The Writer reports the acknowledged partition and offset only
			// here, on its copies of the messages.
			Completion: func(msgs []kafka.Message, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				acked = append(acked, msgs...)
			},
		}
		recs := makeRecs(name, 2500, base.Add(time.Duration(ci)*time.Minute))
		msgs := make([]kafka.Message, len(recs))
		for i, r := range recs {
			m := kafka.Message{Key: r.Key, Value: r.Value, Time: r.Timestamp}
			for _, h := range r.Headers {
				m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
			}
			msgs[i] = m
		}
		err := w.WriteMessages(ctx, msgs...)
		if cerr := w.Close(); cerr != nil {
			t.Errorf("close writer with %s: %v", name, cerr)
		}
		if err != nil {
			t.Fatalf("produce with %s: %v", name, err)
		}
		mu.Lock()
		if len(acked) != len(msgs) {
			t.Fatalf("produce with %s: %d messages acknowledged, want %d", name, len(acked), len(msgs))
		}
		for _, m := range acked {
			r := rec{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Time}
			for _, h := range m.Headers {
				r.Headers = append(r.Headers, hdr{h.Key, string(h.Value)})
			}
			want = append(want, r)
		}
		mu.Unlock()
	}

	perPart := map[int32]int{}
	for _, r := range want {
		perPart[r.Partition]++
	}
	if len(perPart) != partitions {
		t.Fatalf("records went to %d partitions, want %d", len(perPart), partitions)
	}

	var got []rec
	for p := int32(0); p < partitions; p++ {
		got = append(got, kafkaGoReadPartition(ctx, t, n.KafkaAddr(), topic, p, perPart[p])...)
	}
	checkSame(t, want, got, false)
	checkCodecs(t, codecCounts(ctx, t, n.KafkaAddr(), topic, len(want)), 2500)
}

// kafkaGoReadPartition reads count records of one partition from the
// first offset with a groupless Reader, then waits until the Reader has
// polled past them at least once, and fails if the Reader reported any
// error on the way: it retries most errors by itself and only logs them,
// which would otherwise go unnoticed.
func kafkaGoReadPartition(ctx context.Context, t *testing.T, addr, topic string, p int32, count int) []rec {
	t.Helper()
	var mu sync.Mutex
	var readerErrs []string
	rd := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   []string{addr},
		Topic:     topic,
		Partition: int(p),
		MinBytes:  1,
		MaxBytes:  4 << 20,
		MaxWait:   100 * time.Millisecond,
		ErrorLogger: kafka.LoggerFunc(func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			readerErrs = append(readerErrs, fmt.Sprintf(format, args...))
		}),
	})
	defer func() {
		if err := rd.Close(); err != nil {
			t.Errorf("partition %d: close reader: %v", p, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range readerErrs {
			t.Errorf("partition %d: reader error: %s", p, e)
		}
	}()
	if err := rd.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatalf("partition %d: set offset: %v", p, err)
	}
	var got []rec
	for i := 0; i < count; i++ {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("partition %d: read after %d of %d records: %v", p, i, count, err)
		}
		r := rec{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Time}
		for _, h := range m.Headers {
			r.Headers = append(r.Headers, hdr{h.Key, string(h.Value)})
		}
		got = append(got, r)
	}
	// Nothing may follow the produced records: the lag after the last one
	// (high watermark minus next offset) is zero.
	if lag := rd.Lag(); lag != 0 {
		t.Errorf("partition %d: lag %d after the produced records, want 0", p, lag)
	}
	// The Reader keeps fetching at the end of the log; an empty fetch
	// comes back as a timeout (kafka-go's RequestTimedOut), a malformed
	// one as a logged error. Wait for either, so the empty answer at the
	// log end is checked too.
	timeouts := int64(0)
	testkit.Eventually(t, 10*time.Second, "reader polls past the end of the log", func() bool {
		timeouts += rd.Stats().Timeouts
		mu.Lock()
		defer mu.Unlock()
		return timeouts > 0 || len(readerErrs) > 0
	})
	return got
}
