package groups

import (
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (mc *Machine) offsetKey(g, topic string, p int32) []byte {
	return record.OffsetKey{GroupKey: mc.groupKey(g), Topic: topic, Partition: p}.Key()
}

// offsetCommit is Kafka's commitOffset path (§11). The Kafka layer has
// already answered partitions of unknown topics and left them out.
func (mc *Machine) offsetCommit(now time.Time, req machine.Request, r *kmsg.OffsetCommitRequest, ids map[string][16]byte) {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = r.Version
	generation, memberID := r.Generation, r.MemberID
	if r.Version == 0 {
		generation, memberID = -1, ""
	}
	code := mc.validateCommit(now, r, generation, memberID)
	var maxMeta = mc.cfg.OffsetMetadataMaxBytes
	if code == 0 {
		n := 0
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
		mc.out.Records = slices.Grow(mc.out.Records, n)
	}
	for _, t := range r.Topics {
		rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			pc := code
			meta := ""
			if p.Metadata != nil {
				meta = *p.Metadata
			}
			if pc == 0 && len(meta) > maxMeta {
				pc = kerr.OffsetMetadataTooLarge.Code
			}
			if pc == 0 {
				ts := now.UnixMilli()
				if r.Version == 1 && p.Timestamp != -1 {
					ts = p.Timestamp
				}
				epoch := p.LeaderEpoch
				if r.Version < 6 {
					epoch = -1
				}
				o := record.Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: meta, CommitTimestamp: ts, TopicID: ids[t.Topic]}
				mc.write(mc.offsetKey(r.Group, t.Topic, p.Partition), o.Encode())
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: pc})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	mc.reply(req.ID, resp)
}

// validateCommit is Kafka's validateOffsetCommit (§11.2 steps 4–6); it
// creates a simple group for a simple commit to a group that does not
// exist.
func (mc *Machine) validateCommit(now time.Time, r *kmsg.OffsetCommitRequest, generation int32, memberID string) int16 {
	g := mc.groups[r.Group]
	if g == nil {
		if generation >= 0 {
			if r.Version >= 9 {
				return kerr.GroupIDNotFound.Code
			}
			return kerr.IllegalGeneration.Code
		}
		g = mc.newGroup(r.Group, now)
		mc.writeGroup(g, now)
		return 0
	}
	if g.cg != nil {
		return validateConsumerCommit(g, r)
	}
	switch {
	case g.state == dead:
		return kerr.CoordinatorNotAvailable.Code
	case generation < 0 && g.state == empty:
		return 0
	case generation >= 0 || memberID != "" || r.InstanceID != nil:
		if code := g.validateMember(memberID, r.InstanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	default:
		return kerr.UnknownMemberID.Code
	}
	if g.state == completingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	if m := g.members[memberID]; m != nil {
		mc.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
	}
	return 0
}

// offsetFetch is Kafka's fetchOffsets / fetchAllOffsets (§12). A classic
// group does no member check; an unknown group has no offsets and no
// error.
func (mc *Machine) offsetFetch(req machine.Request, r *kmsg.OffsetFetchRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.Version = r.Version
	if r.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range r.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		all := r.Topics == nil && r.Version >= 2
		for _, t := range mc.fetchGroup(r.Group, topics, all) {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition(p))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		mc.reply(req.ID, resp)
		return
	}
	for _, rg := range r.Groups {
		if r.Version >= 9 {
			// KIP-848: a consumer group member's fetch names its
			// member id and epoch.
			if code := validateConsumerFetch(mc.groups[rg.Group], rg.MemberID, rg.MemberEpoch); code != 0 {
				resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: rg.Group, ErrorCode: code, Topics: []kmsg.OffsetFetchResponseGroupTopic{}})
				continue
			}
		}
		resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{
			Group:  rg.Group,
			Topics: mc.fetchGroup(rg.Group, rg.Topics, rg.Topics == nil),
		})
	}
	mc.reply(req.ID, resp)
}

func (mc *Machine) fetchGroup(name string, topics []kmsg.OffsetFetchRequestGroupTopic, all bool) []kmsg.OffsetFetchResponseGroupTopic {
	g := mc.groups[name]
	if g != nil && g.state == dead {
		g = nil
	}
	lookup := func(topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: new(string)}
		if g == nil {
			return rp
		}
		if o := g.offsets[topic][p]; o != nil {
			meta := o.Metadata
			rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset.Offset, o.LeaderEpoch, &meta
		}
		return rp
	}
	out := []kmsg.OffsetFetchResponseGroupTopic{}
	if all {
		if g == nil {
			return out
		}
		names := sortedKeys(g.offsets)
		for _, t := range names {
			ps := sortedKeys(g.offsets[t])
			rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t}
			for _, p := range ps {
				rt.Partitions = append(rt.Partitions, lookup(t, p))
			}
			out = append(out, rt)
		}
		return out
	}
	for _, t := range topics {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic, Partitions: []kmsg.OffsetFetchResponseGroupTopicPartition{}}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, lookup(t.Topic, p))
		}
		out = append(out, rt)
	}
	return out
}

