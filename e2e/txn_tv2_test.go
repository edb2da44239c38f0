package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestKeys is a kgo hook counting the requests a client sends, by API
// key: what tells whether it ran transactions under KIP-890 part 2
// (transaction version 2), where no AddPartitionsToTxn or
// AddOffsetsToTxn is sent.
type requestKeys struct{ n [128]atomic.Int64 }

func (k *requestKeys) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key >= 0 && int(key) < len(k.n) {
		k.n[key].Add(1)
	}
}

func (k *requestKeys) reset() {
	for i := range k.n {
		k.n[i].Store(0)
	}
}

func (k *requestKeys) count(key kmsg.Key) int64 { return k.n[key].Load() }

// wantTV2 fails unless the client's transactions ran under transaction
// version 2: EndTxn and transactional produces sent, no
// AddPartitionsToTxn, no AddOffsetsToTxn.
func (k *requestKeys) wantTV2(t *testing.T) {
	t.Helper()
	if k.count(kmsg.EndTxn) == 0 || k.count(kmsg.Produce) == 0 {
		t.Fatalf("no transactions seen: %d EndTxn, %d Produce", k.count(kmsg.EndTxn), k.count(kmsg.Produce))
	}
	if a, o := k.count(kmsg.AddPartitionsToTxn), k.count(kmsg.AddOffsetsToTxn); a != 0 || o != 0 {
		t.Fatalf("transaction version 2 not used: %d AddPartitionsToTxn, %d AddOffsetsToTxn sent", a, o)
	}
}

// TestTxnTV2Franz: against a node finalizing transaction.version 2 (the
// default), franz-go runs KIP-890 part 2: a producer's transactions send
// no AddPartitionsToTxn (the produce adds its partitions), each end bumps
// the epoch (EndTxn v5), an abort drops its records, an abort of a
// transaction whose produce never reached the log is an empty abort; a
// GroupTransactSession's consume-transform-produce sends no
// AddOffsetsToTxn (TxnOffsetCommit v5+ adds the group) and its output,
// read_committed, holds every input exactly once with the group's
// offsets at the end.
func TestTxnTV2Franz(t *testing.T) {
	// Its groups have one member each: the default 3 s initial
	// rebalance delay would only wait for members that never come.
	var cfg node.Config
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := testkit.StartNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(n.KafkaAddr())))
	for _, topic := range []string{"tv2-out", "eos-in", "eos-out"} {
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}

	var keys requestKeys
	p := mustClient(t, kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID("tv2-a"), kgo.DefaultProduceTopic("tv2-out"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.WithHooks(&keys))
	// franz-go opts in when it sees the feature at a BeginTransaction,
	// or at the end of its first transaction (then reloading its
	// producer id): a first transaction, not counted.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("warm-up")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	keys.reset()
	var epochs []int16
	for round, commit := range []bool{true, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%d-%d", round, i))).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %d: %v", round, err)
		}
		_, epoch, err := p.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, epoch)
	}
	if !(epochs[0] < epochs[1] && epochs[1] < epochs[2]) {
		t.Fatalf("epochs after each end %v: want a bump at every end (EndTxn v5)", epochs)
	}
	got := consumeAll(t, n.KafkaAddr(), "tv2-out", true, 20)
	for _, v := range got {
		if v[0] == '1' {
			t.Fatalf("read_committed saw aborted record %s", v)
		}
	}
	keys.wantTV2(t)

	// A GroupTransactSession, consume-transform-produce.
	const inputs = 300
	prod := mustClient(t, kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("eos-in"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range inputs {
		prod.Produce(ctx, kgo.StringRecord(fmt.Sprintf("in-%05d", i)), nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var committed atomic.Int64
	var wkeys requestKeys
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			txnWorker(ctx, t, []string{n.KafkaAddr()}, fmt.Sprintf("tv2-w%d", w), "tv2-g", stop, &committed, &wkeys)
		})
	}
	txnWaitCommitted(ctx, t, adm, "tv2-g", inputs)
	close(stop)
	wg.Wait()
	txnCheckOutput(ctx, t, []string{n.KafkaAddr()}, inputs, committed.Load())
	wkeys.wantTV2(t)
	if wkeys.count(kmsg.TxnOffsetCommit) == 0 {
		t.Fatal("no TxnOffsetCommit sent")
	}
}

// TestTxnTV1Flag: a node started with transaction version 1
// (--transaction-version 1) finalizes transaction.version 1, and
// franz-go keeps to the explicit AddPartitionsToTxn with no epoch bump at
// the end.
func TestTxnTV1Flag(t *testing.T) {
	n := testkit.StartNode(t, node.Config{TransactionVersion: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(mustClient(t, kgo.SeedBrokers(n.KafkaAddr()))).CreateTopic(ctx, 1, 1, nil, "tv1-out"); err != nil {
		t.Fatal(err)
	}
	var keys requestKeys
	p := mustClient(t, kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID("tv1-a"), kgo.DefaultProduceTopic("tv1-out"), kgo.WithHooks(&keys))
	if _, _, err := p.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	var epochs []int16
	for range 2 {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		_, epoch, err := p.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, epoch)
	}
	if keys.count(kmsg.AddPartitionsToTxn) == 0 {
		t.Fatal("no AddPartitionsToTxn sent against transaction version 1")
	}
	if epochs[0] != epochs[1] {
		t.Fatalf("epochs %v: no bump expected under transaction version 1", epochs)
	}
	if got := consumeAll(t, n.KafkaAddr(), "tv1-out", true, 2); len(got) != 2 {
		t.Fatalf("read_committed: %v", got)
	}
}

// TestTxnTV2SaramaProducer: sarama, which knows nothing of transaction
// version 2 (explicit AddPartitionsToTxn, EndTxn below v5), keeps working
// against a node that finalizes it: commit, abort, commit, and a
// read_committed reader sees the committed records only.
func TestTxnTV2SaramaProducer(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	const topic = "tv2-sarama"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(n.KafkaAddr())))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	saramaTxnRounds(t, n.KafkaAddr(), topic, "sarama-tv2")
	got := consumeAll(t, n.KafkaAddr(), topic, true, 20)
	slices.Sort(got)
	if want := wantValues([]string{"c1", "c2"}, 10); !slices.Equal(got, want) {
		t.Fatalf("read_committed: %v\nwant %v", got, want)
	}
}
