package kafka

// CreatePartitions, key 37.
//
// Version notes:
//   - v0: topics with a new total count and optional assignments,
//     ValidateOnly.
//   - v1: no change. v2: flexible. v3: no change.
//
// Partitions only grow (INVALID_PARTITIONS otherwise, as Kafka); an
// assignment must give one replica list per new partition, each checked as
// CreateTopics checks one (one live broker, which then leads the
// partition). Without one the new partitions' leaders are spread over the
// live nodes.

import (
	"context"
	"fmt"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreatePartitions, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := make(map[string]int)
	// With authorization on, as Kafka: ALTER on each topic, else
	// TOPIC_AUTHORIZATION_FAILED. Decided on the reader.
	denied := make([]bool, len(req.Topics))
	for i, rt := range req.Topics {
		seen[rt.Topic]++
		denied[i] = !s.authorize(hdr, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, rt.Topic)
	}
	return func() kmsg.Response {
		for i, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			if denied[i] && seen[rt.Topic] == 1 {
				st.ErrorCode, st.ErrorMessage = kerr.TopicAuthorizationFailed.Code, errPtr("Authorization failed.")
				resp.Topics = append(resp.Topics, st)
				continue
			}
			code, msg := s.createPartitions(s.scope(hdr), rt, req.ValidateOnly, seen[rt.Topic] > 1)
			if code != 0 {
				st.ErrorCode, st.ErrorMessage = code, errPtr(msg)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}

func (s *Server) createPartitions(sc scope, rt kmsg.CreatePartitionsRequestTopic, validateOnly, dup bool) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, "Duplicate topic in request."
	}
	if sc.isOffsets(rt.Topic, [16]byte{}, false) {
		return kerr.TopicAuthorizationFailed.Code, offsetsReadOnly // consumer_offsets.go
	}
	if !topics.ValidTopicName(rt.Topic) { // no forged internal name
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	t, err := s.topics.Sync(sc.in(rt.Topic))
	if err != nil {
		return errorCode(err), err.Error()
	}
	if t == nil {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	current := int32(len(t.Partitions))
	if rt.Count <= current {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", current, rt.Count)
	}
	if rt.Count > topics.MaxPartitions {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Number of partitions must be at most %d.", topics.MaxPartitions)
	}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-current {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", rt.Count-current, len(rt.Assignment))
		}
		brokers := s.cluster.Brokers()
		leaders := make([]int32, 0, len(rt.Assignment))
		for _, a := range rt.Assignment {
			if code, msg := checkReplicas(a.Replicas, brokers); code != 0 {
				return code, msg
			}
			leaders = append(leaders, a.Replicas[0])
		}
		err = s.topics.GrowAssigned(sc.in(rt.Topic), rt.Count, leaders, validateOnly)
	} else {
		err = s.topics.Grow(sc.in(rt.Topic), rt.Count, validateOnly)
	}
	if err != nil {
		return errorCode(err), err.Error()
	}
	if !validateOnly {
		s.logger.Info("added partitions", "topic", rt.Topic, "partitions", rt.Count)
	}
	return 0, ""
}
