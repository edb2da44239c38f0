package coordinator

import (
	"bytes"
	"fmt"

	"github.com/cohort-dev/cohort/coordinator/machine"
)

// invariants checks one shard's machine while the runtime runs it, where
// the build has the invariants tag (invariantsOn), as Pebble's expensive
// checks run under its own: the whole test suite sets it, so the checks
// the machines' own tests run after every step (the one record rule,
// coordinator/machine) also run under the runtime's tests, the crash
// tests and the end-to-end tests, against real clients and the real
// binary. Without the tag the runtime never makes one.
//
// After every event (Loaded, Handle, Fire) it calls the machine's Check,
// if it has one. Now and then (replayShare, replayEvery) it rebuilds the
// machine: a fresh one from New replays the records a load of the shard
// would replay now, and its durable state (machine.Durable) must be the
// live one's.
// A broken invariant is an error the runtime panics with: the process
// stops, and the test that ran it fails.
type invariants struct {
	shard uint16
	fresh func() Machine
	// mirror is what a load of the shard would replay now (key →
	// value): the records the load replayed and every record the
	// machine emitted since, a tombstone deleting its key.
	mirror map[string][]byte
	// since counts the events since the last replay check.
	since int
}

// The replay checks are spaced: one when the events since the last reach
// the mirror's records over replayShare, and at least replayEvery, so
// that a check, which builds a machine and replays and renders every
// record, costs an event about replayShare records' replay and rendering
// however large the shard, and a small shard a few hundred nanoseconds
// (measured: a check of an empty shard took 3.4 µs, against 0.34 µs for
// the JoinGroup it followed; 1,000,000 such JoinGroups,
// TestPendingMemberFlood, took 10.3 s rather than 4.1 s when every event
// was checked). A change without a record is caught within that many
// events, or at Close.
const (
	replayShare = 32
	replayEvery = 8
)

// durableMachine is a machine whose durable state can be rendered, which
// every machine the runtime runs must be under the tag.
type durableMachine interface {
	Machine
	machine.Durable
}

func newInvariants(shard uint16, fresh func() Machine) *invariants {
	return &invariants{shard: shard, fresh: fresh, mirror: map[string][]byte{}}
}

// loaded notes a record the load replayed; k and v are the store's,
// valid only during the call.
func (c *invariants) loaded(k, v []byte) {
	c.mirror[string(k)] = bytes.Clone(v)
}

// event checks m after an event whose output held recs.
func (c *invariants) event(m Machine, recs []Record) error {
	for _, r := range recs {
		if r.Value == nil {
			delete(c.mirror, string(r.Key))
		} else {
			c.mirror[string(r.Key)] = r.Value
		}
	}
	if ch, ok := m.(interface{ Check() error }); ok {
		if err := ch.Check(); err != nil {
			return fmt.Errorf("coordinator: invariant broken in shard %d: %w", c.shard, err)
		}
	}
	if c.since++; c.since < max(replayEvery, len(c.mirror)/replayShare) {
		return nil
	}
	return c.replay(m)
}

// closing checks m once more as the runtime stops, unless the last event
// was checked.
func (c *invariants) closing(m Machine) error {
	if c.since == 0 {
		return nil
	}
	return c.replay(m)
}

// replay rebuilds the machine from the mirror and compares.
func (c *invariants) replay(m Machine) error {
	c.since = 0
	live, ok := m.(durableMachine)
	if !ok {
		return fmt.Errorf("coordinator: invariant broken in shard %d: machine %T does not implement machine.Durable", c.shard, m)
	}
	f := c.fresh()
	fresh, ok := f.(durableMachine)
	if !ok {
		return fmt.Errorf("coordinator: invariant broken in shard %d: New made a %T, not a machine.Durable", c.shard, f)
	}
	if err := machine.CheckReplay(live, c.mirror, func() durableMachine { return fresh }); err != nil {
		return fmt.Errorf("coordinator: invariant broken in shard %d: the one record rule (records replayed: %d): %w", c.shard, len(c.mirror), err)
	}
	return nil
}