// offsetDelete is Kafka's deleteOffsets (§13). The Kafka layer has already
// answered partitions of unknown topics and left them out.
func (mc *Machine) offsetDelete(now time.Time, req machine.Request, r *kmsg.OffsetDeleteRequest) {
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.Version = r.Version
	defer mc.reply(req.ID, resp)
	g := mc.groups[r.Group]
	switch {
	case r.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	case g == nil || g.state == dead:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return
	case g.cg == nil && g.state != empty && g.protocolType != "consumer":
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return
	}
	var consumerTopics map[string]bool
	if g.cg != nil {
		consumerTopics = g.cg.subscribedTopics(mc.catalog)
	}
	for _, t := range r.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		subscribed := g.state != empty && g.subscribedTo(t.Topic)
		if g.cg != nil {
			subscribed = consumerTopics[t.Topic]
		}
		for _, p := range t.Partitions {
			code := int16(0)
			if subscribed {
				code = kerr.GroupSubscribedToTopic.Code
			} else if g.offsets[t.Topic][p.Partition] != nil {
				mc.write(mc.offsetKey(g.name, t.Topic, p.Partition), nil)
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

// sweep is Kafka's cleanupGroupMetadata (§14): expire offsets, then delete
// Empty groups left without offsets.
func (mc *Machine) sweep(now time.Time) {
	nowMs := now.UnixMilli()
	retention := mc.cfg.Retention.Milliseconds()
	for _, name := range mc.sortedGroupNames() {
		g := mc.groups[name]
		if g.cg != nil {
			mc.sweepConsumer(g, now)
			continue
		}
		// The time an offset's retention counts from, by kind of group;
		// nil: nothing expires.
		var base func(o *offset) int64
		switch {
		case g.protocolType == "":
			base = func(o *offset) int64 { return o.CommitTimestamp }
		case g.state == empty:
			base = func(*offset) int64 { return g.stateTime.UnixMilli() }
		case g.protocolType == "consumer" && g.state == stable && g.subscribedKnown:
			base = func(o *offset) int64 { return o.CommitTimestamp }
		}
		left := g.numOffsets()
		if base != nil {
			topics := sortedKeys(g.offsets)
			for _, t := range topics {
				if g.protocolType != "" && g.state == stable && g.subscribed[t] {
					continue
				}
				ps := sortedKeys(g.offsets[t])
				for _, p := range ps {
					if nowMs-base(g.offsets[t][p]) >= retention {
						mc.write(mc.offsetKey(name, t, p), nil)
						left--
					}
				}
			}
		}
		if g.state == empty && len(g.members) == 0 && left == 0 {
			mc.deleteGroup(g, false)
		}
	}
}

// deleteGroup removes an Empty group and, if withOffsets, tombstones its
// offsets.
func (mc *Machine) deleteGroup(g *group, withOffsets bool) {
	topics := sortedKeys(g.offsets)
	for _, t := range topics {
		if !withOffsets {
			break
		}
		ps := sortedKeys(g.offsets[t])
		for _, p := range ps {
			mc.write(mc.offsetKey(g.name, t, p), nil)
		}
	}
	for id := range g.pendingJoin {
		mc.timer(memberTimer(g.name, id), time.Time{})
	}
	mc.timer(groupTimer(timerJoin, g.name), time.Time{})
	mc.timer(groupTimer(timerSync, g.name), time.Time{})
	g.state = dead
	delete(mc.groups, g.name)
	mc.write(mc.groupKey(g.name).Key(), nil)
}

// topicsDeleted tombstones every group's offsets of the deleted topics, so
// that a topic created again under the same name starts with none.
func (mc *Machine) topicsDeleted(topics []string) {
	for _, name := range mc.sortedGroupNames() {
		g := mc.groups[name]
		for _, t := range topics {
			ps := sortedKeys(g.offsets[t])
			for _, p := range ps {
				mc.write(mc.offsetKey(name, t, p), nil)
			}
		}
	}
}

// reconcileTopics deletes the committed offsets of topics the broker no
// longer has, or has under a new id: what a crash between a topic's
// deletion and its offsets' tombstones (topicsDeleted) leaves behind.
// Offsets without a stamped id (committed through an embedding that gives
// none) are kept while a topic of their name exists.
func (mc *Machine) reconcileTopics(live map[string][16]byte) {
	for _, name := range mc.sortedGroupNames() {
		g := mc.groups[name]
		for _, t := range sortedKeys(g.offsets) {
			id, ok := live[t]
			for _, p := range sortedKeys(g.offsets[t]) {
				stamped := g.offsets[t][p].TopicID
				if !ok || (stamped != [16]byte{} && stamped != id) {
					mc.write(mc.offsetKey(name, t, p), nil)
				}
			}
		}
	}
}
