package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeAll reads a topic from the start with a direct consumer at the
// isolation level until it has want records, and returns their values.
func consumeAll(t *testing.T, addr, topic string, committed bool, want int) []string {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(out), want, topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// TestTxnFranzProducer: franz-go's transactional producer commits one
// transaction and aborts the next; a read_committed consumer sees only
// the committed records, a read_uncommitted one all of them; the admin
// APIs describe the transactional id, list it, and show the producer on
// the partition; a second producer with the same transactional id fences
// the first.
func TestTxnFranzProducer(t *testing.T) {
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(n.KafkaAddr())))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "txn-out"); err != nil {
		t.Fatal(err)
	}
	p := mustClient(t, kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID("tx-a"), kgo.DefaultProduceTopic("txn-out"))
	for round, commit := range []bool{true, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			r := kgo.StringRecord(fmt.Sprintf("%d-%d", round, i))
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %d: %v", round, err)
		}
	}
	got := consumeAll(t, n.KafkaAddr(), "txn-out", true, 20)
	for _, v := range got {
		if v[0] == '1' {
			t.Fatalf("read_committed saw aborted record %s", v)
		}
	}
	if all := consumeAll(t, n.KafkaAddr(), "txn-out", false, 30); len(all) != 30 {
		t.Fatalf("read_uncommitted: %d records", len(all))
	}

	// Admin APIs.
	ds, err := adm.DescribeTransactions(ctx, "tx-a")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := ds["tx-a"]; !ok || d.Err != nil || d.State != "CompleteCommit" || d.ProducerID < 0 {
		t.Fatalf("describe: %+v", ds)
	}
	ls, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil || len(ls.TransactionalIDs()) != 1 {
		t.Fatalf("list: %+v %v", ls, err)
	}
	ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"txn-out": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	ps.EachProducer(func(p kadm.DescribedProducer) {
		if p.ProducerID == ds["tx-a"].ProducerID {
			seen++
		}
	})
	if seen == 0 {
		t.Fatalf("describe producers: %+v", ps)
	}
	lo, err := adm.ListEndOffsets(ctx, "txn-out")
	if err != nil {
		t.Fatal(err)
	}
	if lo.Error() != nil {
		t.Fatal(lo.Error())
	}

	// Fencing: a second producer with the same id; the first is fenced.
	p2 := mustClient(t, kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID("tx-a"), kgo.DefaultProduceTopic("txn-out"))
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx, kgo.StringRecord("p2")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	err = p.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr()
	if err == nil {
		err = p.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie producer: %v, want fenced", err)
	}
	if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

func mustClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestTxnListOffsetsReadCommitted: ListOffsets for the latest offset
// answers the last stable offset to a read_committed client (kadm's
// ListCommittedOffsets) and the high watermark to a read_uncommitted one
// (ListEndOffsets): while franz-go's transaction is open they differ, and
// once it commits both are past its marker.
func TestTxnListOffsetsReadCommitted(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	addr := n.KafkaAddr()
	const topic = "txn-lso"
	txnTopic(t, addr, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(addr)))
	latest := func() (stable, end int64) {
		t.Helper()
		c, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = c.Error()
		}
		e, err2 := adm.ListEndOffsets(ctx, topic)
		if err2 == nil {
			err2 = e.Error()
		}
		if err != nil || err2 != nil {
			t.Fatalf("list offsets: %v, %v", err, err2)
		}
		cs, _ := c.Lookup(topic, 0)
		es, _ := e.Lookup(topic, 0)
		return cs.Offset, es.Offset
	}
	plain := mustClient(t, kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p := mustClient(t, kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("txn-lso"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "in-txn-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if stable, end := latest(); stable != 1 || end != 4 {
		t.Fatalf("transaction open: read_committed latest %d, read_uncommitted %d; want 1 (its first record) and 4", stable, end)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The marker is written once the transaction completes.
	testkit.Eventually(t, 10*time.Second, "the commit marker", func() bool {
		stable, end := latest()
		return stable == 5 && end == 5
	})
}
