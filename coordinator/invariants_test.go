package coordinator_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/record"
)

// invEnv drives a counters machine through the runtime's invariant
// checks by hand, as the runtime does under the invariants build tag: a
// load, then events.
type invEnv struct {
	t   *testing.T
	m   coordinator.Machine
	inv coordinator.Invariants
	id  coordinator.RequestID
}

// newInvEnv loads a machine of shard 0 from n stored counters.
func newInvEnv(t *testing.T, n int) *invEnv {
	e := &invEnv{t: t, m: newCounters(0)(), inv: coordinator.NewInvariants(0, newCounters(0))}
	for i := range n {
		k := append(record.ShardPrefix(0), fmt.Sprintf("c%03d", i)...)
		v := binary.BigEndian.AppendUint64(nil, uint64(i))
		e.inv.Loaded(k, v)
		if err := e.m.Replay(coordinator.Record{Key: k, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.inv.Event(e.m, e.m.Loaded(time.Time{}).Records); err != nil {
		t.Fatalf("after the load: %v", err)
	}
	return e
}

// do hands the machine op s and runs the checks after it.
func (e *invEnv) do(s string) error {
	e.id++
	out := e.m.Handle(time.Time{}, coordinator.Request{ID: e.id, Msg: op(s, 0)})
	return e.inv.Event(e.m, out.Records)
}

// TestInvariantsCatchABrokenMachine: the runtime's checks (run under the
// invariants build tag, driven by hand here) pass a machine that keeps
// its rules, and fail one that changes its durable state without a
// record, or whose own Check fails, naming the shard and the difference.
func TestInvariantsCatchABrokenMachine(t *testing.T) {
	t.Run("unrecorded", func(t *testing.T) {
		e := newInvEnv(t, 0)
		for _, s := range []string{"inc:a", "inc:a", "timer:a", "get:a"} {
			if err := e.do(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		// Caught within eight events (replayEvery) of the last check.
		err := e.do("cheat:a")
		for i := 0; err == nil && i < 8; i++ {
			err = e.do("get:a")
		}
		if err == nil {
			t.Fatal("a change without a record was not caught")
		}
		for _, want := range []string{"shard 0", "- live:    a=3", "+ rebuilt: a=2"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the report does not say %q:\n%v", want, err)
			}
		}
	})
	t.Run("check", func(t *testing.T) {
		e := newInvEnv(t, 0)
		err := e.do("break:b")
		if err == nil || !strings.Contains(err.Error(), "shard 0") || !strings.Contains(err.Error(), "counter b is broken") {
			t.Fatalf("a failing Check was reported as %v", err)
		}
	})
	// A shard is rebuilt every records/32 events, every eighth at
	// least, and always as the runtime stops: a change without a record
	// is caught within that many events, or at the close.
	t.Run("spaced", func(t *testing.T) {
		e := newInvEnv(t, 320)
		if err := e.do("cheat:c005"); err != nil {
			t.Fatalf("caught at once, though the last check was one event ago: %v", err)
		}
		if err := e.inv.Closing(e.m); err == nil || !strings.Contains(err.Error(), "c005=6") {
			t.Fatalf("the close did not catch a change without a record: %v", err)
		}
		e = newInvEnv(t, 320)
		if err := e.do("cheat:c005"); err != nil {
			t.Fatal(err)
		}
		// Events since the last check: Loaded's and the cheat.
		n := 2
		for ; n < 20; n++ {
			if err := e.do("get:c005"); err != nil {
				n++
				break
			}
		}
		if n != 10 {
			t.Fatalf("caught at the %dth event since the last check, want the 10th (320 records / 32)", n)
		}
	})
	// Records the load replayed, emitted and overwritten, are the
	// mirror the fresh machine replays: a machine that keeps its rules
	// passes however its records came.
	t.Run("loaded", func(t *testing.T) {
		e := newInvEnv(t, 40)
		for i := range 40 {
			if err := e.do(fmt.Sprintf("inc:c%03d", i%7)); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.inv.Closing(e.m); err != nil {
			t.Fatal(err)
		}
	})
}
