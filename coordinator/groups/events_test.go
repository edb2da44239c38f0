package groups_test

// The check of the group events (observe.GroupEvent) a machine reports,
// run by the harness on every output, so that every scenario, unit,
// property and fuzz test of the package checks them:
//
//   - Each event is well formed: its time is the event's now, a member
//     event names a member, a rebalance event none, only a completion has
//     a duration.
//   - Members add up: a member joins only if it is not present, leaves,
//     expires or is fenced only if it is; every event's Members is the
//     count so far; and after every output the members reported present
//     are exactly the machine's (counts after every output, the ids at
//     every guard), so that a change of membership without its event
//     fails.
//   - Rebalances pair up: a completion follows a start of the same group,
//     names the generation of the latest start and a later one than the
//     previous completion, and takes the time since the first start of
//     the rebalance (0 if it began before the last restart); and after
//     every output a rebalance is open in the events exactly when the
//     machine has one under way (a classic group preparing or completing
//     a rebalance, a consumer group reconciling).
//   - A load reports nothing about what it restores: at most a new
//     rebalance (a classic group loaded over its maximum size).
//
// A restart forgets a classic group's rebalance in progress, and a classic
// group reloads the members of its last record: the check takes them from
// the machine. A consumer group's members and rebalance are durable and
// carry on.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
)

// evCheck is the event check's state: what the events said so far.
type evCheck struct {
	groups map[groups.EventKey]*evGroup
}

type evGroup struct {
	members map[string]bool
	open    bool      // a rebalance started and not completed
	gen     int32     // the latest start's generation
	since   time.Time // the open rebalance's first start; zero: before the last restart
	done    int32     // the latest completion's generation (0: none)
}

func (c *evCheck) group(k groups.EventKey) *evGroup {
	if c.groups == nil {
		c.groups = map[groups.EventKey]*evGroup{}
	}
	g := c.groups[k]
	if g == nil {
		g = &evGroup{members: map[string]bool{}}
		c.groups[k] = g
	}
	return g
}

// event checks one event, reported at now.
func (c *evCheck) event(e observe.GroupEvent, now time.Time) error {
	if !e.At.Equal(now) {
		return fmt.Errorf("event at %v, reported at %v", e.At, now)
	}
	if e.Protocol != "classic" && e.Protocol != "consumer" {
		return fmt.Errorf("protocol %q", e.Protocol)
	}
	if e.Kind != observe.RebalanceCompleted && e.Duration != 0 {
		return fmt.Errorf("a duration (%v) on a %v event", e.Duration, e.Kind)
	}
	g := c.group(groups.EventKey{e.Tenant, e.Group, e.Protocol})
	switch e.Kind {
	case observe.MemberJoined, observe.MemberLeft, observe.MemberExpired, observe.MemberFenced:
		if e.Member == "" {
			return fmt.Errorf("%v names no member", e.Kind)
		}
		if present := g.members[e.Member]; present != (e.Kind != observe.MemberJoined) {
			return fmt.Errorf("%v of %s, present before: %v", e.Kind, e.Member, present)
		}
		if e.Kind == observe.MemberJoined {
			g.members[e.Member] = true
		} else {
			delete(g.members, e.Member)
		}
	case observe.RebalanceStarted:
		if e.Member != "" || e.InstanceID != "" || e.Reason == "" {
			return fmt.Errorf("a start names member %q (%q), reason %q", e.Member, e.InstanceID, e.Reason)
		}
		if e.Generation <= g.done || (g.open && e.Generation <= g.gen) {
			return fmt.Errorf("a start of generation %d after the start of %d (open %v), the completion of %d", e.Generation, g.gen, g.open, g.done)
		}
		if !g.open {
			g.open, g.since = true, now
		}
		g.gen = e.Generation
	case observe.RebalanceCompleted:
		if e.Member != "" || e.InstanceID != "" {
			return fmt.Errorf("a completion names member %q (%q)", e.Member, e.InstanceID)
		}
		if !g.open {
			return fmt.Errorf("a completion of generation %d with no rebalance started (the last completed %d)", e.Generation, g.done)
		}
		if e.Generation != g.gen || e.Generation <= g.done {
			return fmt.Errorf("a completion of generation %d; the latest start was of %d, the latest completion of %d", e.Generation, g.gen, g.done)
		}
		want := time.Duration(0)
		if !g.since.IsZero() {
			want = now.Sub(g.since)
		}
		if e.Duration != want {
			return fmt.Errorf("a completion that took %v; started at %v, now %v", e.Duration, g.since, now)
		}
		g.open, g.since, g.done = false, time.Time{}, e.Generation
	default:
		return fmt.Errorf("kind %v", e.Kind)
	}
	if e.Members != len(g.members) {
		return fmt.Errorf("%v says %d members, the events so far %d", e.Kind, e.Members, len(g.members))
	}
	return nil
}

