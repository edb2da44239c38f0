package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnExactlyOnceCrash is issue 16's exactly-once test: franz-go
// GroupTransactSession workers consume an input topic, produce one output
// record per input record and commit their offsets in the same
// transaction, while the real server (a child process) is killed with
// SIGKILL mid-stream and restarted on the same data directory, twice.
// Once every input offset is committed, the output topic read with
// read_committed holds every input record exactly once: no transaction
// is half-visible, none that committed is lost (its markers and offsets
// are finished at load), and no input is processed into committed output
// twice (a crash between a transaction's markers and its offsets would
// show as a duplicate).
func TestTxnExactlyOnceCrash(t *testing.T) {
	const (
		inputs     = 3000
		partitions = 4
		workers    = 3
	)
	dir := t.TempDir()
	px := startProxy(t)
	// The workers' group forms when they start and again after each
	// kill: the default 3 s initial rebalance delay made each formation
	// wait 3 s. What this test checks is exactly-once across kills, which
	// must hold however the group's generations fall (a rebalance more
	// is more of what it must survive), so 100 ms will do.
	args := []string{"--advertised-kafka-addr", px.addr(), "--auto-create-topics=false", "--group-initial-rebalance-delay", "100ms"}
	proc := testkit.StartBinary(t, dir, args...)
	px.up(proc.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(px.addr())))
	for _, topic := range []string{"eos-in", "eos-out"} {
		if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// The input comes in three phases, one before the workers start and
	// one after each restart, so that each kill finds work in flight
	// however fast the workers are. One record per batch, spread over the
	// partitions, so that a worker's fetch (FetchMaxPartitionBytes) holds
	// a few dozen records and each phase takes many transactions.
	prod := mustClient(t, kgo.SeedBrokers(px.addr()), kgo.DefaultProduceTopic("eos-in"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	producePhase := func(phase int) { produceInputs(ctx, t, prod, phase*inputs/3, (phase+1)*inputs/3) }
	producePhase(0)

	var committed atomic.Int64 // transactions committed, all workers
	var keys requestKeys       // the workers' requests, by API key
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			txnWorker(ctx, t, []string{px.addr()}, fmt.Sprintf("eos-w%d", w), "eos", stop, &committed, &keys)
		})
	}
	for kill := 1; kill <= 2; kill++ {
		start := committed.Load()
		if !testkit.WaitFor(time.Minute, func() bool { return committed.Load() >= start+5 }) {
			txnCrashDiag(ctx, t, adm, "eos")
			t.Fatalf("kill %d: %d transactions committed in a minute, want 5", kill, committed.Load()-start)
		}
		px.down()
		proc.Kill()
		proc = testkit.StartBinary(t, dir, args...)
		px.up(proc.Addr)
		producePhase(kill)
	}
	txnWaitCommitted(ctx, t, adm, "eos", inputs)
	close(stop)
	wg.Wait()
	txnCheckOutput(ctx, t, []string{px.addr()}, inputs, committed.Load())
	keys.wantTV2(t)
	t.Logf("%d inputs exactly once through %d transactions and 2 kills", inputs, committed.Load())
}

// txnWorker is one consume-transform-produce worker: a GroupTransactSession
// of transactional id w in group, from eos-in to eos-out, that survives
// the server's restarts. keys counts its requests.
//
// A failed End ends the session and the worker starts a new one with the
// same transactional id, as franz-go's End asks ("no returned error is
// retryable ... odds are you should not continue"): a commit interrupted
// by the coordinator's death has an outcome this session cannot know,
// and after an abort it would rewind to the offsets it last saw
// committed, reprocessing a transaction that did commit. The new
// session's InitProducerId fences the old producer and waits for (or
// finishes) its transaction, and it then reads the group's offsets as the
// coordinator has them.
func txnWorker(ctx context.Context, t *testing.T, seeds []string, w, group string, stop <-chan struct{}, committed *atomic.Int64, keys *requestKeys) {
	for ctx.Err() == nil {
		select {
		case <-stop:
			return
		default:
		}
		if !txnSession(ctx, t, seeds, w, group, stop, committed, keys) {
			return
		}
	}
}

