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

// TestMarkersWrittenAtLoad is the crash between a transaction's Prepare
// record and its markers: the store holds PrepareCommit for a
// transaction whose partition has its record but no marker, and whose
// group has a pending offset. Loading the shard writes the marker and
// commits the offset, then completes the transaction.
func TestMarkersWrittenAtLoad(t *testing.T) {
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	tp, err := log.Create("out", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p := tp.Partitions[0]
	const pid = 42
	if _, err := p.Append(txnBatch(pid, 3, 0), 0); err != nil {
		t.Fatal(err)
	}
	if p.LastStable() != 0 {
		t.Fatalf("LSO %d with the transaction open", p.LastStable())
	}
	groups, err := coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer groups.Close()
	// The group's pending offset, and the transaction's PrepareCommit,
	// as a crash left them.
	var b store.Batch
	off := record.Offset{Offset: 1, LeaderEpoch: -1, CommitTimestamp: 1}
	b.Put(record.TxnOffsetKey{GroupKey: record.GroupKey{Shard: 0, Group: "g"}, ProducerID: pid, Topic: "out", Partition: 0}.Key(), off.Encode())
	prep := record.Txn{ProducerID: pid, PrevProducerID: -1, ProducerEpoch: 3, LastProducerEpoch: 2, TimeoutMs: 60000,
		State: record.TxnPrepareCommit, Partitions: []record.TxnPartition{{Topic: "out", Partition: 0}}, Groups: []string{"g"}, StartTimestamp: 1, UpdateTimestamp: 1}
	b.Put(record.TxnKey{Shard: record.TxnShardBase, TxnID: "tx"}.Key(), prep.Encode())
	if err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	// Reload the group shard so that it has the pending offset.
	groups.Unload(0)
	if err := groups.Load(0); err != nil {
		t.Fatal(err)
	}

	c, err := txncoord.Start(txncoord.Config{Store: st, Topics: log, Groups: groups, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	testkit.Eventually(t, 10*time.Second, "the transaction completed at load", func() bool {
		out, code := c.Do(ctx, "", "tx", txn.DescribeCmd{TxnIDs: []string{"tx"}})
		ds, _ := out.([]txn.Description)
		return code == 0 && len(ds) == 1 && ds[0].State == "CompleteCommit"
	})
	if lso := p.LastStable(); lso != 2 {
		t.Fatalf("LSO %d after the marker, want 2", lso)
	}
	res, aborted, err := p.ReadCommitted(0, 1<<20, true)
	if err != nil || len(aborted) != 0 || len(res.Batches) == 0 {
		t.Fatalf("read committed: %d bytes, aborted %v, %v", len(res.Batches), aborted, err)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group, fetch.RequireStable = 7, "g", true
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "out", Partitions: []int32{0}}}
	resp := groups.Handle(ctx, coordinator.Request{Msg: fetch})().(*kmsg.OffsetFetchResponse)
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset != 1 {
		t.Fatalf("offset after the commit: %+v", got)
	}
}

// TestLostAddAtLoad is the crash that a produce's early add allows
// (txn.AddPartitionsCmd.Early): the partition holds a transaction's batch,
// fsynced, and the store lost the add that should precede it. Loading
// the shard adds the partition back, so the transaction's commit writes
// its marker and the last stable offset moves past the batch; without
// that the batch would hold the partition's LSO back for good.
func TestLostAddAtLoad(t *testing.T) {
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	tp, err := log.Create("out", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer groups.Close()
	cfg := txncoord.Config{Store: st, Topics: log, Groups: groups, Shards: 1}
	c, err := txncoord.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
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
	for i, p := range tp.Partitions {
		if _, err := p.Append(txnBatch(42, 0, 0), 0); err != nil {
			t.Fatalf("append to %d: %v", i, err)
		}
	}
	c.Close()

	c, err = txncoord.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
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
	for i, p := range tp.Partitions {
		if lso, _ := p.Offsets(); p.LastStable() != 2 {
			t.Errorf("partition %d: LSO %d after the commit (log start %d), want 2: its marker was not written", i, p.LastStable(), lso)
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
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	tp, err := log.Create("out", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	const pid = 42
	for i, p := range tp.Partitions {
		if _, err := p.Append(txnBatch(pid, 3, 0), 0); err != nil {
			t.Fatalf("append to %d: %v", i, err)
		}
	}
	if _, err := tp.Partitions[0].WriteMarker(pid, 4, true, true, 1); err != nil {
		t.Fatal(err)
	}
	groups, err := coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer groups.Close()
	var b store.Batch
	off := record.Offset{Offset: 1, LeaderEpoch: -1, CommitTimestamp: 1}
	b.Put(record.TxnOffsetKey{GroupKey: record.GroupKey{Shard: 0, Group: "g"}, ProducerID: pid, Topic: "out", Partition: 0}.Key(), off.Encode())
	ongoing := record.Txn{ProducerID: pid, PrevProducerID: -1, ProducerEpoch: 3, LastProducerEpoch: 2, TimeoutMs: 60000,
		State: record.TxnOngoing, Partitions: []record.TxnPartition{{Topic: "out", Partition: 0}, {Topic: "out", Partition: 1}}, Groups: []string{"g"}, StartTimestamp: 1, UpdateTimestamp: 1}
	b.Put(record.TxnKey{Shard: record.TxnShardBase, TxnID: "tx"}.Key(), ongoing.Encode())
	if err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	groups.Unload(0)
	if err := groups.Load(0); err != nil {
		t.Fatal(err)
	}

	c, err := txncoord.Start(txncoord.Config{Store: st, Topics: log, Groups: groups, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	testkit.Eventually(t, 10*time.Second, "the transaction committed at load", func() bool {
		out, code := c.Do(ctx, "", "tx", txn.DescribeCmd{TxnIDs: []string{"tx"}})
		ds, _ := out.([]txn.Description)
		return code == 0 && len(ds) == 1 && ds[0].State == "CompleteCommit" && ds[0].ProducerEpoch == 4
	})
	for i, p := range tp.Partitions {
		res, aborted, err := p.ReadCommitted(0, 1<<20, true)
		if err != nil || len(aborted) != 0 || len(res.Batches) == 0 || p.LastStable() < 2 {
			t.Fatalf("partition %d: read committed %d bytes, aborted %v, LSO %d, %v", i, len(res.Batches), aborted, p.LastStable(), err)
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group, fetch.RequireStable = 7, "g", true
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "out", Partitions: []int32{0}}}
	resp := groups.Handle(ctx, coordinator.Request{Msg: fetch})().(*kmsg.OffsetFetchResponse)
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset != 1 {
		t.Fatalf("offset after the commit: %+v", got)
	}
}
