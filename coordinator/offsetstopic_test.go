package coordinator_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// committedIn reads the partition whole and returns the offset it shows
// for group's partition t/0, -1 if none.
func committedIn(t *testing.T, p *offsetstopic.Partition, group string) int64 {
	t.Helper()
	res, err := p.Read(0, 1<<30, true)
	if err != nil {
		t.Fatal(err)
	}
	var out int64 = -1
	for b := res.Batches; len(b) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		recs := rb.Records
		for range rb.NumRecords {
			var r kmsg.Record
			if err := r.ReadFrom(recs); err != nil {
				t.Fatal(err)
			}
			recs = recs[len(r.AppendTo(nil)):]
			var k kmsg.OffsetCommitKey
			if r.Key[1] > 1 || k.ReadFrom(r.Key) != nil || k.Group != group {
				continue
			}
			var v kmsg.OffsetCommitValue
			if r.Value == nil || v.ReadFrom(r.Value) != nil {
				out = -1
				continue
			}
			out = v.Offset
		}
		b = b[12+rb.Length:]
	}
	return out
}

// TestOffsetsTopicFollowsDurability: a shard's __consumer_offsets
// partition shows a commit only once the store has made it durable, never
// one whose write failed; the shard's offset reservation is written at
// load; after the shard is given up and loaded again, the new partition
// starts above every offset the old one showed.
func TestOffsetsTopicFollowsDurability(t *testing.T) {
	ps, err := pebble.Open(filepath.Join(t.TempDir(), "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	st := &holdStore{Store: ps, entered: make(chan struct{}, 1), scanned: make(chan struct{}, 1)}
	co, err := coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co.Close)
	commit := func(offset int64) int16 {
		req := commitReq("g", "", -1, offset)
		req.SetVersion(8)
		resp := co.Handle(context.Background(), coordinator.Request{Msg: req})().(*kmsg.OffsetCommitResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	p := co.OffsetsPartition(0)
	if p == nil {
		t.Fatal("no partition for a loaded shard")
	}
	testkit.Eventually(t, 10*time.Second, "the load's reservation is durable", func() bool {
		v, err := ps.Get(record.OffsetsTopicKey{Shard: 0}.Key())
		if err != nil {
			return false
		}
		o, err := record.DecodeOffsetsTopic(v)
		return err == nil && o.Reserved >= offsetstopic.ReserveBlock
	})

	if code := commit(5); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	testkit.Eventually(t, 10*time.Second, "the commit in the partition", func() bool { return committedIn(t, p, "g") == 5 })

	// Held: not shown while its write waits.
	unhold := st.hold(t)
	done := make(chan int16, 1)
	go func() { done <- commit(6) }()
	<-st.entered
	before := p.Stats()
	time.Sleep(100 * time.Millisecond) // a negative check: can only pass wrongly
	if got := committedIn(t, p, "g"); got != 5 || p.Stats().Next != before.Next {
		t.Fatalf("partition shows %d (next %d → %d) while the write is held", got, before.Next, p.Stats().Next)
	}
	unhold()
	if code := <-done; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	testkit.Eventually(t, 10*time.Second, "the held commit in the partition", func() bool { return committedIn(t, p, "g") == 6 })
	_, hw := p.Offsets()

	// Failed: never shown; the shard is given up, its partition closed,
	// and the next load's partition starts above.
	st.mu.Lock()
	st.failNext = true
	st.mu.Unlock()
	if code := commit(7); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit with a failing write: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if _, err := p.Read(0, 1<<20, true); !errors.Is(err, offsetstopic.ErrClosed) {
		t.Fatalf("read of the given-up shard's partition: %v", err)
	}
	var p2 *offsetstopic.Partition
	testkit.Eventually(t, 10*time.Second, "the shard loaded again", func() bool {
		p2 = co.OffsetsPartition(0)
		if p2 == nil || p2 == p {
			return false
		}
		_, hw2 := p2.Offsets()
		return hw2 > hw
	})
	res, err := p2.Read(0, 1<<30, true)
	if err != nil || len(res.Batches) == 0 {
		t.Fatalf("read after the reload: %v", err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(res.Batches); err != nil || rb.FirstOffset < hw {
		t.Fatalf("first offset after the reload %d (%v), want at least %d", rb.FirstOffset, err, hw)
	}
	if got := committedIn(t, p2, "g"); got != 6 {
		t.Errorf("after the reload the partition shows %d, want the durable 6", got)
	}
}

// TestOffsetsTopicLazy: a shard's __consumer_offsets partition holds
// none of its records until someone reads it, then shows them all, read
// from the store; after a restart it is asleep again, and a reader finds
// the state above every offset shown before.
func TestOffsetsTopicLazy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ps, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	co, err := coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: ps})
	if err != nil {
		t.Fatal(err)
	}
	groupsOf := []string{"a", "b", "c"}
	for i, g := range groupsOf {
		req := commitReq(g, "", -1, int64(10+i))
		req.SetVersion(8)
		if code := co.Handle(context.Background(), coordinator.Request{Msg: req})().(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit %s: %v", g, kerr.ErrorForCode(code))
		}
	}
	p := co.OffsetsPartition(0)
	testkit.Eventually(t, 10*time.Second, "the commits counted", func() bool { return p.Stats().Next >= 6 })
	if st := p.Stats(); st.Awake || st.Live != 0 {
		t.Fatalf("no reader yet: %+v, want asleep holding nothing", st)
	}
	for i, g := range groupsOf {
		if got := committedIn(t, p, g); got != int64(10+i) {
			t.Fatalf("group %s: %d, want %d", g, got, 10+i)
		}
	}
	st := p.Stats()
	if !st.Awake || st.Wakes != 1 || st.Live != 6 { // a group's record and its offset, three times
		t.Fatalf("after reads: %+v, want awake once with 6 records", st)
	}
	shown := st.HighWatermark
	co.Close()

	co, err = coordinator.Start(coordinator.Config{Shards: 1}, coordinator.Options{Store: ps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close(); ps.Close() })
	p = co.OffsetsPartition(0)
	if st := p.Stats(); st.Awake || st.Live != 0 || st.Next < shown {
		t.Fatalf("after a restart: %+v, want asleep from %d on", st, shown)
	}
	var res offsetstopic.ReadResult
	testkit.Eventually(t, 10*time.Second, "a read from the old high watermark shows records", func() bool {
		res, err = p.Read(shown, 1<<30, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Batches) > 0
	})
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(res.Batches); err != nil || rb.FirstOffset < shown {
		t.Fatalf("first batch at %d, want at or above %d (%v)", rb.FirstOffset, shown, err)
	}
	if got := committedIn(t, p, "c"); got != 12 {
		t.Fatalf("after a restart group c: %d, want 12", got)
	}
}
