package groups

// Consumer groups (KIP-848) in the admin and offset APIs: ConsumerGroupDescribe,
// and the consumer-group branches of ListGroups, DeleteGroups, OffsetCommit,
// OffsetFetch and OffsetDelete.

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerDescribe is Kafka's consumerGroupDescribe: a group that does not
// exist or is not a consumer group is GROUP_ID_NOT_FOUND.
func (mc *Machine) consumerDescribe(req machine.Request, r *kmsg.ConsumerGroupDescribeRequest) {
	mc.noteCatalog(req.Topics)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Version = r.Version
	for _, name := range r.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = name
		g := mc.groups[name]
		if g == nil || g.cg == nil {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := fmt.Sprintf("Group %s not found.", name)
			if g != nil {
				msg = fmt.Sprintf("Group %s is not a consumer group.", name)
			}
			d.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, d)
			continue
		}
		cg := g.cg
		d.State, d.Epoch, d.AssignmentEpoch = cg.state(), cg.epoch, cg.targetEpoch
		d.AssignorName = mc.groupAssignor(cg).Name()
		if r.IncludeAuthorizedOperations {
			d.AuthorizedOperations = allGroupOperations
		}
		for _, m := range cg.sortedMembers() {
			dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.RackID = m.id, m.instance, m.rack
			dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.epoch, m.clientID, m.clientHost
			dm.SubscribedTopics = slices.Clone(m.topics)
			if dm.SubscribedTopics == nil {
				dm.SubscribedTopics = []string{}
			}
			if m.regex != "" {
				dm.SubscribedTopicRegex = &m.regex
			}
			dm.Assignment.TopicPartitions = mc.describeAssignment(m.assigned)
			dm.TargetAssignment.TopicPartitions = mc.describeAssignment(cg.target[m.id])
			dm.MemberType = 1 // a consumer-protocol member
			d.Members = append(d.Members, dm)
		}
		resp.Groups = append(resp.Groups, d)
	}
	mc.reply(req.ID, resp)
}

// describeAssignment lists a by topic name; topics the catalog does not
// know are left out, as Kafka does.
func (mc *Machine) describeAssignment(a tps) []kmsg.AssignmentTopicPartition {
	out := []kmsg.AssignmentTopicPartition{}
	for _, t := range a.records() {
		name, ok := "", false
		if mc.catalog != nil {
			name, ok = mc.catalog.ByID[t.TopicID]
		}
		if !ok {
			continue
		}
		out = append(out, kmsg.AssignmentTopicPartition{TopicID: t.TopicID, Topic: name, Partitions: slices.Clone(t.Partitions)})
	}
	return out
}

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit: a
// commit with a negative epoch to a group with no members is an admin's;
// otherwise the member must exist and send its current epoch.
func validateConsumerCommit(g *group, r *kmsg.OffsetCommitRequest) int16 {
	cg := g.cg
	if r.Generation < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[r.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if r.Version < 9 {
		// A consumer-protocol member commits with v9+ (KIP-848).
		return kerr.UnsupportedVersion.Code
	}
	if r.Generation != m.epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// validateConsumerFetch is Kafka's ConsumerGroup.validateOffsetFetch for
// OffsetFetch v9+: a request naming a member must name a current one.
func validateConsumerFetch(g *group, memberID *string, epoch int32) int16 {
	if g == nil || g.cg == nil || (memberID == nil && epoch < 0) {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.cg.members[id]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if epoch != m.epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// deleteConsumerGroup deletes an Empty consumer group: its offsets, then
// its records.
func (mc *Machine) deleteConsumerGroup(g *group, withOffsets bool) {
	if withOffsets {
		for _, t := range sortedKeys(g.offsets) {
			for _, p := range sortedKeys(g.offsets[t]) {
				mc.write(mc.offsetKey(g.name, t, p), nil)
			}
		}
	}
	mc.emitRemoveGroup(g)
	delete(mc.groups, g.name)
}

// sweepConsumer is the retention sweep of a consumer group: an offset
// expires when its commit is older than the retention and the group does
// not subscribe to its topic (Kafka's modern-group expiration condition);
// an Empty group left without offsets is deleted.
func (mc *Machine) sweepConsumer(g *group, now time.Time) {
	subscribed := g.cg.subscribedTopics(mc.catalog)
	left := g.numOffsets()
	for _, t := range sortedKeys(g.offsets) {
		if subscribed[t] {
			continue
		}
		for _, p := range sortedKeys(g.offsets[t]) {
			if now.UnixMilli()-g.offsets[t][p].CommitTimestamp >= mc.cfg.Retention.Milliseconds() {
				mc.write(mc.offsetKey(g.name, t, p), nil)
				left--
			}
		}
	}
	if len(g.cg.members) == 0 && left == 0 {
		mc.deleteConsumerGroup(g, false)
	}
}
