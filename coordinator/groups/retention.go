package groups

// Offset retention and the deletion of groups it leaves empty: Kafka's
// cleanupGroupMetadata (§14), run every RetentionCheck.

import (
	"time"

	"github.com/cohort-dev/cohort/record"
)

// sweep expires offsets, then deletes Empty groups left without offsets.
func (s *Shard) sweep(now time.Time) {
	for _, g := range s.sortedGroups() {
		if s.offs.HasPending(g.off()) {
			continue // as Kafka: not under a transaction's offsets
		}
		switch {
		case g.consumer != nil:
			s.sweepConsumer(g.consumer, now)
		case g.classic != nil:
			s.sweepClassic(g.classic, now)
		}
	}
}

// sweepClassic expires a classic (or simple) group's offsets.
func (s *Shard) sweepClassic(g *classicGroup, now time.Time) {
	// The time an offset's retention counts from, by kind of group; nil:
	// nothing expires.
	var base func(o *record.Offset) int64
	switch {
	case g.protocolType == "":
		base = func(o *record.Offset) int64 { return o.CommitTimestamp }
	case g.state == empty:
		base = func(*record.Offset) int64 { return g.stateTime.UnixMilli() }
	case g.protocolType == "consumer" && g.state == stable && g.subscribedKnown:
		base = func(o *record.Offset) int64 { return o.CommitTimestamp }
	}
	if base != nil {
		keep := func(t string) bool { return g.protocolType != "" && g.state == stable && g.subscribed[t] }
		s.offs.Expire(g.off(), now.UnixMilli(), s.cfg.Retention.Milliseconds(), keep, base)
	}
	if g.state == empty && len(g.members) == 0 && !s.offs.Has(g.off()) {
		s.deleteClassic(g)
	}
}

// sweepConsumer expires a consumer group's offsets: an offset expires when
// its commit is older than the retention and the group does not subscribe
// to its topic (Kafka's modern-group expiration condition); an Empty group
// left without offsets is deleted.
func (s *Shard) sweepConsumer(g *consumerGroup, now time.Time) {
	subscribed := g.subscribedTopics(s.catalog(g.tenant))
	keep := func(t string) bool { return subscribed[t] }
	s.offs.Expire(g.off(), now.UnixMilli(), s.cfg.Retention.Milliseconds(), keep, func(o *record.Offset) int64 { return o.CommitTimestamp })
	if len(g.members) == 0 && !s.offs.Has(g.off()) {
		s.emitRemoveConsumer(g)
	}
}
