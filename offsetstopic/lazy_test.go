package offsetstopic

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
)

// lazyRig is a rig whose partition is lazy: it reads the rig's store
// when a reader comes, and its reservations for what it shows again go
// to the rig's shard.
type lazyRig struct {
	*rig
	mu      sync.Mutex
	now     time.Time
	asked   []int64 // Reserve's calls
	scanned int
}

func newLazyRig(t *testing.T, block int64, idle time.Duration) *lazyRig {
	l := &lazyRig{now: time.UnixMilli(1_700_000_000_000)}
	l.rig = &rig{t: t, now: l.now, store: map[string][]byte{}}
	l.rig.startBlock(l.opts(idle), block)
	return l
}

func (l *lazyRig) opts(idle time.Duration) Options {
	return Options{
		Idle: idle,
		Now: func() time.Time {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.now
		},
		Scan: func(fn func(k, v []byte) error) error {
			l.scanned++
			keys := make([]string, 0, len(l.store))
			for k := range l.store {
				keys = append(keys, k)
			}
			sortStrings(keys)
			for _, k := range keys {
				if err := fn([]byte(k), l.store[k]); err != nil {
					return err
				}
			}
			return nil
		},
		// The shard counts them (grouptype.Reserver.Add); its next
		// event reserves above them if due.
		Reserve: func(n int64) {
			l.asked = append(l.asked, n)
			l.res.Add(n)
		},
	}
}

func (l *lazyRig) advance(d time.Duration) {
	l.mu.Lock()
	l.now = l.now.Add(d)
	l.mu.Unlock()
}

// state is what a reader that read everything from 0 holds: the last
// record of every key.
func state(recs []got) map[string]string {
	out := map[string]string{}
	for _, g := range recs {
		group, p, off, tomb := committed(g)
		k := fmt.Sprintf("%s/%d", group, p)
		if tomb {
			delete(out, k)
		} else {
			out[k] = fmt.Sprint(off)
		}
	}
	return out
}

// TestPartitionLazy: a lazy partition holds nothing and counts offsets
// until a reader comes; the first read shows the shard's records, read
// from the store, from the next offset on, and the records after them
// as they become durable; once no one has read for Idle it holds nothing
// again, and the next reader finds the state as it is then, above every
// offset shown before.
func TestPartitionLazy(t *testing.T) {
	const idle = time.Minute
	l := newLazyRig(t, ReserveBlock, idle)
	l.write(offsetRec("g", "t", 0, 10), offsetRec("g", "t", 1, 20))
	l.write(offsetRec("g", "t", 0, 11))
	l.write(offsetRec("h", "t", 0, 5))
	if st := l.p.Stats(); st.Awake || st.Live != 0 || st.Next != 4 || st.HighWatermark != 4 || l.scanned != 0 {
		t.Fatalf("before any reader: %+v, %d scans; want asleep with 4 offsets counted", st, l.scanned)
	}

	// The first read: the three live records at 4, 5 and 6.
	recs := l.read(0)
	if st := l.p.Stats(); !st.Awake || st.Wakes != 1 || st.Live != 3 || st.Next != 7 {
		t.Fatalf("after a read: %+v", st)
	}
	if len(recs) != 3 || recs[0].off != 4 || recs[2].off != 6 {
		t.Fatalf("first read %+v, want offsets 4 to 6", recs)
	}
	if got := fmt.Sprint(state(recs)); got != "map[g/0:11 g/1:20 h/0:5]" {
		t.Fatalf("first read's state %s", got)
	}
	if fmt.Sprint(l.asked) != "[3]" {
		t.Fatalf("reservations asked %v, want [3]", l.asked)
	}
	// Awake, it goes on as an eager partition.
	l.write(offsetRec("g", "t", 1, 21), machine.Record{Key: offsetRec("h", "t", 0, 0).Key})
	recs = l.read(0)
	if got := fmt.Sprint(state(recs)); got != "map[g/0:11 g/1:21]" || recs[len(recs)-1].off != 8 {
		t.Fatalf("awake: %s ending at %d", got, recs[len(recs)-1].off)
	}
	if l.scanned != 1 {
		t.Fatalf("%d scans, want 1", l.scanned)
	}

	// No reader for Idle: it holds nothing again.
	l.advance(idle)
	deadline := time.Now().Add(10 * time.Second)
	for l.p.Stats().Awake {
		if time.Now().After(deadline) {
			t.Fatal("still awake after the idle time")
		}
		time.Sleep(time.Millisecond)
	}
	if st := l.p.Stats(); st.Live != 0 || st.Next != 9 {
		t.Fatalf("asleep again: %+v", st)
	}
	// Asleep: a deletion and a commit, counted, not held.
	l.write(machine.Record{Key: offsetRec("g", "t", 1, 0).Key}, offsetRec("i", "t", 0, 7))
	// A reader resuming where it was (9) reads the state as it is now,
	// from 11 on: the deletion made while asleep is not shown (as after a
	// restart), the key is just absent.
	recs = l.read(9)
	if got := fmt.Sprint(state(recs)); got != "map[g/0:11 i/0:7]" || len(recs) != 2 || recs[0].off != 11 {
		t.Fatalf("woken again: %+v (%s)", recs, fmt.Sprint(state(recs)))
	}
	if st := l.p.Stats(); st.Wakes != 2 || fmt.Sprint(l.asked) != "[3 2]" {
		t.Fatalf("second wake: %+v, reservations asked %v", st, l.asked)
	}
}

