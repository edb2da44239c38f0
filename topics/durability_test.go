package topics

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/cohort-dev/cohort/internal/powerloss"
)

// TestSyncedBatchesSurvivePowerLoss: concurrent writers append to three
// partitions (with small segments, so rolls happen) and wait on Sync for a
// random half of their batches; then every file is cut back to what fsync
// had made durable. Every batch whose Sync returned must read back intact.
// It fails if Sync returns before the data is fsynced.
func TestSyncedBatchesSurvivePowerLoss(t *testing.T) {
	e := newEnv(t)
	power := powerloss.New()
	e.close()
	l, err := Open(Config{Dir: e.dataDir(), Store: e.st, SyncFile: power.SyncFile})
	if err != nil {
		t.Fatal(err)
	}
	e.log = l
	tp := e.create("durable", 3, map[string]string{"segment.bytes": "8192"})

	type acked struct {
		part int
		base int64
		tag  string
	}
	var (
		mu   sync.Mutex
		acks []acked
		wg   sync.WaitGroup
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < 150; i++ {
				part := rng.Intn(len(tp.Partitions))
				tag := fmt.Sprintf("w%d-%d", w, i)
				res, err := tp.Partitions[part].Append(plainBatch(t, 1+rng.Intn(5), tag), 0)
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				if rng.Intn(2) == 0 {
					if err := tp.Partitions[part].Sync(res.End); err != nil {
						t.Errorf("Sync: %v", err)
						return
					}
					mu.Lock()
					acks = append(acks, acked{part, res.BaseOffset, tag})
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	// A tail that is never synced: the simulated power loss must take it,
	// or the simulation proves nothing.
	var tails []int64
	for _, p := range tp.Partitions {
		tails = append(tails, mustAppend(t, p, plainBatch(t, 3, "unsynced")).BaseOffset)
	}

	power.Cut() // Close syncs everything; that is not what a crash does
	e.close()
	if err := power.Restore(e.dataDir(), segmentSuffix); err != nil {
		t.Fatal(err)
	}
	e.open()

	if len(acks) == 0 {
		t.Fatal("no batch was synced")
	}
	for _, a := range acks {
		p := e.part("durable", a.part)
		res, err := p.Read(a.base, 1, true)
		if err != nil || len(res.Batches) == 0 {
			t.Fatalf("synced batch %s at %d-%d lost after power loss (err %v)", a.tag, a.part, a.base, err)
		}
		b := splitBatches(t, res.Batches)[0]
		if b.Base != a.base || string(b.Records[0].Key) != "k-"+a.tag+"-0" {
			t.Fatalf("at %d-%d: batch %d with key %q, want %s", a.part, a.base, b.Base, b.Records[0].Key, a.tag)
		}
	}
	for i, tail := range tails {
		if _, hw := e.part("durable", i).Offsets(); hw > tail {
			t.Errorf("partition %d kept its unsynced tail (high watermark %d > %d): the simulation did not cut anything", i, hw, tail)
		}
	}
	t.Logf("%d synced batches survived", len(acks))
}
