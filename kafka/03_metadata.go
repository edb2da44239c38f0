package kafka

// Metadata, key 3.
//
// Version notes:
//   - v0: an empty topic list means every topic.
//   - v1: null means every topic, empty means none; ControllerID, IsInternal,
//     Rack.
//   - v2: ClusterID.
//   - v3: ThrottleMillis.
//   - v4: AllowAutoTopicCreation (before v4 auto-creation is always asked).
//   - v5: OfflineReplicas.
//   - v7: LeaderEpoch.
//   - v8–v10: authorized operations (cluster ones until v10).
//   - v9: flexible.
//   - v10 (KIP-516): topic ids in the response; v10+ may ask by id.
//   - v12–v13: no change for us (v13 adds a top-level ErrorCode).
//
// A single Cohort is one broker, node 0, at the advertised address; it
// leads every partition and is the controller. A partition's leader epoch
// rises each time its node starts serving it (topics/epochs.go). In
// cluster mode (Config.Cluster) every live node is listed, the controller
// is the cluster's, and each partition's leader is the node recorded when
// the partition was created, its only replica. A partition whose leader is
// not live is offline, answered as Kafka answers one: LEADER_NOT_AVAILABLE,
// leader -1, the replica in Replicas, ISR (KRaft never shrinks the ISR
// below its last member) and OfflineReplicas. A topic auto-created here is
// answered with its partitions at once: creation is synchronous.

import (
	"context"

	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Metadata, 0, 13, handleMetadata) }

const (
	// unrequestedOps is Kafka's value for authorized operations that were
	// not asked for (INT32_MIN).
	unrequestedOps = -2147483648
	// Without an authorizer every operation is allowed; these are Kafka's
	// AclOperation bits for a topic and for the cluster.
	topicOps   = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	clusterOps = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
)

