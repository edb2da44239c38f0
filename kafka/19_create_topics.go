package kafka

// CreateTopics, key 19.
//
// Version notes:
//   - v0: topics with partitions, replication factor, assignments, configs.
//   - v1: ValidateOnly and ErrorMessage.
//   - v2: ThrottleMillis.
//   - v4 (KIP-464): -1 partitions or replication factor means the default.
//   - v5: flexible; the created topic's partitions, replication factor and
//     configs in the response.
//   - v7 (KIP-516): TopicID in the response.
//
// Errors as Kafka: a name given twice → INVALID_REQUEST for it;
// INVALID_TOPIC_EXCEPTION; TOPIC_ALREADY_EXISTS; a count and an assignment
// together → INVALID_REQUEST; INVALID_PARTITIONS; INVALID_REPLICATION_FACTOR
// for anything but 1 or -1 (one broker); INVALID_REPLICA_ASSIGNMENT for an
// assignment naming any broker but 0 or skipping a partition;
// INVALID_CONFIG for unknown or malformed configs.

import (
	"context"
	"fmt"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreateTopics, 0, 7, handleCreateTopics) }

func handleCreateTopics(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	// Creation fsyncs: do it on the writer.
	return func() kmsg.Response {
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.NumPartitions, st.ReplicationFactor = -1, -1
			code, msg := s.createTopic(rt, req.ValidateOnly, seen[rt.Topic] > 1, &st)
			st.ErrorCode = code
			if code != 0 && msg != "" {
				st.ErrorMessage = errPtr(msg)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}

func (s *Server) createTopic(rt kmsg.CreateTopicsRequestTopic, validateOnly, dup bool, st *kmsg.CreateTopicsResponseTopic) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Create topics request from client contains duplicate topic %s", rt.Topic)
	}
	if !topics.ValidTopicName(rt.Topic) {
		return kerr.InvalidTopicException.Code, fmt.Sprintf("Topic name %q is illegal: 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'", rt.Topic)
	}
	if s.topics.Topic(rt.Topic) != nil {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", rt.Topic)
	}
	partitions := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return kerr.InvalidRequest.Code, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time."
		}
		for i, a := range rt.ReplicaAssignment {
			if a.Partition != int32(i) {
				return kerr.InvalidReplicaAssignment.Code, "Partitions must be numbered from 0 without gaps."
			}
			if len(a.Replicas) != 1 || a.Replicas[0] != nodeID {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Replica assignment %v names a broker other than %d, the only one.", a.Replicas, nodeID)
			}
		}
		partitions = int32(len(rt.ReplicaAssignment))
	} else {
		if partitions == -1 {
			partitions = s.cfg.DefaultPartitions
		}
		if partitions <= 0 {
			return kerr.InvalidPartitions.Code, "Number of partitions must be larger than 0."
		}
		if partitions > topics.MaxPartitions {
			return kerr.InvalidPartitions.Code, fmt.Sprintf("Number of partitions must be at most %d.", topics.MaxPartitions)
		}
		if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
			if rt.ReplicationFactor <= 0 {
				return kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0."
			}
			return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.", rt.ReplicationFactor, rt.ReplicationFactor)
		}
	}
	configs := map[string]string{}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return kerr.InvalidConfig.Code, fmt.Sprintf("Null value not supported for topic configs: %s", c.Name)
		}
		configs[c.Name] = *c.Value
	}
	if len(configs) == 0 {
		configs = nil
	}
	t, err := s.topics.Create(rt.Topic, partitions, configs, validateOnly)
	if err != nil {
		return errorCode(err), err.Error()
	}
	if !validateOnly {
		s.logger.Info("created topic", "topic", t.Name, "partitions", partitions)
		st.TopicID = t.ID
	}
	st.NumPartitions, st.ReplicationFactor = partitions, 1
	for _, c := range topics.TopicConfigs {
		v, isDefault := t.Config(c.Name)
		cfg := kmsg.NewCreateTopicsResponseTopicConfig()
		cfg.Name, cfg.Value = c.Name, errPtr(v)
		cfg.Source = int8(kmsg.ConfigSourceDefaultConfig)
		if !isDefault {
			cfg.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
		st.Configs = append(st.Configs, cfg)
	}
	return 0, ""
}
