package txncoord_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/internal/powerloss"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/topics"
	"github.com/cohort-dev/cohort/txncoord"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// slowSync is how much longer the store's fsyncs take than the log's, as
// a busy write-ahead log's do, so that cuts often find a transaction's
// markers durable and its Prepare record not yet.
const slowSync = 2 * time.Millisecond

// TestPowerLoss runs transactions the way the wire layer does on a single
// node (transaction version 2: the produce's partition add and the
// offsets' group add answered early, the end with a bump, so its markers
// go out while its Prepare syncs) through the shard runtime, on Pebble
// over a filesystem that keeps only what was synced and a topic log whose
// files are put back to their last fsync, and cuts the power once a
// random number of transactions have ended, under load. After the load, and once the transactions left open have timed
// out:
//
//   - no partition holds a transaction open (none hangs);
//   - every transaction is atomic: of its batches that survived, all are
//     committed or none is, and its group's offset is committed with them;
//   - every commit that was answered is there: its batches and its offset.
//
// It fails without any of the loads' repairs (checked: a lost add leaves
// a batch open for good; a lost Prepare leaves one partition committed
// and another aborted, or the output committed without its offset; a
// marker written again must not close the next transaction's batches)
// and if the EndTxn's answer does not wait for the Prepare's sync.
// POWERLOSS_DUMP=1 logs every batch of the log after the load.
func TestPowerLoss(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { powerLoss(t, seed) })
	}
}

const powerLossParts = 3

type node struct {
	st     *pebble.Store
	log    *topics.Log
	groups *coordinator.Coordinator
	c      *txncoord.Coordinator
}

