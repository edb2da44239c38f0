package topics

import (
	"errors"
	"reflect"
	"testing"
)

func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, tag string) []byte {
	return makeBatch(t, batchOpts{producerID: pid, epoch: epoch, seq: seq, transactional: true, records: simpleRecords(n, tag, 1000)})
}

// TestTransactionsInTheLog: two producers' transactions interleave; the
// LSO stays at the oldest open one; a commit and an abort marker close
// them; read_committed stops at the LSO and lists the aborted range; all
// of it is rebuilt at recovery; an old epoch is refused after a marker of
// a newer one.
func TestTransactionsInTheLog(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	mustAppend(t, p, plainBatch(t, 2, "plain"))    // 0-1
	mustAppend(t, p, txnBatch(t, 7, 0, 0, 2, "a")) // 2-3, producer 7
	mustAppend(t, p, txnBatch(t, 8, 0, 0, 1, "b")) // 4, producer 8
	mustAppend(t, p, txnBatch(t, 7, 0, 2, 1, "a")) // 5
	if got := p.LastStable(); got != 2 {
		t.Fatalf("LSO with two open transactions: %d, want 2", got)
	}
	res, ab, err := p.ReadCommitted(0, 1<<20, true)
	if err != nil || len(splitBatches(t, res.Batches)) != 1 || ab != nil || res.LastStable != 2 || res.HighWatermark != 6 {
		t.Fatalf("read_committed below the LSO: %d batches, aborted %v, lso %d, hw %d, %v", len(splitBatches(t, res.Batches)), ab, res.LastStable, res.HighWatermark, err)
	}
	// Producer 8 commits; producer 7 aborts.
	if _, err := p.WriteMarker(8, 0, true, false, 2000); err != nil {
		t.Fatal(err)
	}
	if got := p.LastStable(); got != 2 {
		t.Fatalf("LSO after 8 committed: %d, want 2", got)
	}
	end, err := p.WriteMarker(7, 0, false, false, 2000) // offset 7
	if err != nil || end != 8 {
		t.Fatalf("abort marker: end %d, %v", end, err)
	}
	if err := p.Sync(end); err != nil {
		t.Fatal(err)
	}
	check := func(p *Partition) {
		t.Helper()
		if got := p.LastStable(); got != 8 {
			t.Fatalf("LSO with none open: %d, want 8", got)
		}
		res, ab, err := p.ReadCommitted(2, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 7}}; !reflect.DeepEqual(ab, want) {
			t.Fatalf("aborted %v, want %v", ab, want)
		}
		bs := splitBatches(t, res.Batches)
		if len(bs) != 5 || bs[4].Base != 7 || bs[4].Header.Attributes&0x30 != 0x30 {
			t.Fatalf("batches %d, last %+v", len(bs), bs[len(bs)-1].Header)
		}
		// A marker written again (a restart of the coordinator) adds
		// nothing.
		if end, err := p.WriteMarker(7, 0, false, false, 3000); err != nil || end != 8 {
			t.Fatalf("marker again: %d, %v", end, err)
		}
	}
	check(p)
	e.reopen()
	check(e.part("t", 0))
	p = e.part("t", 0)
	// The coordinator fenced producer 8 (epoch 1): its epoch 0 is refused.
	if _, err := p.WriteMarker(8, 1, false, false, 4000); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(txnBatch(t, 8, 0, 1, 1, "zombie"), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("zombie append: %v", err)
	}
	if _, err := p.WriteMarker(8, 0, true, false, 4000); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old marker: %v", err)
	}
	pi := p.Producers()
	if len(pi) != 2 || pi[0].ProducerID != 7 || pi[0].TxnStartOffset != -1 || pi[1].ProducerEpoch != 1 {
		t.Fatalf("producers %+v", pi)
	}
}
