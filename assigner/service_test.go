package assigner

import (
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/handoff"
)

// A reload of the shard (after a failed store write) ends every open
// stream, so that its consumer registers again with the rebuilt machine;
// other pushes go to their own stream only.
func TestResetEndsEveryStream(t *testing.T) {
	s := &Service{boxes: map[uint64]*outbox{}}
	a, b := &outbox{wake: make(chan struct{}, 1)}, &outbox{wake: make(chan struct{}, 1)}
	s.boxes[1], s.boxes[2] = a, b
	s.push(coordinator.Push{Stream: 2, Msg: handoff.Send{Consumer: "b"}})
	if len(a.take()) != 0 {
		t.Fatal("a push reached another stream")
	}
	if m := b.take(); len(m) != 1 {
		t.Fatalf("stream 2 got %v", m)
	}
	s.push(coordinator.Push{Stream: 0, Msg: handoff.Reset{}})
	for i, box := range []*outbox{a, b} {
		m := box.take()
		if len(m) != 1 {
			t.Fatalf("stream %d after a reset: %v", i+1, m)
		}
		if _, ok := m[0].(handoff.Close); !ok {
			t.Fatalf("stream %d after a reset got %T, want a Close", i+1, m[0])
		}
	}
}
