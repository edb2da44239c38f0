package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkTxn measures small transactions (issue 16): each is one
// 1 KiB record and one offset commit (AddOffsetsToTxn, TxnOffsetCommit;
// the AddOffsetsToTxn left out, as a client does, where the broker
// finalizes transaction.version 2, KIP-890 part 2), then EndTxn commit, by 1, 16 and 64 transactional producers at once,
// each with its own transactional id and connection. Cohort fsyncs the
// record, the markers and every coordinator record before answering;
// kfake keeps everything in memory. b.N transactions in all; txn/s is
// reported. Each target runs in this process (cohort, kfake) and in its
// own (cohort-process, kfake-process: processTargets), as users run it,
// and cohort-process-tmpfs (tmpfsTarget: no disk in the way, not durable)
// shows what the syncs cost.
//
//	go test ./bench -run XXX -bench Txn -benchtime 2000x
func BenchmarkTxn(b *testing.B) {
	for _, tg := range append(append(slices.Clone(targets), processTargets...), tmpfsTarget) {
		for _, producers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/producers=%d", tg.name, producers), func(b *testing.B) {
				ctx := benchContext(b)
				addr := tg.start(b)
				createTopic(ctx, b, addr)
				clients := make([]*kgo.Client, producers)
				for i := range clients {
					clients[i] = newClient(b, []kgo.Opt{
						kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topicName),
						kgo.TransactionalID(fmt.Sprintf("bench-%d", i)),
						kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
						kgo.ProducerLinger(0),
					})
					// Warm up: the producer id and the coordinators.
					smallTxn(ctx, b, clients[i], i)
				}
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for i, cl := range clients {
					n := b.N / producers
					if i < b.N%producers {
						n++
					}
					wg.Go(func() {
						for range n {
							smallTxn(ctx, b, cl, i)
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "txn/s")
			})
		}
	}
}

// smallTxn is one transaction: a record, an offset of group bench-g<i>,
// commit.
func smallTxn(ctx context.Context, b *testing.B, cl *kgo.Client, i int) {
	if err := cl.BeginTransaction(); err != nil {
		b.Fatalf("begin: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: payload}).FirstErr(); err != nil {
		b.Fatalf("produce: %v", err)
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		b.Fatalf("producer id: %v", err)
	}
	group := fmt.Sprintf("bench-g%d", i)
	txnID := fmt.Sprintf("bench-%d", i)
	if !tv2(ctx, b, cl) {
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, group
		aresp, err := add.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(aresp.ErrorCode)
		}
		if err != nil {
			b.Fatalf("add offsets: %v", err)
		}
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = txnID, group, pid, epoch
	commit.Generation, commit.MemberID = -1, ""
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topicName, TopicID: topicID(ctx, b, cl), Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
	cresp, err := commit.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(cresp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		b.Fatalf("txn offset commit: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		b.Fatalf("end: %v", err)
	}
}

// BenchmarkConsumeIsolation reads a log of b.N 1 KiB records written in
// transactions of 1,000 (one in ten aborted) from the start to the end,
// with read_uncommitted (every record) and read_committed (the nine in
// ten committed): the cost of the last stable offset and the aborted
// transactions index on the same log (issue 16's goal: read_committed
// within 10%). ns/op is per record of the log either way; the aborted
// records are fetched by both, and dropped by the read_committed client.
//
//	go test ./bench -run XXX -bench ConsumeIsolation -benchtime 200000x
func BenchmarkConsumeIsolation(b *testing.B) {
	for _, tg := range targets {
		for _, committed := range []bool{false, true} {
			level := "read_uncommitted"
			if committed {
				level = "read_committed"
			}
			b.Run(tg.name+"/"+level, func(b *testing.B) {
				ctx := benchContext(b)
				addr := tg.start(b)
				createTopic(ctx, b, addr)
				prod := newClient(b, append(producerOpts(addr, true), kgo.TransactionalID("bench-load")))
				want, written, txn := 0, 0, 0
				for written < b.N {
					if err := prod.BeginTransaction(); err != nil {
						b.Fatal(err)
					}
					n := min(1000, b.N-written)
					produce(ctx, b, prod, n)
					abort := txn%10 == 9
					if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(!abort)); err != nil {
						b.Fatal(err)
					}
					if !abort || !committed {
						want += n
					}
					written += n
					txn++
				}
				prod.Close()
				b.SetBytes(recordBytes)
				b.ResetTimer()
				opts := consumerOpts(addr)
				if committed {
					opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
				}
				cl := newClient(b, opts)
				got := 0
				for got < want {
					fs := cl.PollFetches(ctx)
					if err := fs.Err0(); err != nil {
						b.Fatalf("fetch: %v", err)
					}
					got += fs.NumRecords()
				}
				b.StopTimer()
				if got != want {
					b.Fatalf("consumed %d records, want %d", got, want)
				}
			})
		}
	}
}

var tv2s sync.Map // client → whether the broker finalizes transaction.version 2

// tv2 reports whether cl's broker finalizes transaction.version 2, under
// which TxnOffsetCommit v5+ adds the group to the transaction itself.
func tv2(ctx context.Context, b *testing.B, cl *kgo.Client) bool {
	if v, ok := tv2s.Load(cl); ok {
		return v.(bool)
	}
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		b.Fatalf("api versions: %v", err)
	}
	on := false
	for _, f := range resp.FinalizedFeatures {
		on = on || f.Name == "transaction.version" && f.MaxVersionLevel >= 2 && resp.FinalizedFeaturesEpoch != -1
	}
	tv2s.Store(cl, on)
	return on
}

var topicIDs sync.Map // client → the bench topic's id (TxnOffsetCommit v6 names topics by id)

func topicID(ctx context.Context, b *testing.B, cl *kgo.Client) [16]byte {
	if id, ok := topicIDs.Load(cl); ok {
		return id.([16]byte)
	}
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topicName)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 {
		b.Fatalf("metadata: %v", err)
	}
	topicIDs.Store(cl, resp.Topics[0].TopicID)
	return resp.Topics[0].TopicID
}
