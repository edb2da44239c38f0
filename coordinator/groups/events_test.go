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
//   - Rebalances tell their story: a start has a cause, and names the
//     member that caused it when a member did (one present for a join,
//     rejoin, subscription change or replacement; one gone for a leave,
//     expiry, admin removal or timeout); a completion has the cause and
//     member of the first start, phases of its protocol that add up to its
//     duration, and a count of partitions moved (-1 unknown; 0 for a
//     classic group left empty). One that began before the last restart
//     completes with no cause, no member, no phases and -1 moved. Other
//     events have none of these.
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
	// gone are the groups whose record a tombstone ended in the output
	// being checked: its events may still speak of them (a conversion's
	// last member event, then GroupConverted, which carries the members
	// over to the other protocol).
	gone map[groups.EventKey]*evGroup
}

// begin starts the check of a new output.
func (c *evCheck) begin() { clear(c.gone) }

type evGroup struct {
	members map[string]bool
	open    bool      // a rebalance started and not completed
	gen     int32     // the latest start's generation
	since   time.Time // the open rebalance's first start; zero: before the last restart
	first   observe.GroupEvent
	done    int32 // the latest completion's generation (0: none)
}

// memberCauses are the causes a member makes, and whether it is still in
// the group when the rebalance starts.
var memberCauses = map[observe.Cause]bool{
	observe.CauseMemberJoined: true, observe.CauseMemberRejoined: true, observe.CauseSubscriptionChanged: true,
	observe.CauseStaticMemberReplaced: true,
	observe.CauseMemberLeft:           false, observe.CauseMemberExpired: false, observe.CauseAdminAction: false,
	observe.CauseRebalanceTimeout: false,
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
	if e.Protocol != "classic" && e.Protocol != "consumer" && e.Protocol != "share" {
		return fmt.Errorf("protocol %q", e.Protocol)
	}
	if e.Kind != observe.RebalanceCompleted && (e.Duration != 0 || e.Phases != (observe.Phases{}) || e.PartitionsMoved != 0) {
		return fmt.Errorf("a duration (%v), phases (%+v) or partitions moved (%d) on a %v event", e.Duration, e.Phases, e.PartitionsMoved, e.Kind)
	}
	if e.Kind != observe.RebalanceCompleted && e.Kind != observe.RebalanceStarted && e.Cause != observe.CauseUnknown {
		return fmt.Errorf("a cause (%v) on a %v event", e.Cause, e.Kind)
	}
	k := groups.EventKey{e.Tenant, e.Group, e.Protocol}
	if g, ok := c.gone[k]; ok && c.groups[k] == nil {
		c.groups[k] = g // its last events, in the output that ended it
	}
	g := c.group(k)
	switch e.Kind {
	case observe.GroupConverted:
		// The members go over from the other protocol's group, which
		// ends (with any rebalance it had open); the new one has none
		// open.
		from := groups.EventKey{e.Tenant, e.Group, "consumer"}
		if e.Protocol == "consumer" {
			from[2] = "classic"
		}
		old := c.groups[from]
		if old == nil {
			old = c.gone[from]
		}
		if old == nil {
			return fmt.Errorf("a conversion to %s of a group with no %s events", e.Protocol, from[2])
		}
		delete(c.groups, from)
		delete(c.gone, from)
		g.members, g.open, g.since = maps.Clone(old.members), false, time.Time{}
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
	case observe.GroupDeleted:
		// An empty group, gone: a later group of the name starts over.
		if len(g.members) > 0 || e.Member != "" || e.Members != 0 {
			return fmt.Errorf("a deletion of a group with members %v (the event says %d, member %q)", slices.Sorted(maps.Keys(g.members)), e.Members, e.Member)
		}
		delete(c.groups, k)
		delete(c.gone, k)
		return nil
	case observe.RebalanceStarted:
		if e.Reason == "" || e.Cause == observe.CauseUnknown {
			return fmt.Errorf("a start with cause %v, reason %q", e.Cause, e.Reason)
		}
		if present, ok := memberCauses[e.Cause]; ok {
			if e.Member == "" || g.members[e.Member] != present {
				return fmt.Errorf("a start for %v names member %q, present %v", e.Cause, e.Member, g.members[e.Member])
			}
		} else if e.Cause != observe.CauseOther && (e.Member != "" || e.InstanceID != "") {
			// (CauseOther may name a member: one that changed its
			// server assignor.)
			return fmt.Errorf("a start for %v names member %q (%q)", e.Cause, e.Member, e.InstanceID)
		}
		if e.Generation <= g.done || (g.open && e.Generation <= g.gen) {
			return fmt.Errorf("a start of generation %d after the start of %d (open %v), the completion of %d", e.Generation, g.gen, g.open, g.done)
		}
		if !g.open {
			g.open, g.since, g.first = true, now, e
		}
		g.gen = e.Generation
	case observe.RebalanceCompleted:
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
		if err := checkStory(e, g); err != nil {
			return err
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

// checkStory checks a completion's cause, member, phases and partitions
// moved against the rebalance's first start.
func checkStory(e observe.GroupEvent, g *evGroup) error {
	p := e.Phases
	if g.since.IsZero() {
		if e.Cause != observe.CauseUnknown || e.Member != "" || e.InstanceID != "" || p != (observe.Phases{}) || e.PartitionsMoved != -1 {
			return fmt.Errorf("a completion of a rebalance begun before the restart: cause %v, member %q, phases %+v, moved %d", e.Cause, e.Member, p, e.PartitionsMoved)
		}
		return nil
	}
	if e.Cause != g.first.Cause || e.Member != g.first.Member || e.InstanceID != g.first.InstanceID {
		return fmt.Errorf("a completion for %v by %q (%q); the first start was for %v by %q (%q)", e.Cause, e.Member, e.InstanceID, g.first.Cause, g.first.Member, g.first.InstanceID)
	}
	if p.Join < 0 || p.Sync < 0 || p.Assignment < 0 || p.Revocation < 0 || p.Join+p.Sync+p.Assignment+p.Revocation != e.Duration {
		return fmt.Errorf("phases %+v for a rebalance of %v", p, e.Duration)
	}
	if (e.Protocol == "classic" && (p.Assignment != 0 || p.Revocation != 0)) || (e.Protocol == "consumer" && p.Join != 0) ||
		(e.Protocol == "share" && (p.Join != 0 || p.Sync != 0 || p.Revocation != 0)) {
		return fmt.Errorf("phases %+v for a %s group", p, e.Protocol)
	}
	if e.PartitionsMoved < -1 || (e.Protocol == "classic" && e.Members == 0 && e.PartitionsMoved != 0) {
		return fmt.Errorf("%d partitions moved, %d members", e.PartitionsMoved, e.Members)
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
		k := groups.EventKey{gk.Tenant, gk.Group, "classic"}
		switch kind {
		case record.KindClassicGroup:
		case record.KindConsumerGroup:
			k[2] = "consumer"
		case record.KindShareGroup:
			k[2] = "share"
		default:
			return
		}
		if g, ok := c.groups[k]; ok {
			if c.gone == nil {
				c.gone = map[groups.EventKey]*evGroup{}
			}
			c.gone[k] = g
			delete(c.groups, k)
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
		e := observe.GroupEvent{Kind: kind, Group: "g", Protocol: "classic", Member: member, Generation: gen, Members: members, At: at, Reason: "why"}
		if kind == observe.RebalanceStarted || kind == observe.RebalanceCompleted {
			e.Cause = observe.CauseMemberJoined
		}
		return e
	}
	joined, started := ev(observe.MemberJoined, "a", 0, 1), ev(observe.RebalanceStarted, "a", 1, 1)
	completed := ev(observe.RebalanceCompleted, "a", 1, 1)
	with := func(e observe.GroupEvent, f func(*observe.GroupEvent)) observe.GroupEvent { f(&e); return e }
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
		{"a start with no cause", []observe.GroupEvent{joined, with(started, func(e *observe.GroupEvent) { e.Cause = 0 })}},
		{"a join's start naming nobody", []observe.GroupEvent{joined, with(started, func(e *observe.GroupEvent) { e.Member = "" })}},
		{"a join's start naming a member not there", []observe.GroupEvent{joined, with(started, func(e *observe.GroupEvent) { e.Member = "b" })}},
		{"a timer's start naming a member", []observe.GroupEvent{joined, with(started, func(e *observe.GroupEvent) { e.Cause = observe.CauseMetadataChanged })}},
		{"a completion with another cause", []observe.GroupEvent{joined, started, with(completed, func(e *observe.GroupEvent) { e.Cause = observe.CauseMemberLeft })}},
		{"a completion by another member", []observe.GroupEvent{joined, started, with(completed, func(e *observe.GroupEvent) { e.Member = "b" })}},
		{"phases that do not add up", []observe.GroupEvent{joined, started, with(completed, func(e *observe.GroupEvent) { e.Phases.Join = time.Second })}},
		{"a classic group with a revocation phase", []observe.GroupEvent{joined, started, with(completed, func(e *observe.GroupEvent) { e.Phases.Revocation = 0 - time.Second; e.Phases.Join = time.Second })}},
		{"partitions moved below -1", []observe.GroupEvent{joined, started, with(completed, func(e *observe.GroupEvent) { e.PartitionsMoved = -2 })}},
		{"a member event with a cause", []observe.GroupEvent{with(joined, func(e *observe.GroupEvent) { e.Cause = observe.CauseMemberJoined })}},
		{"a member event with partitions moved", []observe.GroupEvent{with(joined, func(e *observe.GroupEvent) { e.PartitionsMoved = 1 })}},
		{"a group deleted with a member", []observe.GroupEvent{joined, with(joined, func(e *observe.GroupEvent) { e.Kind, e.Member, e.Members = observe.GroupDeleted, "", 0 })}},
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