// TestPartitionLazyReservations: the records a woken partition shows
// again take offsets the shard's own records did not reserve; with
// Reserve counting them the shard reserves above them, so the high
// watermark always reaches the records, however often readers come and
// go. Without (Reserve nil) it falls behind within a few wakes.
func TestPartitionLazyReservations(t *testing.T) {
	for _, counted := range []bool{true, false} {
		t.Run(fmt.Sprintf("counted=%v", counted), func(t *testing.T) {
			const block = 16
			l := newLazyRig(t, block, time.Minute)
			var recs []machine.Record
			for i := range 6 {
				recs = append(recs, offsetRec("g", "t", int32(i), 1))
			}
			l.write(recs...)
			if !counted {
				l.p.opts.Reserve = nil
			}
			behind := false
			for round := range 20 {
				l.read(0) // wakes it: 6 records again
				l.write(offsetRec("g", "t", 0, int64(round)))
				st := l.p.Stats()
				if st.HighWatermark != st.Next {
					behind = true
					if counted {
						t.Fatalf("round %d: high watermark %d behind the records, %d", round, st.HighWatermark, st.Next)
					}
				}
				l.advance(time.Minute)
				l.p.sleepIfIdle() // what the maintainer's next check does
				if l.p.Stats().Awake {
					t.Fatal("still awake after the idle time")
				}
			}
			if !counted && !behind {
				t.Fatal("without Reserve the high watermark kept up: the test shows nothing")
			}
		})
	}
}

// TestPartitionLazyListOffsets: Touch (ListOffsets) wakes a lazy
// partition, so that the end offset it answers covers what a fetch from
// the start reads.
func TestPartitionLazyListOffsets(t *testing.T) {
	l := newLazyRig(t, ReserveBlock, time.Minute)
	l.write(offsetRec("g", "t", 0, 10), offsetRec("g", "t", 1, 20))
	if err := l.p.Touch(); err != nil {
		t.Fatal(err)
	}
	_, hw := l.p.Offsets()
	recs := l.read(0)
	if len(recs) != 2 || recs[len(recs)-1].off != hw-1 {
		t.Fatalf("after Touch: hw %d, read %+v", hw, recs)
	}
	if off, _, found, err := l.p.OffsetForTimestamp(0); err != nil || !found || off != 2 {
		t.Fatalf("first by timestamp: %d %v %v, want 2", off, found, err)
	}
}
