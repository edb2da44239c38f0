package txn_test

import "testing"

// FuzzSchedule runs the property test's random schedule from a fuzzed
// seed: every invariant of TestProperty, on schedules the fuzzer steers.
//
//	go test ./coordinator/txn -fuzz FuzzSchedule -fuzztime 1m
func FuzzSchedule(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 8, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		if msg, trace := runSchedule(seed, 200); msg != "" {
			t.Fatalf("seed %d: %s\n%s", seed, msg, trace)
		}
	})
}
