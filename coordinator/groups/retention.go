package groups

// Offset retention and the deletion of groups it leaves empty: Kafka's
// cleanupGroupMetadata (§14), run every RetentionCheck.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
)

// sweep expires offsets, then deletes Empty groups left without offsets.
func (s *Shard) sweep(now time.Time) {
	for _, g := range s.sortedGroups() {
		if s.offs.HasPending(g.Off()) {
			continue // as Kafka: not under a transaction's offsets
		}
		switch p := g.Part.(type) {
		case *consumer.Group:
			s.consumer.Sweep(p, now)
		case *classic.Group:
			s.classic.Sweep(p, now)
		}
	}
}
