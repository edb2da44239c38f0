package groups

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
)

// Test-only views of a Shard, for the harness's check of the events
// (harness_test.go): what the events must add up to.

// EventKey names a group as events do: tenant, group, protocol.
type EventKey [3]string

// EventView is what a group's events must add up to at any moment.
type EventView struct {
	// Members counts the members events report present (a consumer
	// member that left with epoch -2 is gone for them).
	Members int
	// Rebalancing: a rebalance is under way (a classic group preparing or
	// completing one; a consumer group reconciling).
	Rebalancing bool
}

// EventViews returns every classic or consumer group's view.
func EventViews(s *Shard) map[EventKey]EventView {
	out := map[EventKey]EventView{}
	for _, g := range s.h.Sorted() {
		switch c := g.Part.(type) {
		case *classic.Group:
			if c.State == classic.Dead {
				continue
			}
			out[EventKey{g.Tenant, g.Name, grouptype.ProtoClassic}] = EventView{
				Members:     len(c.Members()),
				Rebalancing: c.State == classic.PreparingRebalance || c.State == classic.CompletingRebalance,
			}
		case *consumer.Group:
			out[EventKey{g.Tenant, g.Name, grouptype.ProtoConsumer}] = EventView{Members: c.Present(), Rebalancing: c.Reconciling()}
		case *share.Group:
			out[EventKey{g.Tenant, g.Name, grouptype.ProtoShare}] = EventView{Members: len(c.Members), Rebalancing: len(c.Members) > 0 && c.TargetEpoch != c.Epoch}
		}
	}
	return out
}

// EventMembers returns, for every classic or consumer group with
// members, the ids of those events report present.
func EventMembers(s *Shard) map[EventKey]map[string]bool {
	out := map[EventKey]map[string]bool{}
	for _, g := range s.h.Sorted() {
		ids := map[string]bool{}
		var k EventKey
		switch c := g.Part.(type) {
		case *classic.Group:
			if c.State == classic.Dead {
				continue
			}
			k = EventKey{g.Tenant, g.Name, grouptype.ProtoClassic}
			for id := range c.Members() {
				ids[id] = true
			}
		case *consumer.Group:
			k = EventKey{g.Tenant, g.Name, grouptype.ProtoConsumer}
			for id, m := range c.Members {
				if m.Epoch != consumer.LeaveStaticEpoch {
					ids[id] = true
				}
			}
		case *share.Group:
			k = EventKey{g.Tenant, g.Name, grouptype.ProtoShare}
			for id := range c.Members {
				ids[id] = true
			}
		}
		if len(ids) > 0 {
			out[k] = ids
		}
	}
	return out
}

// InspectChanges reads s's changes as the lag sampler does: since the
// last such reading, or in full.
func InspectChanges(s *Shard, full bool) InspectDelta {
	since := s.inspectToken
	if full {
		since = 0
	}
	return s.inspectDelta(InspectCmd{Token: s.inspectToken + 1, Since: since})
}

// InspectAll reads every group of s in full.
func InspectAll(s *Shard) []Summary { return s.inspect(nil) }

// Sweep runs the shard's retention sweep at now, as its timer does.
func Sweep(s *Shard, now time.Time) { s.sweep(now) }

// SweepVisited is how many groups the shard's last sweep visited.
func SweepVisited(s *Shard) int { return s.due.visited }

// SweepAll makes every sweep of the shard visit every group.
func SweepAll(s *Shard) { s.due.fullOnly = true }
