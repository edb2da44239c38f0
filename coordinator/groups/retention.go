package groups

// Offset retention and the deletion of groups it leaves empty: Kafka's
// cleanupGroupMetadata (§14), run every RetentionCheck.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/record"
)

// sweep expires offsets, then deletes Empty groups left without offsets.
func (s *Shard) sweep(now time.Time) {
	for _, g := range s.sortedGroups() {
		if s.offs.HasPending(g.Off()) {
			continue // as Kafka: not under a transaction's offsets
		}
		switch p := g.Part.(type) {
		case *consumerGroup:
			s.sweepConsumer(p, now)
		case *classic.Group:
			s.classic.Sweep(p, now)
		}
	}
}

// sweepConsumer expires a consumer group's offsets: an offset expires when
// its commit is older than the retention and the group does not subscribe
// to its topic (Kafka's modern-group expiration condition); an Empty group
// left without offsets is deleted.
func (s *Shard) sweepConsumer(g *consumerGroup, now time.Time) {
	subscribed := g.subscribedTopics(s.catalog(g.Tenant))
	keep := func(t string) bool { return subscribed[t] }
	s.offs.Expire(g.Off(), now.UnixMilli(), s.cfg.Retention.Milliseconds(), keep, func(o *record.Offset) int64 { return o.CommitTimestamp })
	if len(g.members) == 0 && !s.offs.Has(g.Off()) {
		s.emitRemoveConsumer(g)
	}
}
