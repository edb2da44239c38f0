package kafka

// DescribeTopicPartitions, key 75.
//
// Version notes:
//   - v0 (KIP-966): flexible from the start; topics by name, or every topic
//     for an empty list; ResponsePartitionLimit, the Cursor to resume at and
//     NextCursor; per partition the eligible leader replicas and last known
//     ELR; TopicAuthorizedOperations always.
//
// Answered as Kafka's DescribeTopicPartitionsRequestHandler and
// KRaftMetadataCache answer it. The topics are those Metadata describes
// (topicView: the organisation's own), sorted by name and each once, from
// the cursor's topic on; the cursor's topic starts at the cursor's
// partition, every other at 0.
// Partitions are described until the limit (at most 2000, Kafka's
// max.request.partition.size.limit default, at least 1) is spent:
// NextCursor then names the first partition left out, or the next topic
// at partition 0 when the limit ran out exactly at a topic's end.
//
// A partition no live node serves (cluster mode) is described as Metadata
// describes it, leader -1, its replica offline, but with no error code:
// Kafka's KRaftMetadataCache sets none here. Cohort has no unclean leader
// election to guard, so the eligible leader replicas and the last known
// ELR are always empty: empty lists, never null (the Java admin client
// reads them unchecked).
//
// As Kafka: an empty topic list is every topic the principal may DESCRIBE
// (__consumer_offsets included, IsInternal); a named topic it may not is
// TOPIC_AUTHORIZATION_FAILED without its id, listed after the described
// ones, whether it exists or not; an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION, an illegal one INVALID_TOPIC_EXCEPTION. A
// cursor naming a topic the list does not, or a negative partition, is
// INVALID_REQUEST for every named topic (what Kafka's error response for
// the request's InvalidRequestException holds).

import (
	"context"
	"slices"

	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeTopicPartitions, 0, 0, handleDescribeTopicPartitions)
}

// maxResponsePartitions is Kafka's max.request.partition.size.limit
// default: the most partitions one response describes, whatever the
// request's ResponsePartitionLimit.
const maxResponsePartitions = 2000

func handleDescribeTopicPartitions(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	all := len(req.Topics) == 0
	from, start := "", 0 // the cursor: the first topic, and its first partition
	if req.Cursor != nil {
		from, start = req.Cursor.Topic, int(req.Cursor.Partition)
	}

	// The topics to describe: each once, by name, from the cursor's on.
	var names []string
	if all {
		for _, v := range s.describableTopics(hdr) {
			names = append(names, v.name)
		}
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
	}
	names = slices.DeleteFunc(names, func(name string) bool { return name < from })
	slices.Sort(names)
	names = slices.Compact(names)
	if req.Cursor != nil && (start < 0 || !all && !slices.Contains(names, from)) {
		return done(invalidDescribeTopicPartitions(req, resp))
	}
	var denied []string
	if !all {
		names = slices.DeleteFunc(names, func(name string) bool {
			ok := s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name)
			if !ok {
				denied = append(denied, name)
			}
			return !ok
		})
	}

	sc := s.scope(hdr)
	live := liveNodes(s.cluster.Brokers())
	left := max(min(int(req.ResponsePartitionLimit), maxResponsePartitions), 1)
	for _, name := range names {
		if left == 0 {
			// Spent exactly at the end of a topic: the next page
			// starts at the next, even one that does not exist.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic = kmsg.StringPtr(name)
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		st.AuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeTopic, name)
		v, ok := sc.view(name)
		switch {
		case !ok && all:
			continue // deleted since it was listed: Kafka skips it too
		case !ok:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if !topics.ValidTopicName(name) {
				st.ErrorCode = kerr.InvalidTopicException.Code
			}
			// Kafka's is by name; of its internal topics Cohort has
			// only __consumer_offsets.
			st.IsInternal = name == offsetstopic.Name
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID, st.IsInternal = v.id(s), v.internal()
		first := 0
		if name == from {
			first = start
		}
		n := v.partitions(s)
		end := min(n, first+left)
		for p := first; p < end; p++ {
			st.Partitions = append(st.Partitions, describedPartition(p, v.place(s, p, live)))
		}
		resp.Topics = append(resp.Topics, st)
		if end < n {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(end)}
			break
		}
		left -= max(end-first, 0)
	}
	// Last, as Kafka, and without the id: a principal that may not
	// describe a topic is not told whether it exists.
	for _, name := range denied {
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.ErrorCode, st.Topic = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr(name)
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}

// view is the scope's topic of that name, false if it has none.
func (sc scope) view(name string) (topicView, bool) {
	if sc.isOffsets(name, [16]byte{}, false) {
		return offsetsView, true
	}
	t := sc.topic(name)
	return topicView{name, t}, t != nil
}

// describedPartition is partition p, served as pl says. Leader epochs are
// always 0 (see placement).
func describedPartition(p int, pl placement) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	sp.Partition, sp.LeaderID, sp.LeaderEpoch = int32(p), pl.leader, pl.epoch
	sp.Replicas, sp.ISR, sp.OfflineReplicas = pl.replicas, pl.isr, pl.offline
	sp.EligibleLeaderReplicas, sp.LastKnownELR = []int32{}, []int32{}
	return sp
}

// invalidDescribeTopicPartitions is Kafka's error response to a request
// it refuses whole (DescribeTopicPartitionsRequest.getErrorResponse):
// INVALID_REQUEST for each topic it names, as named.
func invalidDescribeTopicPartitions(req *kmsg.DescribeTopicPartitionsRequest, resp *kmsg.DescribeTopicPartitionsResponse) *kmsg.DescribeTopicPartitionsResponse {
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.ErrorCode, st.Topic = kerr.InvalidRequest.Code, kmsg.StringPtr(rt.Topic)
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