// record notes a record: the tombstone of a group's record ends the group
// (a later group of the name starts over).
func (c *evCheck) record(r machine.Record) {
	if r.Value != nil {
		return
	}
	kind, key, err := record.ParseKey(r.Key)
	if err != nil {
		return
	}
	if gk, ok := key.(record.GroupKey); ok {
		switch kind {
		case record.KindClassicGroup:
			delete(c.groups, groups.EventKey{gk.Tenant, gk.Group, "classic"})
		case record.KindConsumerGroup:
			delete(c.groups, groups.EventKey{gk.Tenant, gk.Group, "consumer"})
		}
	}
}

// loaded follows a restart: out is Loaded's output, m the loaded machine.
func (c *evCheck) loaded(m *groups.Shard, out machine.Output) error {
	for _, e := range out.Events {
		if e.Kind != observe.RebalanceStarted {
			return fmt.Errorf("Loaded reported %v %s of %q: a load reports nothing it restores", e.Kind, e.Member, e.Group)
		}
	}
	members := groups.EventMembers(m)
	for k := range groups.EventViews(m) {
		g, seen := c.groups[k]
		switch {
		case k[2] == "classic":
			// Back to its last record, at rest.
			g = c.group(k)
			g.members = maps.Clone(members[k])
			if g.members == nil {
				g.members = map[string]bool{}
			}
			g.open, g.since, g.gen = false, time.Time{}, g.done
		case !seen:
			// Records the test wrote itself.
			g = c.group(k)
			g.members = maps.Clone(members[k])
		default:
			g.since = time.Time{}
		}
	}
	return nil
}

// compare checks the events against the machine's view after an output;
// ids too if full.
func (c *evCheck) compare(m *groups.Shard, full bool) error {
	views := groups.EventViews(m)
	for k, g := range c.groups {
		if _, ok := views[k]; !ok && (len(g.members) > 0 || g.open) {
			return fmt.Errorf("group %q (%s) is gone, but its events say %d members, rebalancing %v", k[1], k[2], len(g.members), g.open)
		}
	}
	for k, v := range views {
		var n int
		var open bool
		if g := c.groups[k]; g != nil {
			n, open = len(g.members), g.open
		}
		if n != v.Members || open != v.Rebalancing {
			return fmt.Errorf("group %q (%s): %d members, rebalancing %v; its events say %d members, rebalancing %v",
				k[1], k[2], v.Members, v.Rebalancing, n, open)
		}
	}
	if !full {
		return nil
	}
	for k, ids := range groups.EventMembers(m) {
		if g := c.groups[k]; g == nil || !maps.Equal(g.members, ids) {
			var told []string
			if g != nil {
				told = slices.Sorted(maps.Keys(g.members))
			}
			return fmt.Errorf("group %q (%s): members %v, its events say %v", k[1], k[2], slices.Sorted(maps.Keys(ids)), told)
		}
	}
	return nil
}

// settled reports a group whose events leave a rebalance open: for the
// property tests, once their group has converged.
func (c *evCheck) settled(tenant, group, protocol string) error {
	if g := c.groups[groups.EventKey{tenant, group, protocol}]; g != nil && g.open {
		return fmt.Errorf("group %q has converged, but its rebalance of generation %d is still open in the events", group, g.gen)
	}
	return nil
}

