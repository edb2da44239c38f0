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