func startNode(t *testing.T, mem vfs.FS, dir string, power *powerloss.Power) *node {
	t.Helper()
	st, err := pebble.Open("db", pebble.Options{FS: power.FS(mem, slowSync)})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{st: st}
	if n.log, err = topics.Open(topics.Config{Dir: dir, Store: st, SyncFile: power.SyncFile}); err != nil {
		t.Fatal(err)
	}
	if n.log.Topic("out") == nil {
		if _, err := n.log.Create("out", powerLossParts, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if n.groups, err = coordinator.Start(coordinator.Config{Shards: 2}, coordinator.Options{Store: st}); err != nil {
		t.Fatal(err)
	}
	if n.c, err = txncoord.Start(txncoord.Config{Store: st, Topics: n.log, Groups: n.groups, Shards: 2}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) close() {
	n.c.Close()
	n.groups.Close()
	n.log.Close()
	n.st.Close()
}

// acked is what a producer was told: the last transaction whose commit
// was answered.
type acked struct {
	mu     sync.Mutex
	commit map[int]int // producer → transaction
	ends   int         // transactions ended, committed or aborted
}

func powerLoss(t *testing.T, seed uint64) {
	mem := vfs.NewStrictMem()
	dir := t.TempDir()
	power := powerloss.New()
	n := startNode(t, mem, dir, power)

	const producers = 4
	ack := &acked{commit: map[int]int{}}
	var down atomic.Bool // the power is cut: later answers count for nothing
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range producers {
		wg.Go(func() { produceTxns(t, ctx, n, i, seed, &down, ack) })
	}
	// The power goes once a random number of transactions have ended,
	// so that every run cuts it under load, after answers to lose.
	rng := rand.New(rand.NewPCG(seed, 77))
	cutAfter := 4 + rng.IntN(60)
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%d transactions ended", cutAfter), func() bool {
		ack.mu.Lock()
		defer ack.mu.Unlock()
		return ack.ends >= cutAfter
	})
	// Answers seen from now on count for nothing; then the power goes
	// (in that order: an answer counted came before the cut).
	down.Store(true)
	power.Cut()
	cancel()
	wg.Wait()
	n.close()
	mem.ResetToSyncedState()
	if err := power.Restore(dir, ".log"); err != nil {
		t.Fatal(err)
	}

	n = startNode(t, mem, dir, power)
	defer n.close()
	tp := n.log.Topic("out")
	// Transactions left open time out (500 ms) and are aborted.
	open := func() []string {
		var out []string
		for i, p := range tp.Partitions {
			for _, pi := range p.Producers() {
				if pi.TxnStartOffset >= 0 {
					out = append(out, fmt.Sprintf("partition %d: producer %d/%d from offset %d", i, pi.ProducerID, pi.ProducerEpoch, pi.TxnStartOffset))
				}
			}
		}
		return out
	}
	// Every transaction ended: none ongoing or being prepared (its
	// groups' offsets are ended before it completes).
	describe := func() (ds []txn.Description, ended bool) {
		ended = true
		for i := range producers {
			id := fmt.Sprintf("tx%d", i)
			out, _ := n.c.Do(context.Background(), "", id, txn.DescribeCmd{TxnIDs: []string{id}})
			d, _ := out.([]txn.Description)
			ds = append(ds, d...)
			for _, d := range d {
				ended = ended && (d.State == "Empty" || d.State == "CompleteCommit" || d.State == "CompleteAbort")
			}
		}
		return ds, ended
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ds, ended := describe()
		if ended && len(open()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactions left open after the load: %v; the coordinator: %+v", open(), ds)
		}
	}
	// What the log holds of each transaction ("producer/txn"), and how
	// much of it is committed.
	present, committed := map[string]int{}, map[string]int{}
	for i, p := range tp.Partitions {
		// A read stops at a segment's end (segment.ms rolls these
		// segments: the test's batches carry old timestamps), so read
		// on until nothing more comes.
		var all, res topics.ReadResult
		var aborted []topics.AbortedTxn
		for off := int64(0); ; {
			r, err := p.Read(off, 64<<20, true)
			if err != nil {
				t.Fatal(err)
			}
			rc, ab, err := p.ReadCommitted(off, 64<<20, true)
			if err != nil || len(rc.Batches) != len(r.Batches) {
				t.Fatalf("partition %d at %d: read committed %d of %d bytes: %v", i, off, len(rc.Batches), len(r.Batches), err)
			}
			if len(r.Batches) == 0 {
				break
			}
			all.Batches = append(all.Batches, r.Batches...)
			res.Batches = append(res.Batches, rc.Batches...)
			aborted = append(aborted, ab...)
			bs := batches(t, r.Batches)
			last := bs[len(bs)-1]
			off = last.FirstOffset + int64(last.LastOffsetDelta) + 1
		}
		if os.Getenv("POWERLOSS_DUMP") != "" {
			t.Logf("partition %d aborted %+v", i, aborted)
		}
		for _, b := range batches(t, all.Batches) {
			if os.Getenv("POWERLOSS_DUMP") != "" {
				v := ""
				if b.Attributes&0x20 == 0 {
					v = tagOf(t, b)
				} else {
					var rec kmsg.Record
					rec.ReadFrom(b.Records)
					v = fmt.Sprintf("marker key %x", rec.Key)
				}
				t.Logf("  p%d @%d pid %d/%d %s", i, b.FirstOffset, b.ProducerID, b.ProducerEpoch, v)
			}
			if b.Attributes&0x20 != 0 {
				continue // a marker
			}
			tag := tagOf(t, b)
			present[tag]++
			isAborted := false
			for _, a := range aborted {
				isAborted = isAborted || a.ProducerID == b.ProducerID && a.FirstOffset <= b.FirstOffset && b.FirstOffset <= a.LastOffset
			}
			if !isAborted {
				committed[tag]++
			}
		}
	}
	last := map[int]int{} // producer → its last committed transaction in the log
	for tag, c := range committed {
		if c != present[tag] {
			t.Errorf("transaction %s: %d of its %d batches committed", tag, c, present[tag])
		}
		var i, k int
		fmt.Sscanf(tag, "%d/%d", &i, &k)
		last[i] = max(last[i], k)
	}
	ctxb := context.Background()
	for i := range producers {
		if k, ok := ack.commit[i]; ok && committed[fmt.Sprintf("%d/%d", i, k)] == 0 {
			t.Errorf("producer %d: the commit of transaction %d was answered, and its batches are not committed", i, k)
		}
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Version, fetch.Group = 7, fmt.Sprintf("g%d", i)
		fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "out", Partitions: []int32{0}}}
		resp := n.groups.Handle(ctxb, coordinator.Request{Msg: fetch})().(*kmsg.OffsetFetchResponse)
		got := resp.Topics[0].Partitions[0].Offset
		if want := int64(last[i]); got != want && !(got == -1 && want == 0) {
			t.Errorf("producer %d: group offset %d, want %d (its last committed transaction in the log); answered commit %v", i, got, want, ack.commit[i])
		}
	}
	t.Logf("transactions in the log %d, committed %d, answered commits %v", len(present), len(committed), ack.commit)
}