// TestEventCheckFails shows the check failing on the streams it must
// refuse, so that a harness that passes means something.
func TestEventCheckFails(t *testing.T) {
	at := epoch
	ev := func(kind observe.GroupEventKind, member string, gen int32, members int) observe.GroupEvent {
		return observe.GroupEvent{Kind: kind, Group: "g", Protocol: "classic", Member: member, Generation: gen, Members: members, At: at, Reason: "why"}
	}
	joined, started := ev(observe.MemberJoined, "a", 0, 1), ev(observe.RebalanceStarted, "", 1, 1)
	completed := ev(observe.RebalanceCompleted, "", 1, 1)
	for _, tc := range []struct {
		name   string
		events []observe.GroupEvent
	}{
		{"completed without a start", []observe.GroupEvent{joined, completed}},
		{"joined twice", []observe.GroupEvent{joined, joined}},
		{"left without joining", []observe.GroupEvent{ev(observe.MemberLeft, "a", 0, 0)}},
		{"wrong member count", []observe.GroupEvent{ev(observe.MemberJoined, "a", 0, 2)}},
		{"completed another generation", []observe.GroupEvent{joined, started, ev(observe.RebalanceCompleted, "", 2, 1)}},
		{"generation going back", []observe.GroupEvent{joined, started, completed, started}},
		{"a member on a rebalance event", []observe.GroupEvent{joined, ev(observe.RebalanceStarted, "a", 1, 1)}},
	} {
		var c evCheck
		var err error
		for _, e := range tc.events {
			if err = c.event(e, at); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s: the check passed", tc.name)
		}
	}
	// The property tests' reading of the log.
	for _, tc := range []struct {
		name   string
		events []observe.GroupEvent
	}{
		{"completed without a start", []observe.GroupEvent{joined, started, completed, completed}},
		{"generation going back", []observe.GroupEvent{joined, started, completed, started, completed}},
	} {
		if _, err := tallyEvents(tc.events, "", "g", "classic"); err == nil {
			t.Errorf("tally: %s passed", tc.name)
		}
	}
	if n, err := tallyEvents([]observe.GroupEvent{joined, started, ev(observe.MemberFenced, "a", 1, 0), completed}, "", "g", "classic"); err != nil || n != (evTally{1, 1, 1, 1}) {
		t.Errorf("tally: %+v, %v", n, err)
	}
	// Wrong time, wrong duration.
	var c evCheck
	if err := c.event(joined, at.Add(time.Second)); err == nil {
		t.Errorf("an event at another time passed")
	}
	c = evCheck{}
	_ = c.event(joined, at)
	_ = c.event(started, at)
	late := completed
	late.At = at.Add(time.Second)
	if err := c.event(late, late.At); err == nil || !strings.Contains(err.Error(), "took") {
		t.Errorf("a completion without its duration passed: %v", err)
	}
	// A membership change the events do not report.
	h := newHarness(t, testConfig())
	h.send(join("g", "")) // MEMBER_ID_REQUIRED: no member yet, nothing to report
	if err := h.ev.compare(h.m, true); err != nil {
		t.Fatalf("pending id: %v", err)
	}
	h.ev.group(groups.EventKey{"", "g", "classic"}).members["ghost"] = true
	if err := h.ev.compare(h.m, true); err == nil {
		t.Errorf("a member only the events know passed")
	}
}

// evTally is one group's event log read on its own.
type evTally struct {
	joined, departed, started, completed int
}

// tallyEvents reads the event log of one group (never deleted) by itself,
// for the property tests' quiet points: every completion follows a start
// with no completion between, completions' generations only grow; it
// counts members joined and departed, rebalances started and completed.
func tallyEvents(events []observe.GroupEvent, tenant, group, protocol string) (evTally, error) {
	var t evTally
	open, last := false, int32(0)
	for i, e := range events {
		if e.Tenant != tenant || e.Group != group || e.Protocol != protocol {
			continue
		}
		switch e.Kind {
		case observe.MemberJoined:
			t.joined++
		case observe.MemberLeft, observe.MemberExpired, observe.MemberFenced:
			t.departed++
		case observe.RebalanceStarted:
			t.started++
			open = true
		case observe.RebalanceCompleted:
			t.completed++
			if !open {
				return t, fmt.Errorf("event %d: a rebalance completed (generation %d) that no start opened", i, e.Generation)
			}
			if e.Generation <= last {
				return t, fmt.Errorf("event %d: a rebalance completed generation %d after generation %d", i, e.Generation, last)
			}
			open, last = false, e.Generation
		}
	}
	return t, nil
}
