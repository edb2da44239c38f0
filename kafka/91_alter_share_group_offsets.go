package kafka

// AlterShareGroupOffsets, key 91 (KIP-932).
//
// Version notes:
//   - v0 (Kafka 4.1, KIP-932): a new share-partition start offset for
//     partitions of an empty share group.
//
// As Kafka 4.2's KafkaApis.handleAlterShareGroupOffsetsRequest,
// GroupCoordinatorService.alterShareGroupOffsets and
// GroupCoordinatorShard.alterShareGroupOffsets:
//   - READ on the group, else GROUP_AUTHORIZATION_FAILED for the request
//     (Kafka asks READ, not ALTER).
//   - Each topic needs READ, else TOPIC_AUTHORIZATION_FAILED for its
//     partitions; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION for its
//     partitions. These come first, in request order.
//   - An empty group id is INVALID_GROUP_ID; then the group's shard
//     checks the group (an id no group has gets an empty share group, as
//     Kafka's getOrMaybeCreatePersistedShareGroup; another type's is
//     GROUP_ID_NOT_FOUND "Group X is not a share group."; NON_EMPTY_GROUP
//     while it has members), answered for the whole request with no
//     topics, and lists the partitions as the group's
//     (groups.ShareAlterCmd).
//   - A partition past the topic's count is UNKNOWN_TOPIC_OR_PARTITION;
//     each other partition's state starts again at the offset given
//     (sharestate.AlterCmd: the records in flight forgotten, the state
//     epoch bumped), each answered with the share-state shard's code.
//
// Where Cohort differs: a negative partition or start offset is
// INVALID_REQUEST (Kafka's share coordinator refuses the partition alone
// and stores a negative offset as an uninitialized one).

import (
	"context"
	"slices"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.AlterShareGroupOffsets, 0, 0, handleAlterShareGroupOffsets)
}

// shareOffsetsCheck is what AlterShareGroupOffsets and
// DeleteShareGroupOffsets check first, as Kafka: share groups on
// (UNSUPPORTED_VERSION), op on the group (GROUP_AUTHORIZATION_FAILED;
// READ to alter, DELETE to delete), a group id (INVALID_GROUP_ID, which
// Kafka checks after the topics but answers alone).
func (s *Server) shareOffsetsCheck(hdr *reqHeader, op kmsg.ACLOperation, group string) int16 {
	switch {
	case s.share == nil:
		return kerr.UnsupportedVersion.Code
	case !s.authorize(hdr, op, kmsg.ACLResourceTypeGroup, group):
		return kerr.GroupAuthorizationFailed.Code
	case group == "":
		return kerr.InvalidGroupID.Code
	}
	return 0
}

func handleAlterShareGroupOffsets(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	fail := func(code int16, msg string) func() kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, errPtr(msg)
		return done(resp)
	}
	if code := s.shareOffsetsCheck(hdr, kmsg.ACLOperationRead, req.GroupID); code != 0 {
		return fail(code, kafkaMessage(code))
	}
	sc := s.scope(hdr)
	// refused are the topics answered here; each entry of alter is a
	// topic for the group, with the partitions in range.
	var refused []kmsg.AlterShareGroupOffsetsResponseTopic
	type alterTopic struct {
		rt  kmsg.AlterShareGroupOffsetsRequestTopic
		id  [16]byte
		out kmsg.AlterShareGroupOffsetsResponseTopic
	}
	var alter []*alterTopic
	for _, rt := range req.Topics {
		code := int16(0)
		t := sc.topic(rt.Topic)
		switch {
		case !s.authorize(hdr, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case t == nil:
			code = kerr.UnknownTopicOrPartition.Code
		}
		out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		out.Topic = rt.Topic
		if t != nil {
			out.TopicID = t.ID // as Kafka's response builder, by name from the catalog
		}
		if code != 0 {
			for _, p := range rt.Partitions {
				out.Partitions = append(out.Partitions, alterAnswer(p.Partition, code))
			}
			refused = append(refused, out)
			continue
		}
		alter = append(alter, &alterTopic{rt: rt, id: t.ID, out: out})
	}
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareRPCTimeout)
		defer cancel()
		// The partitions to alter, checked against the catalog now, as
		// Kafka's shard checks them against its metadata image.
		var listed []record.ShareStateTopic
		for _, a := range alter {
			t := sc.topicByID(a.id)
			st := record.ShareStateTopic{TopicID: a.id, Name: a.rt.Topic}
			for _, p := range a.rt.Partitions {
				if t != nil && p.Partition >= 0 && int(p.Partition) < len(t.Partitions) && p.StartOffset >= 0 {
					st.Partitions = append(st.Partitions, p.Partition)
				}
			}
			listed = append(listed, st)
		}
		altered, code, err := s.groups.ShareAlter(ctx, sc.tenant, req.GroupID, listed)
		if code = coordinatorCode(code, err); code != 0 {
			resp.ErrorCode, resp.ErrorMessage = code, errPtr(kafkaMessage(code))
			return resp
		}
		if altered.Code != 0 {
			resp.ErrorCode, resp.ErrorMessage = altered.Code, errPtr(altered.Message)
			return resp
		}
		// Each partition's answer; the alterations run at once.
		type job struct {
			rp  *kmsg.AlterShareGroupOffsetsResponseTopicPartition
			cmd sharestate.AlterCmd
		}
		var jobs []job
		for i, a := range alter {
			a.out.Partitions = make([]kmsg.AlterShareGroupOffsetsResponseTopicPartition, len(a.rt.Partitions))
			for j, p := range a.rt.Partitions {
				rp := &a.out.Partitions[j]
				switch {
				case p.Partition < 0 || p.StartOffset < 0:
					*rp = alterAnswer(p.Partition, kerr.InvalidRequest.Code)
				case !slices.Contains(listed[i].Partitions, p.Partition):
					*rp = alterAnswer(p.Partition, kerr.UnknownTopicOrPartition.Code)
				default:
					*rp = alterAnswer(p.Partition, 0)
					key := sharestate.Key{Tenant: sc.tenant, Group: req.GroupID, TopicID: a.id, Partition: p.Partition}
					jobs = append(jobs, job{rp, sharestate.AlterCmd{Key: key, StartOffset: p.StartOffset}})
				}
			}
		}
		shareEach(len(jobs), func(k int) {
			if r := s.share.Alter(ctx, jobs[k].cmd); r.Code != 0 {
				*jobs[k].rp = alterAnswer(jobs[k].rp.Partition, r.Code)
			}
		})
		resp.Topics = refused
		for _, a := range alter {
			resp.Topics = append(resp.Topics, a.out)
		}
		// The earlier state of the topics' other partitions goes (the
		// answer does not depend on it: a failure leaves the topic
		// Deleting, for a DeleteShareGroupOffsets to retry).
		s.dropShareState(ctx, sc.tenant, req.GroupID, altered.Drop)
		return resp
	}
}

// alterAnswer is a partition's answer: code, with Kafka's message for an
// error.
func alterAnswer(p int32, code int16) kmsg.AlterShareGroupOffsetsResponseTopicPartition {
	rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
	rp.Partition, rp.ErrorCode = p, code
	if code != 0 {
		rp.ErrorMessage = errPtr(kafkaMessage(code))
	}
	return rp
}