// produceTxns is producer i: transactions k = 1, 2, ... each writing a
// batch tagged i/k to one or two partitions and offset k for group g<i>,
// every fourth aborted, until ctx ends.
func produceTxns(t *testing.T, ctx context.Context, n *node, i int, seed uint64, down *atomic.Bool, ack *acked) {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	id, group := fmt.Sprintf("tx%d", i), fmt.Sprintf("g%d", i)
	fail := func(what string, args ...any) {
		if !down.Load() {
			t.Errorf("producer %d: %s", i, fmt.Sprintf(what, args...))
		}
	}
	out, code := n.c.Do(ctx, "", id, txn.InitCmd{TxnID: id, TimeoutMs: 500, ProducerID: -1, ProducerEpoch: -1, NewProducerID: int64(100 + i)})
	r, _ := out.(txn.Result)
	if code != 0 || r.Code != 0 {
		fail("init: %d %+v", code, out)
		return
	}
	pid, epoch := r.ProducerID, r.ProducerEpoch
	for k := 1; ctx.Err() == nil; k++ {
		parts := []int32{int32(rng.IntN(powerLossParts))}
		if rng.IntN(2) == 0 {
			parts = append(parts, (parts[0]+1)%powerLossParts)
		}
		for _, p := range parts {
			// The produce: the add answered once written, then the
			// batch appended and synced.
			out, code := n.c.Do(ctx, "", id, txn.AddPartitionsCmd{TxnID: id, ProducerID: pid, ProducerEpoch: epoch, Partitions: []txn.TP{{Topic: "out", Partition: p}}, Early: true})
			if r, _ := out.(txn.Result); code != 0 || r.Code != 0 {
				fail("add %d: %d %+v", k, code, out)
				return
			}
			part := n.log.Topic("out").Partitions[p]
			res, err := part.Append(valueBatch(pid, epoch, 0, fmt.Sprintf("%d/%d", i, k)), 0)
			if err == nil {
				err = part.Sync(res.End)
			}
			if err != nil {
				fail("append %d: %v", k, err)
				return
			}
		}
		out, code := n.c.Do(ctx, "", id, txn.AddGroupCmd{TxnID: id, ProducerID: pid, ProducerEpoch: epoch, Group: group, Early: true})
		if r, _ := out.(txn.Result); code != 0 || r.Code != 0 {
			fail("add group %d: %d %+v", k, code, out)
			return
		}
		commit := kmsg.NewPtrTxnOffsetCommitRequest()
		commit.Version = 3
		commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = id, group, pid, epoch
		commit.Generation = -1
		commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "out", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: int64(k), LeaderEpoch: -1}}}}
		cresp := n.groups.Handle(ctx, coordinator.Request{Msg: commit})().(*kmsg.TxnOffsetCommitResponse)
		if c := cresp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			fail("txn offset commit %d: %d", k, c)
			return
		}
		commits := k%4 != 0
		out, code = n.c.Do(ctx, "", id, txn.EndCmd{TxnID: id, ProducerID: pid, ProducerEpoch: epoch, Commit: commits, Bump: true, NewProducerID: -1})
		r, _ := out.(txn.Result)
		if code != 0 || r.Code != 0 {
			fail("end %d: %d %+v", k, code, out)
			return
		}
		if !down.Load() {
			ack.mu.Lock()
			ack.ends++
			if commits {
				ack.commit[i] = k
			}
			ack.mu.Unlock()
		}
		pid, epoch = r.ProducerID, r.ProducerEpoch
	}
}

func batches(t *testing.T, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("batch: %v", err)
		}
		out = append(out, rb)
		b = b[12+rb.Length:]
	}
	return out
}

func tagOf(t *testing.T, b kmsg.RecordBatch) string {
	t.Helper()
	var rec kmsg.Record
	if err := rec.ReadFrom(b.Records); err != nil {
		t.Fatalf("record: %v", err)
	}
	return string(rec.Value)
}
