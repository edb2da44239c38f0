package kafka

// DescribeShareGroupOffsets, key 90 (KIP-932).
//
// Version notes:
//   - v0 (Kafka 4.1, KIP-932): each partition's share-partition start
//     offset and leader epoch.
//   - v1 (Kafka 4.2, KIP-1226): Lag, the records not yet delivered for
//     good.
//
// As Kafka 4.2's KafkaApis.handleDescribeShareGroupOffsetsRequest and
// GroupCoordinatorService.describeShareGroupOffsets /
// describeShareGroupAllOffsets, per group:
//   - DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED for it.
//   - Topics null is every partition the group may hold state of (its
//     ShareGroupPartitions record, asked of the group's shard, which may
//     answer NOT_COORDINATOR; a name that is no share group has none and
//     no error), leaving out the topics the principal may not DESCRIBE
//     and those gone from the catalog; topics by name. Topics empty is
//     none.
//   - Named topics are described without asking the group (Kafka reads
//     the share state directly): the ones the principal may not DESCRIBE
//     come last, each partition TOPIC_AUTHORIZATION_FAILED with start
//     offset -1 and no topic id; unknown topics come before them, each
//     partition with start offset -1 and no error ("absence of data, as
//     OffsetFetch").
//   - A partition with no state (never fetched, deleted, out of range) is
//     start offset -1, leader epoch 0, lag -1, no error.
//   - A partition with state: its start offset (SPSO), the partition's
//     leader epoch, and the lag as Kafka's computeShareGroupLagAndBuild-
//     Response: the partition's latest offset (ListOffsets LATEST, the
//     high watermark) minus the start offset minus the delivery complete
//     count (the records at or after the start offset acknowledged or
//     archived, which Kafka's share-partition leader persists with each
//     write, KIP-1226, and Cohort counts in the state), unclamped as
//     Kafka's.
//
// Where Cohort differs: a share-state shard that cannot answer
// (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR in cluster mode, where
// it may be another node's; REQUEST_TIMED_OUT) is that partition's
// ErrorCode with start offset -1, where Kafka's persister retries
// internally and turns a final failure into start offset -1 with no error;
// and the lag of a partition another node leads is -1 (Kafka asks its
// leader; Cohort's nodes do not forward ListOffsets yet).

import (
	"context"
	"slices"
	"strings"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeShareGroupOffsets, 0, 1, handleDescribeShareGroupOffsets)
}

func handleDescribeShareGroupOffsets(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	who, sc := authzRequest(hdr), s.scope(hdr)
	// The group ACLs are checked here, on the reader; the topics' of a
	// describe of every partition once the group has said which.
	allowed := make([]bool, len(req.Groups))
	for i, g := range req.Groups {
		allowed[i] = s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.GroupID)
	}
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareRPCTimeout)
		defer cancel()
		for i, g := range req.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID = g.GroupID
			switch {
			case s.share == nil:
				rg.ErrorCode = kerr.UnsupportedVersion.Code
			case !allowed[i]:
				rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			case g.Topics == nil:
				s.describeAllShareOffsets(ctx, who, sc, &rg)
			default:
				s.describeShareOffsets(ctx, who, sc, g.Topics, &rg)
			}
			if rg.Topics == nil {
				rg.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// describeAllShareOffsets describes every partition whose state the group
// may hold, in the topics the principal may describe.
func (s *Server) describeAllShareOffsets(ctx context.Context, who security.Request, sc scope, rg *kmsg.DescribeShareGroupOffsetsResponseGroup) {
	offs, code, err := s.groups.ShareOffsets(ctx, sc.tenant, rg.GroupID)
	if code = coordinatorCode(code, err); code != 0 {
		rg.ErrorCode, rg.ErrorMessage = code, errPtr(kafkaMessage(code))
		return
	}
	for _, st := range offs.Initialized {
		t := sc.topicByID(st.TopicID)
		if t == nil || !s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, sc.name(t)) {
			continue // gone from the catalog, or hidden: left out, as Kafka
		}
		rg.Topics = append(rg.Topics, s.describeShareTopic(ctx, sc, rg.GroupID, t, st.Partitions))
	}
	// By name (Kafka's order is its hash map's).
	slices.SortFunc(rg.Topics, func(a, b kmsg.DescribeShareGroupOffsetsResponseGroupTopic) int {
		return strings.Compare(a.Topic, b.Topic)
	})
}

