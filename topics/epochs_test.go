package topics

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestEndOffsetFor: Kafka's answers, from its LeaderEpochFileCache: the
// latest epoch ends at the log end, an earlier one where the next began,
// an epoch with no records of its own answers the one before it, one
// above every epoch (or -1) is undefined.
func TestEndOffsetFor(t *testing.T) {
	var entries []epochEntry
	for _, a := range []epochEntry{{0, 0}, {1, 10}, {2, 10}, {4, 25}} {
		entries, _ = assignEpoch(entries, a.epoch, a.start)
	}
	if want := []epochEntry{{0, 0}, {2, 10}, {4, 25}}; !slices.Equal(entries, want) {
		t.Fatalf("entries %v, want %v (epoch 1 had no records)", entries, want)
	}
	if _, ok := assignEpoch(entries, 3, 30); ok {
		t.Fatal("an epoch below the latest was assigned")
	}
	for _, tc := range []struct {
		requested int32
		epoch     int32
		end       int64
	}{
		{0, 0, 10}, {1, 0, 10}, {2, 2, 25}, {3, 2, 25}, {4, 4, 40}, {5, -1, -1}, {-1, -1, -1},
	} {
		if e, end := endOffsetFor(entries, tc.requested, 40); e != tc.epoch || end != tc.end {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.requested, e, end, tc.epoch, tc.end)
		}
	}
	if e, end := endOffsetFor([]epochEntry{{3, 5}}, 1, 9); e != 1 || end != 5 {
		t.Errorf("an epoch below every one known: (%d, %d), want (1, 5)", e, end)
	}
	for off, want := range map[int64]int32{0: 0, 9: 0, 10: 2, 24: 2, 25: 4, 99: 4} {
		if got := epochAt(entries, off); got != want {
			t.Errorf("epochAt(%d) = %d, want %d", off, got, want)
		}
	}
}

// TestEpochsFile: the file round-trips; a missing one is epoch 0 from 0;
// a damaged one is refused.
func TestEpochsFile(t *testing.T) {
	dir := t.TempDir()
	if got, err := loadEpochs(dir); err != nil || !slices.Equal(got, []epochEntry{{0, 0}}) {
		t.Fatalf("no file: %v, %v", got, err)
	}
	want := []epochEntry{{0, 0}, {3, 17}}
	if err := saveEpochs(dir, want, dataSync); err != nil {
		t.Fatal(err)
	}
	if got, err := loadEpochs(dir); err != nil || !slices.Equal(got, want) {
		t.Fatalf("saved: %v, %v", got, err)
	}
	for _, bad := range []string{"", "1\n", "2 5\n1 6\n", "0 5\n1 4\n", "x 1\n"} {
		if err := os.WriteFile(filepath.Join(dir, epochsFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadEpochs(dir); err == nil {
			t.Errorf("%q loaded", bad)
		}
	}
}

// TestLeaderEpochsAcrossReopens: each open of the log raises the epoch of
// the partitions it serves; a batch carries the epoch it was appended in;
// OffsetForLeaderEpoch's answer for an earlier epoch is where the next
// began, and the topic's catalog epoch is the partition's.
func TestLeaderEpochsAcrossReopens(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	e.reopen() // the topic now exists at an open: epoch 1
	p := e.part("t", 0)
	first := p.LeaderEpoch()
	if first < 1 || e.log.Topic("t").LeaderEpoch(0) != first {
		t.Fatalf("after a reopen: partition epoch %d, catalog %d", first, e.log.Topic("t").LeaderEpoch(0))
	}
	mustAppend(t, p, plainBatch(t, 3, "a")) // 0-2
	e.reopen()
	p = e.part("t", 0)
	mustAppend(t, p, plainBatch(t, 2, "b")) // 3-4
	second := p.LeaderEpoch()
	if second != first+1 {
		t.Fatalf("epoch after a second reopen %d, want %d", second, first+1)
	}
	batches := readAll(t, p, 0)
	if len(batches) != 2 || batches[0].Header.PartitionLeaderEpoch != first || batches[1].Header.PartitionLeaderEpoch != second {
		t.Fatalf("batches' epochs %+v, want %d then %d", batches, first, second)
	}
	if ep, end := p.EndOffsetFor(first); ep != first || end != 3 {
		t.Fatalf("end of epoch %d: (%d, %d), want (%d, 3)", first, ep, end, first)
	}
	if ep, end := p.EndOffsetFor(second); ep != second || end != 5 {
		t.Fatalf("end of the current epoch: (%d, %d), want (%d, 5)", ep, end, second)
	}
	if got := p.EpochAt(1); got != first {
		t.Fatalf("epoch of offset 1: %d, want %d", got, first)
	}
}
