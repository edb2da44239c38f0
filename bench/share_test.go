package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkShareConsume: franz-go share consumers (kgo.ShareGroup, KIP-932)
// take b.N 1 KiB records of the six-partition topic, produced before the
// timer starts, and accept every one (kgo's default: a poll accepts what
// the previous one returned; FlushAcks at the end). The timer runs from
// the consumers' creation until every record was received and every
// acceptance answered, which on Cohort means durable (fsynced). Side by
// side: Cohort in process and as its binary, kfake (in memory) in process
// and as its own process, and the binary with its data on a tmpfs (what
// of the gap is the disk's).
func BenchmarkShareConsume(b *testing.B) {
	for _, consumers := range []int{1, 4} {
		for _, tg := range append(append([]target{}, targets...), append(processTargets, tmpfsTarget)...) {
			b.Run(fmt.Sprintf("consumers=%d/%s", consumers, tg.name), func(b *testing.B) {
				ctx := benchContext(b)
				addr := tg.start(b)
				createTopic(ctx, b, addr)
				prod := newClient(b, producerOpts(addr, false))
				produce(ctx, b, prod, b.N)
				group := fmt.Sprintf("share-bench-%d", b.N)
				setShareEarliest(ctx, b, prod, group)
				prod.Close()

				b.SetBytes(recordBytes)
				b.ResetTimer()
				got := shareConsume(ctx, b, consumers, kgo.SeedBrokers(addr), kgo.ConsumeTopics(topicName), kgo.ShareGroup(group), kgo.FetchMaxBytes(50<<20))
				b.StopTimer()
				b.ReportMetric(float64(got-int64(b.N)), "redelivered")
			})
		}
	}
}

// shareConsume runs consumers share consumers with opts until they have
// received b.N records between them, then has each accept what it got
// (FlushAcks: answered, on Cohort durable) and returns how many records
// they received.
func shareConsume(ctx context.Context, b *testing.B, consumers int, opts ...kgo.Opt) int64 {
	var got atomic.Int64
	var wg sync.WaitGroup
	for range consumers {
		cl := newClient(b, opts)
		wg.Go(func() {
			for got.Load() < int64(b.N) && ctx.Err() == nil {
				pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				fs := cl.PollFetches(pctx)
				cancel()
				got.Add(int64(fs.NumRecords()))
			}
			cl.MarkAcks(kgo.AckAccept)
			if err := cl.FlushAcks(ctx); err != nil {
				b.Errorf("flush: %v", err)
			}
		})
	}
	wg.Wait()
	if n := got.Load(); n < int64(b.N) {
		b.Fatalf("consumed %d of %d", n, b.N)
	}
	return got.Load()
}

// setShareEarliest sets the group's share.auto.offset.reset to earliest,
// so that it reads what was produced before it.
func setShareEarliest(ctx context.Context, b *testing.B, cl *kgo.Client, group string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		b.Fatalf("share.auto.offset.reset: %v", err)
	}
}

// BenchmarkShareConsumers: records acknowledged per second by 1, 10 and
// 100 franz-go share consumers of one share group, on a topic of 1 and
// of 16 partitions, Cohort in process beside kfake (the shapes).
// b.N 1 KiB records are produced before the timer starts; it runs from
// the consumers' creation (their joins included) until every record was
// received and its acceptance answered (on Cohort: durable).
func BenchmarkShareConsumers(b *testing.B) {
	for _, parts := range []int32{1, 16} {
		for _, consumers := range []int{1, 10, 100} {
			for _, tg := range targets {
				b.Run(fmt.Sprintf("partitions=%d/consumers=%d/%s", parts, consumers, tg.name), func(b *testing.B) {
					ctx := benchContext(b)
					addr := tg.start(b)
					const topic = "share-consumers"
					createTopics(ctx, b, addr, parts, topic)
					prod := newClient(b, append(producerOpts(addr, false), kgo.DefaultProduceTopic(topic)))
					produce(ctx, b, prod, b.N)
					group := fmt.Sprintf("share-consumers-%d", b.N)
					setShareEarliest(ctx, b, prod, group)
					prod.Close()

					b.SetBytes(recordBytes)
					b.ResetTimer()
					got := shareConsume(ctx, b, consumers, kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
					b.StopTimer()
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acks/s")
					b.ReportMetric(float64(got-int64(b.N)), "redelivered")
				})
			}
		}
	}
}

// BenchmarkShareLockExpiry: the time from a lock's expiry to the
// record's redelivery. Each iteration, a holder (a franz-go share
// consumer) takes the record produced for it, neither acknowledges it
// nor polls again, and pauses its fetching (or it would take the record
// back itself as often as not); a second consumer of the group, started then and
// polling, gets it again once the lock (2 s, on both brokers) has
// expired. The metric is the time from the end of the lock (the holder's
// poll's return plus the lock duration, so slightly after the broker's
// own deadline) to the second consumer's poll returning the record.
func BenchmarkShareLockExpiry(b *testing.B) {
	const lock = 2 * time.Second
	starts := []target{
		{"cohort", func(b *testing.B) string {
			return testkit.StartNode(b, node.Config{ShareState: sharestate.Config{Limits: sharestate.Limits{LockDuration: lock}}}).KafkaAddr()
		}},
		{"kfake", func(b *testing.B) string {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
				"group.share.record.lock.duration.ms": strconv.Itoa(int(lock.Milliseconds())),
			}))
			if err != nil {
				b.Fatalf("kfake: %v", err)
			}
			b.Cleanup(c.Close)
			return c.ListenAddrs()[0]
		}},
	}
	for _, tg := range starts {
		b.Run(tg.name, func(b *testing.B) {
			ctx := benchContext(b)
			addr := tg.start(b)
			const topic, group = "share-expiry", "share-expiry"
			createTopics(ctx, b, addr, 1, topic)
			prod := newClient(b, append(producerOpts(addr, false), kgo.DefaultProduceTopic(topic)))
			setShareEarliest(ctx, b, prod, group)
			consumer := func() *kgo.Client {
				// Short fetch waits: a holder's fetch under way when it
				// pauses (below) ends soon after.
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.FetchMaxWait(100*time.Millisecond))
				if err != nil {
					b.Fatal(err)
				}
				return cl
			}
			// poll polls cl until it returns the record with key at a
			// delivery count of at least count.
			poll := func(cl *kgo.Client, key []byte, count int32) {
				for {
					if ctx.Err() != nil {
						b.Fatalf("key %s never came at count %d", key, count)
					}
					pctx, cancel := context.WithTimeout(ctx, time.Second)
					fs := cl.PollFetches(pctx)
					cancel()
					found := false
					fs.EachRecord(func(r *kgo.Record) {
						found = found || string(r.Key) == string(key) && r.DeliveryCount() >= count
					})
					if found {
						return
					}
				}
			}
			var total time.Duration
			b.ResetTimer()
			for i := range b.N {
				holder := consumer()
				key := []byte(strconv.Itoa(i))
				if err := prod.ProduceSync(ctx, &kgo.Record{Key: key, Value: payload}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				poll(holder, key, 1)
				held := time.Now()
				// The holder fetches no more (its share session forgets
				// the partition; what it holds stays its), so that only
				// the taker can take the record back.
				holder.PauseFetchTopics(topic)
				taker := consumer()
				poll(taker, key, 2)
				total += time.Since(held.Add(lock))
				taker.MarkAcks(kgo.AckAccept)
				if err := taker.FlushAcks(ctx); err != nil {
					b.Fatal(err)
				}
				taker.Close()
				holder.Close()
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms-after-expiry")
		})
	}
}
