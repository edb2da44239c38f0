package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/server"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranzProduceConsume: franz-go's idempotent producer writes 12,500
// records over 4 partitions, a fifth of them with each compression codec;
// a direct (groupless) consumer reads back exactly those records.
func TestFranzProduceConsume(t *testing.T) {
	n := testkit.StartNode(t, server.Config{AutoCreateTopics: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const topic = "franz"
	adm, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	names := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	var want []rec
	base := time.Now().Add(-time.Hour)
	for ci, codec := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		recs := makeRecs(names[ci], 2500, base.Add(time.Duration(ci)*time.Minute))
		var mu sync.Mutex
		var wg sync.WaitGroup
		var firstErr error
		for i := range recs {
			r := recs[i]
			kr := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
			}
			wg.Add(1)
			cl.Produce(ctx, kr, func(kr *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				r.Partition, r.Offset = kr.Partition, kr.Offset
				want = append(want, r)
			})
		}
		wg.Wait()
		cl.Close()
		if firstErr != nil {
			t.Fatalf("produce with %s: %v", names[ci], firstErr)
		}
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []rec
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 && ctx.Err() == nil {
			t.Fatalf("fetch: %v", errs)
		}
		fs.EachRecord(func(kr *kgo.Record) {
			r := rec{Partition: kr.Partition, Offset: kr.Offset, Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp}
			for _, h := range kr.Headers {
				r.Headers = append(r.Headers, hdr{h.Key, string(h.Value)})
			}
			got = append(got, r)
		})
	}
	checkSame(t, want, got, false)
}
