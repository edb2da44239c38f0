package groups

// Offset retention and the deletion of groups it leaves empty: Kafka's
// cleanupGroupMetadata (§14), run every RetentionCheck.

import "time"

// sweep expires offsets, then deletes Empty groups left without offsets.
func (s *Shard) sweep(now time.Time) {
	for _, g := range s.sortedGroups() {
		if s.hasPending(g.gkey) {
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
	nowMs := now.UnixMilli()
	retention := s.cfg.Retention.Milliseconds()
	// The time an offset's retention counts from, by kind of group; nil:
	// nothing expires.
	var base func(o *offset) int64
	switch {
	case g.protocolType == "":
		base = func(o *offset) int64 { return o.CommitTimestamp }
	case g.state == empty:
		base = func(*offset) int64 { return g.stateTime.UnixMilli() }
	case g.protocolType == "consumer" && g.state == stable && g.subscribedKnown:
		base = func(o *offset) int64 { return o.CommitTimestamp }
	}
	if base != nil {
		for _, t := range sortedKeys(g.offsets) {
			if g.protocolType != "" && g.state == stable && g.subscribed[t] {
				continue
			}
			for _, p := range sortedKeys(g.offsets[t]) {
				if nowMs-base(g.offsets[t][p]) >= retention {
					s.emit(s.offsetKey(g.gkey, t, p), nil)
				}
			}
		}
	}
	if g.state == empty && len(g.members) == 0 && g.numOffsets() == 0 {
		s.deleteClassic(g)
	}
}

// sweepConsumer expires a consumer group's offsets: an offset expires when
// its commit is older than the retention and the group does not subscribe
// to its topic (Kafka's modern-group expiration condition); an Empty group
// left without offsets is deleted.
func (s *Shard) sweepConsumer(g *consumerGroup, now time.Time) {
	subscribed := g.subscribedTopics(s.catalog(g.tenant))
	for _, t := range sortedKeys(g.offsets) {
		if subscribed[t] {
			continue
		}
		for _, p := range sortedKeys(g.offsets[t]) {
			if now.UnixMilli()-g.offsets[t][p].CommitTimestamp >= s.cfg.Retention.Milliseconds() {
				s.emit(s.offsetKey(g.gkey, t, p), nil)
			}
		}
	}
	if len(g.members) == 0 && g.numOffsets() == 0 {
		s.emitRemoveConsumer(g)
	}
}