// describeShareOffsets describes the named topics' partitions.
func (s *Server) describeShareOffsets(ctx context.Context, who security.Request, sc scope, named []kmsg.DescribeShareGroupOffsetsRequestGroupTopic, rg *kmsg.DescribeShareGroupOffsetsResponseGroup) {
	var unknown, denied []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, nt := range named {
		if !s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, nt.Topic) {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = nt.Topic
			for _, p := range nt.Partitions {
				rp := noShareOffset(p)
				rp.ErrorCode, rp.ErrorMessage = kerr.TopicAuthorizationFailed.Code, errPtr(kafkaMessage(kerr.TopicAuthorizationFailed.Code))
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
			continue
		}
		t := sc.topic(nt.Topic)
		if t == nil {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = nt.Topic
			for _, p := range nt.Partitions {
				rt.Partitions = append(rt.Partitions, noShareOffset(p))
			}
			unknown = append(unknown, rt)
			continue
		}
		rg.Topics = append(rg.Topics, s.describeShareTopic(ctx, sc, rg.GroupID, t, nt.Partitions))
	}
	rg.Topics = append(append(rg.Topics, unknown...), denied...)
}

// noShareOffset is a partition with no share-partition state: start
// offset -1 (Kafka's PartitionFactory.UNINITIALIZED_START_OFFSET), leader
// epoch 0 (DEFAULT_LEADER_EPOCH), lag -1 (UNINITIALIZED_LAG).
func noShareOffset(p int32) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
	rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
	rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, 0, -1
	return rp
}

// describeShareTopic describes partitions of t, an existing topic of
// the scope, from their share-partition state.
func (s *Server) describeShareTopic(ctx context.Context, sc scope, group string, t *topics.Topic, parts []int32) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	rt.Topic, rt.TopicID = sc.name(t), t.ID
	var keys []sharestate.Key
	for _, p := range parts {
		if p >= 0 && int(p) < len(t.Partitions) {
			keys = append(keys, sharestate.Key{Tenant: sc.tenant, Group: group, TopicID: t.ID, Partition: p})
		}
	}
	var ds []sharestate.Description
	if len(keys) > 0 {
		ds = s.share.Describe(ctx, sharestate.DescribeCmd{Tenant: sc.tenant, Group: group, Partitions: keys})
	}
	next := 0
	for _, p := range parts {
		rp := noShareOffset(p)
		if p < 0 || int(p) >= len(t.Partitions) {
			rt.Partitions = append(rt.Partitions, rp) // no such partition: no state
			continue
		}
		d := ds[next]
		next++
		switch d.Code {
		case 0:
			rp.StartOffset, rp.LeaderEpoch = d.StartOffset, t.LeaderEpoch(p)
			if lp := t.Partitions[p]; lp != nil {
				_, hw := lp.Offsets()
				rp.Lag = hw - d.StartOffset - deliveryComplete(d)
			}
		case kerr.GroupIDNotFound.Code: // no state
		default:
			rp.ErrorCode, rp.ErrorMessage = d.Code, errPtr(kafkaMessage(d.Code))
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// deliveryComplete is KIP-1226's delivery complete count: the records at
// or after the start offset whose delivery is over (acknowledged or
// archived), which Kafka's SharePartition counts as their states change.
func deliveryComplete(d sharestate.Description) int64 {
	var n int64
	for _, r := range d.Runs {
		if r.State == record.ShareAcknowledged || r.State == record.ShareArchived {
			n += r.Last - r.First + 1
		}
	}
	return n
}

// coordinatorCode is the error a share group offset API answers when the
// group's shard could not serve it: the shard's own code
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), or, for a shard that
// did not answer in time, COORDINATOR_NOT_AVAILABLE, as Kafka's
// CoordinatorOperationExceptionHelper maps a REQUEST_TIMED_OUT.
func coordinatorCode(code int16, err error) int16 {
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	return code
}

// kafkaMessage is Kafka's message for an error code (Errors.message()),
// which the share group offset APIs send with their errors.
func kafkaMessage(code int16) string {
	switch code {
	case kerr.TopicAuthorizationFailed.Code:
		return "Topic authorization failed."
	case kerr.GroupAuthorizationFailed.Code:
		return "Group authorization failed."
	case kerr.GroupMaxSizeReached.Code:
		return "The group has reached its maximum size."
	case kerr.InvalidGroupID.Code:
		return "The group id is invalid."
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Description
	}
	return ""
}
