package kafka

// DeleteTopics, key 20.
//
// Version notes:
//   - v0: topic names. v1: ThrottleMillis. v4: flexible.
//   - v5: ErrorMessage per topic.
//   - v6 (KIP-516): topics by name or by id; both → INVALID_REQUEST, an
//     unknown id → UNKNOWN_TOPIC_ID.
//
// Deletion is durable before the response and removes the topic's data
// and, as Kafka, every group's committed offsets for it. Any node deletes
// any topic: the topic is looked up in the shared catalog, not in this
// node's last view of it, and the other nodes drop their data when they
// next refresh.

import (
	"context"

	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteTopics, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	targets := req.Topics
	if hdr.version < 6 {
		targets = nil
		for _, name := range req.TopicNames {
			name := name
			targets = append(targets, kmsg.DeleteTopicsRequestTopic{Topic: &name})
		}
	}
	// With authorization on, as Kafka: DELETE on each topic, else
	// TOPIC_AUTHORIZATION_FAILED (for a name, before it is looked up).
	who, sc := authzRequest(hdr), s.scope(hdr)
	return func() kmsg.Response {
		// deleted are external names: the offsets the coordinator
		// removes are those of the organisation's groups only.
		var deleted []string
		defer func() { s.groups.TopicsDeleted(sc.tenant, deleted) }()
		for _, rt := range targets {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			var name string
			switch {
			case rt.Topic != nil && rt.TopicID != [16]byte{}:
				st.ErrorCode = kerr.InvalidRequest.Code
				st.ErrorMessage = errPtr("Give a topic name or a topic id, not both.")
			case sc.isOffsets(derefName(rt.Topic), rt.TopicID, rt.Topic == nil):
				// consumer_offsets.go: nobody may delete it.
				name := offsetstopic.Name
				st.Topic, st.TopicID = &name, s.offsetsID
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.ErrorMessage = errPtr(offsetsReadOnly)
			case rt.Topic != nil && !s.authorizeAs(who, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, *rt.Topic):
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case rt.Topic != nil:
				name = *rt.Topic
				var t *topics.Topic
				var err error
				if topics.ValidTopicName(name) { // no forged internal name
					t, err = s.topics.Sync(sc.in(name))
				}
				switch {
				case err != nil:
					st.ErrorCode = errorCode(err)
					st.ErrorMessage = errPtr(err.Error())
				case t != nil:
					st.TopicID = t.ID
				default:
					st.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
			default:
				if t := s.topicByIDFresh(sc, rt.TopicID); t != nil && !s.authorizeAs(who, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, sc.name(t)) {
					st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				} else if t != nil {
					name = sc.name(t)
					st.Topic = &name
				} else {
					st.ErrorCode = kerr.UnknownTopicID.Code
				}
			}
			if st.ErrorCode == 0 {
				if err := s.topics.Delete(sc.in(name)); err != nil {
					st.ErrorCode = errorCode(err)
					st.ErrorMessage = errPtr(err.Error())
				} else {
					s.logger.Info("deleted topic", "topic", name)
					deleted = append(deleted, name)
				}
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}

// topicByIDFresh is the scope's topic with that id, refreshing the
// catalog first if this node does not know it: another node may have
// just created it.
func (s *Server) topicByIDFresh(sc scope, id [16]byte) *topics.Topic {
	if s.topics.TopicByID(id) != nil {
		return sc.topicByID(id)
	}
	if err := s.topics.Refresh(); err != nil {
		s.logger.Warn("refreshing topics", "err", err)
	}
	return sc.topicByID(id)
}
