package groups

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
	for _, g := range s.groups {
		switch {
		case g.classic != nil && g.classic.state != dead:
			c := g.classic
			out[EventKey{g.tenant, g.name, protoClassic}] = EventView{
				Members:     len(c.members),
				Rebalancing: c.state == preparingRebalance || c.state == completingRebalance,
			}
		case g.consumer != nil:
			c := g.consumer
			out[EventKey{g.tenant, g.name, protoConsumer}] = EventView{Members: c.present(), Rebalancing: c.reconciling()}
		}
	}
	return out
}

// EventMembers returns, for every classic or consumer group with
// members, the ids of those events report present.
func EventMembers(s *Shard) map[EventKey]map[string]bool {
	out := map[EventKey]map[string]bool{}
	for _, g := range s.groups {
		ids := map[string]bool{}
		var k EventKey
		switch {
		case g.classic != nil && g.classic.state != dead:
			k = EventKey{g.tenant, g.name, protoClassic}
			for id := range g.classic.members {
				ids[id] = true
			}
		case g.consumer != nil:
			k = EventKey{g.tenant, g.name, protoConsumer}
			for id, m := range g.consumer.members {
				if m.epoch != leaveStaticEpoch {
					ids[id] = true
				}
			}
		}
		if len(ids) > 0 {
			out[k] = ids
		}
	}
	return out
}
