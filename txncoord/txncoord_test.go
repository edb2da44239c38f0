package txncoord_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/topics"
	"github.com/cohort-dev/cohort/txncoord"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnBatch is a transactional producer's batch of one record.
func txnBatch(pid int64, epoch int16, seq int32) []byte {
	return valueBatch(pid, epoch, seq, "v")
}

// valueBatch is txnBatch with a value of its own (short: its length
// takes one varint byte).
func valueBatch(pid int64, epoch int16, seq int32, value string) []byte {
	rec := kmsg.Record{Value: []byte(value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // a one-byte varint length
	b := kmsg.RecordBatch{
		Magic: 2, Attributes: 0x10, FirstTimestamp: 1, MaxTimestamp: 1,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: rec.AppendTo(nil),
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// loadEnv is a store, a topic log with topic "out" and a group
// coordinator of one shard, closed when the test ends: what a crash left
// for a transaction coordinator to load.
type loadEnv struct {
	t      *testing.T
	st     *pebble.Store
	log    *topics.Log
	tp     *topics.Topic
	groups *coordinator.Coordinator
}

func newLoadEnv(t *testing.T, partitions int32) *loadEnv {
	dir := t.TempDir()
	e := &loadEnv{t: t}
	var err error
	if e.st, err = pebble.Open(filepath.Join(dir, "store"), pebble.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.st.Close() })
	if e.log, err = topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: e.st}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.log.Close() })
	if e.tp, err = e.log.Create("out", partitions, nil, false); err != nil {
		t.Fatal(err)
	}
	if e.groups, err = coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: e.st}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.groups.Close)
	return e
}

// append writes a transactional batch of pid at epoch to each partition.
func (e *loadEnv) append(pid int64, epoch int16, partitions ...int) {
	for _, i := range partitions {
		if _, err := e.tp.Partitions[i].Append(txnBatch(pid, epoch, 0), 0); err != nil {
			e.t.Fatalf("append to %d: %v", i, err)
		}
	}
}

// crashed writes what a crash left in the store: group g's pending offset
// 1 of rec's producer, and rec as transaction tx's record; then it
// reloads the group shard so that it has the pending offset.
func (e *loadEnv) crashed(rec record.Txn) {
	var b store.Batch
	off := record.Offset{Offset: 1, LeaderEpoch: -1, CommitTimestamp: 1}
	b.Put(record.TxnOffsetKey{GroupKey: record.GroupKey{Shard: 0, Group: "g"}, ProducerID: rec.ProducerID, Topic: "out", Partition: 0}.Key(), off.Encode())
	b.Put(record.TxnKey{Shard: record.TxnShardBase, TxnID: "tx"}.Key(), rec.Encode())
	if err := e.st.Apply(&b); err != nil {
		e.t.Fatal(err)
	}
	e.groups.Unload(0)
	if err := e.groups.Load(0); err != nil {
		e.t.Fatal(err)
	}
}

