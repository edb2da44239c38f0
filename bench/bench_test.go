package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Every benchmark iteration is one record of recordBytes of incompressible
// value, spread round-robin over a topic of numPartitions partitions, so
// `go test -bench` reports the record payload rate in MB/s (10^6 bytes).
const (
	recordBytes   = 1024
	numPartitions = 6
	topicName     = "bench"
)

// target is a broker to benchmark; start returns its bootstrap address and
// registers its shutdown with b.Cleanup. Each benchmark run gets a fresh
// broker with an empty log.
type target struct {
	name  string
	start func(b *testing.B) string
}

var targets = []target{
	{"cohort", func(b *testing.B) string {
		// The real server, on a fresh data dir under b.TempDir().
		return testkit.StartNode(b, node.Config{}).KafkaAddr()
	}},
	{"kfake", func(b *testing.B) string {
		// In memory: nothing is written to disk, so acks=-1 costs it no
		// fsync.
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			b.Fatalf("kfake: %v", err)
		}
		b.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	}},
}

// payload is the value of every record: random bytes, so that nothing on
// the way could compress it.
var payload = func() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	p := make([]byte, recordBytes)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}()

// producerOpts are the producer settings, the same for every target:
// no compression (the payload does not compress; this keeps the bytes on
// the wire equal to the bytes in the log), batches of up to 1 MiB (under
// both brokers' 1048588-byte max.message.bytes), franz-go's default 10ms
// linger and up to 64 MiB buffered, round-robin partitioning so each
// produce request carries a batch for every partition, and up to five
// produce requests in flight per broker. acks=-1 uses franz-go's default
// idempotent producer (which allows five in flight); acks=1 has to turn
// idempotence off and asks for the same five.
func producerOpts(addr string, acksAll bool) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topicName),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.ProducerLinger(10 * time.Millisecond),
		kgo.MaxBufferedBytes(64 << 20),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}
	if !acksAll {
		opts = append(opts,
			kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	return opts
}

// consumerOpts are the direct (groupless) consumer's settings, the same for
// every target: read every partition of the topic from the start, up to
// 4 MiB per partition and 50 MiB per fetch response.
func consumerOpts(addr string) []kgo.Opt {
	start := make(map[int32]kgo.Offset, numPartitions)
	for p := range int32(numPartitions) {
		start[p] = kgo.NewOffset().AtStart()
	}
	return []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topicName: start}),
		kgo.FetchMaxBytes(50 << 20),
		kgo.FetchMaxPartitionBytes(4 << 20),
	}
}

func benchContext(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

func newClient(b *testing.B, opts []kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatalf("new client: %v", err)
	}
	b.Cleanup(cl.Close)
	return cl
}

func createTopic(ctx context.Context, b *testing.B, addr string) {
	cl := newClient(b, []kgo.Opt{kgo.SeedBrokers(addr)})
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, numPartitions, 1, nil, topicName)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("create topic: %v", err)
	}
	cl.Close()
}

// produce sends n records and waits until every one is acknowledged.
func produce(ctx context.Context, b *testing.B, cl *kgo.Client, n int) {
	var (
		mu       sync.Mutex
		firstErr error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: payload}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatalf("flush: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		b.Fatalf("produce: %v", firstErr)
	}
}

// BenchmarkProduce times producing b.N records with acks=1 and acks=-1.
// The topic exists and the producer has its metadata, connection and
// producer id (one record per partition, untimed) before the timer starts;
// the timer stops once every record is acknowledged.
func BenchmarkProduce(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			for _, acks := range []struct {
				name string
				all  bool
			}{{"acks1", false}, {"acksAll", true}} {
				b.Run(acks.name, func(b *testing.B) {
					ctx := benchContext(b)
					addr := tg.start(b)
					createTopic(ctx, b, addr)
					cl := newClient(b, producerOpts(addr, acks.all))
					produce(ctx, b, cl, numPartitions) // warm up
					b.SetBytes(recordBytes)
					b.ReportAllocs()
					b.ResetTimer()
					produce(ctx, b, cl, b.N)
					b.StopTimer()
				})
			}
		})
	}
}

// BenchmarkConsume times a direct consumer reading b.N records that were
// produced (acks=1, untimed) before the timer starts; the consumer client
// is created inside the timed part, so its metadata request and connection
// count (a few milliseconds on loopback).
func BenchmarkConsume(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			ctx := benchContext(b)
			addr := tg.start(b)
			createTopic(ctx, b, addr)
			prod := newClient(b, producerOpts(addr, false))
			produce(ctx, b, prod, b.N)
			prod.Close()

			b.SetBytes(recordBytes)
			b.ReportAllocs()
			b.ResetTimer()
			cl := newClient(b, consumerOpts(addr))
			got, bytes := 0, 0
			for got < b.N {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					b.Fatalf("fetch: %v", err)
				}
				fs.EachRecord(func(r *kgo.Record) { bytes += len(r.Value) })
				got += fs.NumRecords()
			}
			b.StopTimer()
			if got != b.N || bytes != b.N*recordBytes {
				b.Fatalf("consumed %d records of %d bytes, want %d of %d", got, bytes, b.N, b.N*recordBytes)
			}
		})
	}
}