// txnSession runs one session of txnWorker until stop (false) or a failed
// End (true: start another).
func txnSession(ctx context.Context, t *testing.T, seeds []string, w, group string, stop <-chan struct{}, committed *atomic.Int64, keys *requestKeys) bool {
	s, err := kgo.NewGroupTransactSession(
		kgo.WithHooks(keys),
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(w),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics("eos-in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic("eos-out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(2<<10),
		// As an exactly-once application is configured (Kafka Streams
		// sets retries to the maximum): a request the coordinator's
		// death interrupts is retried until a minute has passed, not
		// given up after franz-go's default 20 tries.
		kgo.RequestRetries(1<<20),
		kgo.RetryTimeout(time.Minute),
	)
	if err != nil {
		t.Errorf("worker %s: %v", w, err)
		return false
	}
	defer s.Close()
	for {
		select {
		case <-stop:
			return false
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := s.PollFetches(pctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Logf("worker %s: fetch %s/%d: %v", w, topic, p, err)
			}
		})
		if ctx.Err() != nil {
			return false
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			if n == 0 {
				if err := s.Begin(); err != nil {
					t.Errorf("worker %s: begin: %v", w, err)
				}
			}
			n++
			s.Produce(ctx, kgo.StringRecord("out-"+string(r.Value)), nil)
		})
		if n == 0 {
			continue
		}
		ok, err := s.End(ctx, kgo.TryCommit)
		switch {
		case ok && err == nil:
			committed.Add(1)
		case err != nil:
			t.Logf("worker %s: end: %v; starting a new session", w, err)
			return true
		}
	}
}

// txnCrashDiag logs where the group and the topics stand, for a stall.
func txnCrashDiag(ctx context.Context, t *testing.T, adm *kadm.Client, group string) {
	if os, err := adm.FetchOffsets(ctx, group); err == nil {
		os.Each(func(o kadm.OffsetResponse) { t.Logf("committed %s/%d = %d (%v)", o.Topic, o.Partition, o.At, o.Err) })
	}
	for _, topic := range []string{"eos-in", "eos-out"} {
		ends, _ := adm.ListEndOffsets(ctx, topic)
		ends.Each(func(o kadm.ListedOffset) { t.Logf("end %s/%d = %d (%v)", o.Topic, o.Partition, o.Offset, o.Err) })
		lsos, _ := adm.ListCommittedOffsets(ctx, topic)
		lsos.Each(func(o kadm.ListedOffset) { t.Logf("LSO %s/%d = %d (%v)", o.Topic, o.Partition, o.Offset, o.Err) })
	}
}

// txnWaitCommitted waits until eos-in holds inputs records and group has
// committed every one of them.
func txnWaitCommitted(ctx context.Context, t *testing.T, adm *kadm.Client, group string, inputs int64) {
	t.Helper()
	inEnds, err := adm.ListEndOffsets(ctx, "eos-in")
	if err != nil || inEnds.Error() != nil {
		t.Fatalf("input ends: %v %v", err, inEnds.Error())
	}
	var total int64
	inEnds.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != inputs {
		t.Fatalf("input holds %d records, want %d", total, inputs)
	}
	// Every input offset committed by the group.
	testkit.Eventually(t, 2*time.Minute, "every input offset committed", func() bool {
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		done := true
		inEnds.Each(func(o kadm.ListedOffset) {
			c, ok := os.Lookup("eos-in", o.Partition)
			if !ok || c.At < o.Offset {
				done = false
			}
		})
		return done
	})
}

// txnCheckOutput reads eos-out with read_committed and fails unless it
// holds "out-in-%05d" for every input exactly once.
func txnCheckOutput(ctx context.Context, t *testing.T, seeds []string, inputs int, committed int64) {
	t.Helper()
	// The output, read_committed: until every input's output is seen (or
	// a minute passes), then two seconds more for any duplicate behind.
	cl := mustClient(t, kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("eos-out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	for len(seen) < inputs && rctx.Err() == nil {
		cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	rcancel()
	tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
	for tctx.Err() == nil {
		cl.PollFetches(tctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	tcancel()
	missing, dups := 0, 0
	for i := range inputs {
		switch n := seen[fmt.Sprintf("out-in-%05d", i)]; {
		case n == 0:
			missing++
		case n > 1:
			dups++
		}
	}
	if missing > 0 || dups > 0 || len(seen) != inputs {
		t.Fatalf("output read_committed: %d distinct records, %d inputs missing, %d duplicated (of %d); %d transactions committed", len(seen), missing, dups, inputs, committed)
	}
}

// produceInputs produces the records in-<from> .. in-<to-1>, one per
// batch, from 8 goroutines at once.
func produceInputs(ctx context.Context, t *testing.T, prod *kgo.Client, from, to int) {
	var pwg sync.WaitGroup
	for g := range 8 {
		pwg.Go(func() {
			for i := from + g; i < to; i += 8 {
				if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("in-%05d", i))).FirstErr(); err != nil {
					t.Errorf("produce input: %v", err)
					return
				}
			}
		})
	}
	pwg.Wait()
}
