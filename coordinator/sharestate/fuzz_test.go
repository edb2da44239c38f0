package sharestate_test

import (
	"math/rand/v2"
	"testing"
)

// FuzzCommands runs the property test's schedule with every choice —
// which command, partition, member, offsets, acknowledgement types,
// limits, how far time moves, when the shard crashes — taken from the
// fuzzer's bytes: every invariant of TestProperty, on schedules the
// fuzzer steers. The seeds are in testdata/fuzz/FuzzCommands.
//
//	go test ./coordinator/sharestate -run XXX -fuzz FuzzCommands -fuzztime 1m
func FuzzCommands(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if msg, trace := runSchedule(&bytesChooser{b: b}, min(len(b)/4, 200)); msg != "" {
			t.Fatalf("%s\n%s", msg, trace)
		}
	})
}

// bytesChooser takes choices from bytes; once they run out, from a
// random source seeded by their length, so that the schedule can end
// (the drain) whatever the input.
type bytesChooser struct {
	b   []byte
	rng *rand.Rand
}

func (c *bytesChooser) IntN(n int) int {
	if len(c.b) > 0 {
		v := int(c.b[0])
		c.b = c.b[1:]
		if n > 256 && len(c.b) > 0 {
			v = v<<8 | int(c.b[0])
			c.b = c.b[1:]
		}
		return v % n
	}
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(1, 2))
	}
	return c.rng.IntN(n)
}