// start starts the transaction coordinator (one shard); stop it with Close.
func (e *loadEnv) start() *txncoord.Coordinator {
	c, err := txncoord.Start(txncoord.Config{Store: e.st, Topics: e.log, Groups: e.groups, Shards: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// committed waits for tx to be CompleteCommit at epoch, then checks that
// every partition's batches are committed and group g's offset is 1.
func (e *loadEnv) committed(c *txncoord.Coordinator, epoch int16) {
	e.t.Helper()
	ctx := context.Background()
	testkit.Eventually(e.t, 10*time.Second, "the transaction committed at load", func() bool {
		out, code := c.Do(ctx, "", "tx", txn.DescribeCmd{TxnIDs: []string{"tx"}})
		ds, _ := out.([]txn.Description)
		return code == 0 && len(ds) == 1 && ds[0].State == "CompleteCommit" && ds[0].ProducerEpoch == epoch
	})
	for i, p := range e.tp.Partitions {
		res, aborted, err := p.ReadCommitted(0, 1<<20, true)
		if err != nil || len(aborted) != 0 || len(res.Batches) == 0 || p.LastStable() != 2 {
			e.t.Fatalf("partition %d: read committed %d bytes, aborted %v, LSO %d (want 2), %v", i, len(res.Batches), aborted, p.LastStable(), err)
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group, fetch.RequireStable = 7, "g", true
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "out", Partitions: []int32{0}}}
	resp := e.groups.Handle(ctx, coordinator.Request{Msg: fetch})().(*kmsg.OffsetFetchResponse)
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset != 1 {
		e.t.Fatalf("offset after the commit: %+v", got)
	}
}

// TestMarkersWrittenAtLoad is the crash between a transaction's Prepare
// record and its markers: the store holds PrepareCommit for a
// transaction whose partition has its record but no marker, and whose
// group has a pending offset. Loading the shard writes the marker and
// commits the offset, then completes the transaction.
func TestMarkersWrittenAtLoad(t *testing.T) {
	e := newLoadEnv(t, 1)
	const pid = 42
	e.append(pid, 3, 0)
	if lso := e.tp.Partitions[0].LastStable(); lso != 0 {
		t.Fatalf("LSO %d with the transaction open", lso)
	}
	e.crashed(record.Txn{ProducerID: pid, PrevProducerID: -1, ProducerEpoch: 3, LastProducerEpoch: 2, TimeoutMs: 60000,
		State: record.TxnPrepareCommit, Partitions: []record.TxnPartition{{Topic: "out", Partition: 0}}, Groups: []string{"g"}, StartTimestamp: 1, UpdateTimestamp: 1})
	c := e.start()
	defer c.Close()
	e.committed(c, 3)
}

// TestLostAddAtLoad is the crash that a produce's early add allows
// (txn.AddPartitionsCmd.Early): the partition holds a transaction's batch,
// fsynced, and the store lost the add that should precede it. Loading
// the shard adds the partition back, so the transaction's commit writes
// its marker and the last stable offset moves past the batch; without
// that the batch would hold the partition's LSO back for good.
func TestLostAddAtLoad(t *testing.T) {
	e := newLoadEnv(t, 2)
	c := e.start()
	ctx := context.Background()
	out, code := c.Do(ctx, "", "tx", txn.InitCmd{TxnID: "tx", TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1, NewProducerID: 42})
	if r, _ := out.(txn.Result); code != 0 || r.Code != 0 {
		t.Fatalf("init: %d %+v", code, out)
	}
	// Partition 1's add is in the store and its batch in the log;
	// partition 0's batch is in the log and its add was lost.
	out, code = c.Do(ctx, "", "tx", txn.AddPartitionsCmd{TxnID: "tx", ProducerID: 42, ProducerEpoch: 0, Partitions: []txn.TP{{Topic: "out", Partition: 1}}})
	if r, _ := out.(txn.Result); code != 0 || r.Code != 0 {
		t.Fatalf("add: %d %+v", code, out)
	}
	e.append(42, 0, 0, 1)
	c.Close()

	c = e.start()
	defer c.Close()
	out, code = c.Do(ctx, "", "tx", txn.DescribeCmd{TxnIDs: []string{"tx"}})
	ds, _ := out.([]txn.Description)
	if code != 0 || len(ds) != 1 || ds[0].State != "Ongoing" || len(ds[0].Partitions) != 2 {
		t.Fatalf("after the load: %d %+v, want the transaction ongoing on both partitions", code, out)
	}
	out, code = c.Do(ctx, "", "tx", txn.EndCmd{TxnID: "tx", ProducerID: 42, ProducerEpoch: 0, Commit: true, Bump: true, NewProducerID: -1})
	if r, _ := out.(txn.Result); code != 0 || r.Code != 0 {
		t.Fatalf("end: %d %+v", code, out)
	}
	for i, p := range e.tp.Partitions {
		if p.LastStable() != 2 {
			t.Errorf("partition %d: LSO %d after the commit, want 2: its marker was not written", i, p.LastStable())
		}
	}
}

// TestLostPrepareAtLoad is the crash that an early Markers push allows
// (an EndTxn with a bump): partition 0 holds its commit marker at the
// bumped epoch, partition 1 none yet, the group its pending offset, and
// the store lost the PrepareCommit, so it still says ongoing. Loading the
// shard prepares the commit again from the marker and finishes it: the
// second partition's marker, the offset committed.
func TestLostPrepareAtLoad(t *testing.T) {
	e := newLoadEnv(t, 2)
	const pid = 42
	e.append(pid, 3, 0, 1)
	if _, err := e.tp.Partitions[0].WriteMarker(pid, 4, true, true, 1); err != nil {
		t.Fatal(err)
	}
	e.crashed(record.Txn{ProducerID: pid, PrevProducerID: -1, ProducerEpoch: 3, LastProducerEpoch: 2, TimeoutMs: 60000,
		State: record.TxnOngoing, Partitions: []record.TxnPartition{{Topic: "out", Partition: 0}, {Topic: "out", Partition: 1}}, Groups: []string{"g"}, StartTimestamp: 1, UpdateTimestamp: 1})
	c := e.start()
	defer c.Close()
	e.committed(c, 4)
}