func handleMetadata(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	brokers := s.cluster.Brokers()
	live := liveNodes(brokers)
	for _, b := range brokers {
		mb := kmsg.NewMetadataResponseBroker()
		mb.Host, mb.Port = b.at(hdr.listenerName())
		mb.NodeID, mb.Rack = b.NodeID, b.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	clusterID := s.topics.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = s.cluster.Controller()
	resp.AuthorizedOperations = unrequestedOps
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeCluster, security.ClusterName)
	}
	// With authorization on, as Kafka: only topics the principal may
	// DESCRIBE are listed; one named that it may not is
	// TOPIC_AUTHORIZATION_FAILED, whether it exists or not; auto-creation
	// needs CREATE on the cluster or the topic; and AuthorizedOperations
	// are the principal's.
	describable := func(name string) bool {
		return s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name)
	}
	defer func() {
		if s.cfg.Authorizer == nil || !req.IncludeTopicAuthorizedOperations {
			return
		}
		for i := range resp.Topics {
			if st := &resp.Topics[i]; st.ErrorCode == 0 && st.Topic != nil {
				st.AuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeTopic, *st.Topic)
			}
		}
	}()

	sc := s.scope(hdr)
	all := req.Topics == nil || (hdr.version == 0 && len(req.Topics) == 0)
	autoCreate := s.cfg.AutoCreateTopics && (hdr.version < 4 || req.AllowAutoTopicCreation)
	if all {
		for _, v := range s.describableTopics(hdr) {
			resp.Topics = append(resp.Topics, s.metadataTopic(v, req.IncludeTopicAuthorizedOperations, live))
		}
		return done(resp)
	}
	for _, rt := range req.Topics {
		var t *topics.Topic
		st := kmsg.NewMetadataResponseTopic()
		st.AuthorizedOperations = unrequestedOps
		if name := s.topicName(sc.tenant, derefName(rt.Topic), rt.TopicID, rt.Topic == nil); name != "" && !describable(name) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			if rt.Topic != nil {
				st.Topic = rt.Topic
			} else {
				st.TopicID = rt.TopicID
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		switch {
		case sc.isOffsets(derefName(rt.Topic), rt.TopicID, rt.Topic == nil):
			resp.Topics = append(resp.Topics, s.metadataTopic(offsetsView, req.IncludeTopicAuthorizedOperations, live))
			continue
		case rt.Topic == nil && rt.TopicID != [16]byte{}:
			if t = sc.topicByID(rt.TopicID); t == nil {
				st.TopicID = rt.TopicID
				st.ErrorCode = kerr.UnknownTopicID.Code
			}
		case rt.Topic == nil:
			st.ErrorCode = kerr.InvalidRequest.Code
		case !topics.ValidTopicName(*rt.Topic):
			st.Topic = rt.Topic
			st.ErrorCode = kerr.InvalidTopicException.Code
		default:
			st.Topic = rt.Topic
			if t = sc.topic(*rt.Topic); t == nil && autoCreate && !s.authorizeCluster(hdr, kmsg.ACLOperationCreate) &&
				!s.authorize(hdr, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, *rt.Topic) {
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if t == nil && autoCreate {
				var err error
				t, err = s.topics.Create(sc.in(*rt.Topic), s.cfg.DefaultPartitions, nil, false)
				if err == topics.ErrTopicExists {
					t, err = sc.topic(*rt.Topic), nil
				}
				if err != nil {
					s.logger.Error("auto-creating topic", "topic", *rt.Topic, "err", err)
					st.ErrorCode = errorCode(err)
					break
				}
				s.logger.Info("auto-created topic", "topic", t.Name, "partitions", len(t.Partitions))
			}
			if t == nil && st.ErrorCode == 0 {
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
		}
		if t != nil {
			st = s.metadataTopic(topicView{sc.name(t), t}, req.IncludeTopicAuthorizedOperations, live)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}

// derefName is a nullable topic name, "" for null.
func derefName(name *string) string {
	if name == nil {
		return ""
	}
	return *name
}

// metadataTopic is v's Metadata entry: a partition no live node serves
// is LEADER_NOT_AVAILABLE.
func (s *Server) metadataTopic(v topicView, ops bool, live map[int32]bool) kmsg.MetadataResponseTopic {
	st := kmsg.NewMetadataResponseTopic()
	st.Topic, st.TopicID, st.IsInternal = &v.name, v.id(s), v.internal()
	st.AuthorizedOperations = unrequestedOps
	if ops {
		st.AuthorizedOperations = topicOps
	}
	for p := range v.partitions(s) {
		pl := v.place(s, p, live)
		sp := kmsg.NewMetadataResponseTopicPartition()
		sp.Partition, sp.LeaderEpoch = int32(p), pl.epoch
		sp.Leader, sp.Replicas, sp.ISR, sp.OfflineReplicas = pl.leader, pl.replicas, pl.isr, pl.offline
		if pl.leader == -1 {
			sp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		st.Partitions = append(st.Partitions, sp)
	}
	return st
}

// topicView is a topic as the APIs that describe topics (Metadata,
// DescribeTopicPartitions) show it: one of a scope's topics of the log,
// known to its clients as name, or __consumer_offsets (offsetsView).
type topicView struct {
	name string
	t    *topics.Topic // nil: __consumer_offsets
}

// offsetsView is __consumer_offsets.
var offsetsView = topicView{name: offsetstopic.Name}

func (v topicView) internal() bool { return v.t == nil }

func (v topicView) id(s *Server) [16]byte {
	if v.t == nil {
		return s.offsetsID
	}
	return v.t.ID
}

// partitions is the topic's partition count.
func (v topicView) partitions(s *Server) int {
	if v.t == nil {
		return s.groups.Shards()
	}
	return len(v.t.Leaders)
}

// place is where partition p is served: a log topic's by the node
// recorded when it was created, its only replica, offline (see above)
// when that node is not live; __consumer_offsets' as offsetsPlace says.
func (v topicView) place(s *Server, p int, live map[int32]bool) placement {
	if v.t == nil {
		return s.offsetsPlace(p)
	}
	leader, epoch := v.t.Leaders[p], v.t.LeaderEpoch(int32(p))
	if !live[leader] {
		return placement{leader: -1, epoch: epoch, replicas: []int32{leader}, isr: []int32{leader}, offline: []int32{leader}}
	}
	return placement{leader: leader, epoch: epoch, replicas: []int32{leader}, isr: []int32{leader}}
}

// placement is where one partition is served: its leader (-1 when no live
// node serves it), leader epoch (raised each time the leader starts
// serving it again; always 0 for __consumer_offsets), replicas, in-sync
// replicas and offline replicas.
type placement struct {
	leader                 int32
	epoch                  int32
	replicas, isr, offline []int32
}

// liveNodes is the set of the ids of brokers.
func liveNodes(brokers []Broker) map[int32]bool {
	live := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		live[b.NodeID] = true
	}
	return live
}

// describableTopics is what a request for every topic describes: the
// scope's topics the principal may DESCRIBE (as Kafka, with authorization
// on, lists only those), by name, then __consumer_offsets for the default
// organisation: internal topics are listed too, as Kafka does
// (consumer_offsets.go).
func (s *Server) describableTopics(hdr *reqHeader) []topicView {
	describable := func(name string) bool {
		return s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name)
	}
	sc := s.scope(hdr)
	var out []topicView
	for _, t := range sc.all() {
		if name := sc.name(t); describable(name) {
			out = append(out, topicView{name, t})
		}
	}
	if sc.tenant == "" && s.groups.OffsetsTopic() && describable(offsetstopic.Name) {
		out = append(out, offsetsView)
	}
	return out
}
