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
// together → INVALID_REQUEST; INVALID_PARTITIONS; INVALID_REPLICA_ASSIGNMENT
// for an assignment skipping a partition, with an empty replica list, or
// naming a broker that is not live or one broker twice (KRaft's checks and
// messages); INVALID_CONFIG for unknown or malformed configs.
//
// Cohort keeps one copy of each partition, on its leader: a replication
// factor other than 1 or -1, or an assignment of more than one replica, is
// INVALID_REPLICATION_FACTOR, with Kafka's message when there are fewer
// live brokers than asked for (a single node is one broker) followed by
// the reason. Without an assignment the leaders are spread over the live
// nodes; with one, each partition's leader is its replica.

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
	// With authorization on, as Kafka: CREATE on the cluster or on the
	// topic, else TOPIC_AUTHORIZATION_FAILED. Decided on the reader.
	cluster := s.authorizeCluster(hdr, kmsg.ACLOperationCreate)
	denied := make([]bool, len(req.Topics))
	for i, rt := range req.Topics {
		denied[i] = !cluster && !s.authorize(hdr, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, rt.Topic)
	}
	sc := s.scope(hdr)
	// Creation fsyncs: do it on the writer.
	return func() kmsg.Response {
		for i, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.NumPartitions, st.ReplicationFactor = -1, -1
			if denied[i] && seen[rt.Topic] == 1 {
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.ErrorMessage = errPtr("Authorization failed.")
				resp.Topics = append(resp.Topics, st)
				continue
			}
			code, msg := s.createTopic(sc, rt, req.ValidateOnly, seen[rt.Topic] > 1, &st)
			st.ErrorCode = code
			if code != 0 && msg != "" {
				st.ErrorMessage = errPtr(msg)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}

// createTopic creates rt in the scope's organisation. The name is checked
// as Kafka checks it (at most 249 characters) before it is given the
// organisation's prefix.
func (s *Server) createTopic(sc scope, rt kmsg.CreateTopicsRequestTopic, validateOnly, dup bool, st *kmsg.CreateTopicsResponseTopic) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Create topics request from client contains duplicate topic %s", rt.Topic)
	}
	if !topics.ValidTopicName(rt.Topic) {
		return kerr.InvalidTopicException.Code, fmt.Sprintf("Topic name %q is illegal: 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'", rt.Topic)
	}
	if sc.isOffsets(rt.Topic, [16]byte{}, false) {
		return kerr.TopicAlreadyExists.Code, offsetsExists // consumer_offsets.go
	}
	exists := fmt.Sprintf("Topic '%s' already exists.", rt.Topic)
	if sc.topic(rt.Topic) != nil {
		return kerr.TopicAlreadyExists.Code, exists
	}
	brokers := s.cluster.Brokers()
	partitions := rt.NumPartitions
	var leaders []int32
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return kerr.InvalidRequest.Code, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time."
		}
		for i, a := range rt.ReplicaAssignment {
			if a.Partition != int32(i) {
				return kerr.InvalidReplicaAssignment.Code, "Partitions must be numbered from 0 without gaps."
			}
			if code, msg := checkReplicas(a.Replicas, brokers); code != 0 {
				return code, msg
			}
			leaders = append(leaders, a.Replicas[0])
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
			return kerr.InvalidReplicationFactor.Code, replicationMessage(int(rt.ReplicationFactor), len(brokers))
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
	var t *topics.Topic
	var err error
	if leaders != nil {
		t, err = s.topics.CreateAssigned(sc.in(rt.Topic), leaders, configs, validateOnly)
	} else {
		t, err = s.topics.Create(sc.in(rt.Topic), partitions, configs, validateOnly)
	}
	if errors.Is(err, topics.ErrTopicExists) {
		// Created on another node since this one last refreshed.
		return kerr.TopicAlreadyExists.Code, exists
	}
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

// singleCopy is why Cohort refuses a replication factor above 1.
const singleCopy = "Cohort keeps one copy of each partition (replication factor 1), on its leader: a node's partitions are offline while it is down, until it returns."

// replicationMessage explains INVALID_REPLICATION_FACTOR for a replication
// factor rf > 1 with n live brokers: Kafka's message if there are too few
// brokers for rf, then why Cohort refuses it anyway.
func replicationMessage(rf, n int) string {
	if rf > n {
		return fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered. %s", rf, rf, n, singleCopy)
	}
	return singleCopy
}

// checkReplicas checks one partition's manual assignment as KRaft's
// ReplicationControlManager does (a non-empty list of distinct live
// brokers, INVALID_REPLICA_ASSIGNMENT otherwise), then refuses more than
// one replica.
func checkReplicas(replicas []int32, brokers []Broker) (int16, string) {
	if len(replicas) == 0 {
		return kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if !slices.ContainsFunc(brokers, func(b Broker) bool { return b.NodeID == id }) {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if len(replicas) > 1 {
		return kerr.InvalidReplicationFactor.Code, replicationMessage(len(replicas), len(brokers))
	}
	return 0, ""
}
