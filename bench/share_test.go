package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
				var got atomic.Int64
				var wg sync.WaitGroup
				for range consumers {
					cl := newClient(b, []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topicName), kgo.ShareGroup(group), kgo.FetchMaxBytes(50 << 20)})
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
				b.StopTimer()
				if n := got.Load(); n < int64(b.N) {
					b.Fatalf("consumed %d of %d", n, b.N)
				}
				b.ReportMetric(float64(got.Load()-int64(b.N)), "redelivered")
			})
		}
	}
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
