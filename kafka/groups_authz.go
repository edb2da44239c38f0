package kafka

// The group APIs' authorization, as Kafka's KafkaApis: each group a
// request names needs an operation on it (the API's registration says
// which: groups.API.GroupACL, in its own file), checked here before
// the coordinator sees the request; a request naming several groups
// (DescribeGroups, DeleteGroups, OffsetFetch v8+, ConsumerGroupDescribe)
// is split with the coordinator's own table, the refused groups answered
// GROUP_AUTHORIZATION_FAILED and the answers merged. Commits also need
// READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition, the
// other partitions committed), and so does OffsetDelete (the other
// partitions' offsets deleted); OffsetFetch answers the topics the
// principal may not DESCRIBE TOPIC_AUTHORIZATION_FAILED when named, and
// leaves them out when it asked for all; ListGroups lists the groups it
// may DESCRIBE (all with DESCRIBE on the cluster). DescribeGroups and
// ConsumerGroupDescribe fill AuthorizedOperations with the principal's
// when asked. What a response function decides on the writer uses the
// principal taken on the reader (authorizeAs).

import (
	"context"
	"fmt"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorizedGroupRequest hands req to the coordinator with what the
// principal may not do answered here.
func (s *Server) authorizedGroupRequest(ctx context.Context, hdr *reqHeader, req coordinator.Request) func() kmsg.Response {
	key := kmsg.Key(req.Msg.Key())
	api, _ := groups.Lookup(int16(key))
	if key == kmsg.ListGroups {
		return s.listAuthorizedGroups(ctx, hdr, req)
	}
	if t, ok := req.Msg.(*kmsg.TxnOffsetCommitRequest); ok && !s.authorize(hdr, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, t.TransactionalID) {
		return done(api.Error(req.Msg, kerr.TransactionalIDAuthorizationFailed.Code))
	}
	var allowed, denied []int
	for i, g := range api.Groups(req.Msg) {
		if s.authorize(hdr, api.GroupACL, kmsg.ACLResourceTypeGroup, g) {
			allowed = append(allowed, i)
		} else {
			denied = append(denied, i)
		}
	}
	switch {
	case len(denied) == 0:
		return s.groupTopicsChecked(ctx, hdr, req)
	case len(allowed) == 0:
		return done(api.Error(req.Msg, kerr.GroupAuthorizationFailed.Code))
	}
	part := req
	part.Msg = api.Split(req.Msg, allowed)
	wait := s.groupTopicsChecked(ctx, hdr, part)
	refused := api.Error(api.Split(req.Msg, denied), kerr.GroupAuthorizationFailed.Code)
	return func() kmsg.Response {
		return api.Merge(req.Msg, [][]int{allowed, denied}, []kmsg.Response{wait(), refused})
	}
}

// listAuthorizedGroups answers ListGroups with the groups the principal
// may describe.
func (s *Server) listAuthorizedGroups(ctx context.Context, hdr *reqHeader, req coordinator.Request) func() kmsg.Response {
	wait := s.groups.Handle(ctx, req)
	if s.authorizeCluster(hdr, kmsg.ACLOperationDescribe) {
		return wait
	}
	who := authzRequest(hdr)
	return func() kmsg.Response {
		resp := wait().(*kmsg.ListGroupsResponse)
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			if s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
				kept = append(kept, g)
			}
		}
		resp.Groups = kept
		return resp
	}
}

// topicName is the name of the tenant's topic a request names by name
// or, from the versions that name topics by id, by id ("" for an unknown
// id or another tenant's, which the coordinator answers UNKNOWN_TOPIC_ID).
func (s *Server) topicName(tenant, name string, id [16]byte, byID bool) string {
	if !byID {
		return name
	}
	sc := scope{tenant: tenant, s: s}
	if t := sc.topicByID(id); t != nil {
		return sc.name(t)
	}
	return ""
}

// topicAllowed reports whether the principal may do op on the topic; an
// unknown id is left to the coordinator.
func (s *Server) topicAllowed(hdr *reqHeader, op kmsg.ACLOperation, name string, id [16]byte, byID bool) bool {
	return s.topicAllowedAs(authzRequest(hdr), op, name, id, byID)
}

// topicAllowedAs is topicAllowed for who (see authorizeAs).
func (s *Server) topicAllowedAs(who security.Request, op kmsg.ACLOperation, name string, id [16]byte, byID bool) bool {
	n := s.topicName(who.Tenant, name, id, byID)
	return (byID && n == "") || s.authorizeAs(who, op, kmsg.ACLResourceTypeTopic, n)
}

// groupTopicsChecked applies the topic checks of commits and offset
// fetches, then hands req to the coordinator.
func (s *Server) groupTopicsChecked(ctx context.Context, hdr *reqHeader, req coordinator.Request) func() kmsg.Response {
	switch r := req.Msg.(type) {
	case *kmsg.OffsetCommitRequest:
		return s.offsetCommitTopicsChecked(ctx, hdr, req, r)
	case *kmsg.TxnOffsetCommitRequest:
		return s.txnOffsetCommitTopicsChecked(ctx, hdr, req, r)
	case *kmsg.OffsetDeleteRequest:
		return s.offsetDeleteTopicsChecked(ctx, hdr, req, r)
	case *kmsg.OffsetFetchRequest:
		wait, who := s.groups.Handle(ctx, req), authzRequest(hdr)
		return func() kmsg.Response { return s.filterOffsetFetch(who, r, wait().(*kmsg.OffsetFetchResponse)) }
	case *kmsg.DescribeGroupsRequest:
		if !r.IncludeAuthorizedOperations {
			break
		}
		wait, who := s.groups.Handle(ctx, req), authzRequest(hdr)
		return func() kmsg.Response {
			resp := wait().(*kmsg.DescribeGroupsResponse)
			for i := range resp.Groups {
				if g := &resp.Groups[i]; g.ErrorCode == 0 {
					g.AuthorizedOperations = s.authorizedOperationsAs(who, kmsg.ACLResourceTypeGroup, g.Group)
				}
			}
			return resp
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if denied := s.deniedTopics(hdr, r.SubscribedTopicNames); len(denied) > 0 {
			resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = errPtr(fmt.Sprintf("Not authorized to describe the subscribed topics %v.", denied))
			return done(resp)
		}
	case *kmsg.ShareGroupHeartbeatRequest:
		// As ConsumerGroupHeartbeat: Kafka's ShareGroupHeartbeat v1.
		if denied := s.deniedTopics(hdr, r.SubscribedTopicNames); len(denied) > 0 {
			resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = errPtr(fmt.Sprintf("Not authorized to describe the subscribed topics %v.", denied))
			return done(resp)
		}
	case *kmsg.ShareGroupDescribeRequest:
		if s.cfg.Authorizer == nil && !r.IncludeAuthorizedOperations {
			break
		}
		wait, who := s.groups.Handle(ctx, req), authzRequest(hdr)
		return func() kmsg.Response {
			resp := wait().(*kmsg.ShareGroupDescribeResponse)
			for i := range resp.Groups {
				g := &resp.Groups[i]
				if g.ErrorCode != 0 {
					continue
				}
				if !s.shareTopicsDescribable(who, g) {
					d := kmsg.NewShareGroupDescribeResponseGroup()
					d.GroupID, d.ErrorCode, d.AuthorizedOperations = g.GroupID, kerr.TopicAuthorizationFailed.Code, g.AuthorizedOperations
					*g = d
					continue
				}
				if r.IncludeAuthorizedOperations {
					g.AuthorizedOperations = s.authorizedOperationsAs(who, kmsg.ACLResourceTypeGroup, g.GroupID)
				}
			}
			return resp
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		if s.cfg.Authorizer == nil && !r.IncludeAuthorizedOperations {
			break
		}
		wait, who := s.groups.Handle(ctx, req), authzRequest(hdr)
		return func() kmsg.Response {
			resp := wait().(*kmsg.ConsumerGroupDescribeResponse)
			for i := range resp.Groups {
				g := &resp.Groups[i]
				if g.ErrorCode != 0 {
					continue
				}
				if !s.groupTopicsDescribable(who, g) {
					*g = kmsg.ConsumerGroupDescribeResponseGroup{Group: g.Group, ErrorCode: kerr.TopicAuthorizationFailed.Code, AuthorizedOperations: g.AuthorizedOperations}
					continue
				}
				if r.IncludeAuthorizedOperations {
					g.AuthorizedOperations = s.authorizedOperationsAs(who, kmsg.ACLResourceTypeGroup, g.Group)
				}
			}
			return resp
		}
	}
	return s.groups.Handle(ctx, req)
}

// topicsChecked hands the group coordinator req with only the topics
// allowed (by allowed) and answers the others on each partition with
// TOPIC_AUTHORIZATION_FAILED (refuse), before the coordinator's topics.
// With every topic refused the coordinator is skipped when skipIfNone
// (OffsetCommit, TxnOffsetCommit), else still asked (OffsetDelete: the
// group's own errors come back, as Kafka's KafkaApis). with builds the
// request with given topics, answer an empty response, merge puts the
// refused topics first in a response.
func topicsChecked[T, RT any](s *Server, ctx context.Context, req coordinator.Request, topics []T, allowed func(T) bool, refuse func(T) RT,
	skipIfNone bool, with func([]T) kmsg.Request, answer func() kmsg.Response, merge func(kmsg.Response, []RT)) func() kmsg.Response {
	var ok []T
	var refused []RT
	for _, t := range topics {
		if allowed(t) {
			ok = append(ok, t)
		} else {
			refused = append(refused, refuse(t))
		}
	}
	if len(refused) == 0 {
		return s.groups.Handle(ctx, req)
	}
	if len(ok) == 0 && skipIfNone {
		resp := answer()
		merge(resp, refused)
		return done(resp)
	}
	req.Msg = with(ok)
	wait := s.groups.Handle(ctx, req)
	return func() kmsg.Response {
		resp := wait()
		merge(resp, refused)
		return resp
	}
}

func (s *Server) offsetCommitTopicsChecked(ctx context.Context, hdr *reqHeader, req coordinator.Request, r *kmsg.OffsetCommitRequest) func() kmsg.Response {
	byID := r.Version >= 10
	return topicsChecked(s, ctx, req, r.Topics,
		func(t kmsg.OffsetCommitRequestTopic) bool {
			return s.topicAllowed(hdr, kmsg.ACLOperationRead, t.Topic, t.TopicID, byID)
		},
		func(t kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		}, true,
		func(ts []kmsg.OffsetCommitRequestTopic) kmsg.Request { part := *r; part.Topics = ts; return &part },
		func() kmsg.Response { resp := r.ResponseKind(); resp.SetVersion(r.Version); return resp },
		func(resp kmsg.Response, refused []kmsg.OffsetCommitResponseTopic) {
			rr := resp.(*kmsg.OffsetCommitResponse)
			rr.Topics = append(refused, rr.Topics...)
		})
}

// offsetDeleteTopicsChecked hands the coordinator the topics the
// principal may READ, even none (as Kafka's KafkaApis: the group's own
// errors still come back), and answers the others
// TOPIC_AUTHORIZATION_FAILED on each partition.
func (s *Server) offsetDeleteTopicsChecked(ctx context.Context, hdr *reqHeader, req coordinator.Request, r *kmsg.OffsetDeleteRequest) func() kmsg.Response {
	return topicsChecked(s, ctx, req, r.Topics,
		func(t kmsg.OffsetDeleteRequestTopic) bool {
			return s.authorize(hdr, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		},
		func(t kmsg.OffsetDeleteRequestTopic) kmsg.OffsetDeleteResponseTopic {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		}, false,
		func(ts []kmsg.OffsetDeleteRequestTopic) kmsg.Request { part := *r; part.Topics = ts; return &part },
		nil,
		func(resp kmsg.Response, refused []kmsg.OffsetDeleteResponseTopic) {
			rr := resp.(*kmsg.OffsetDeleteResponse)
			rr.Topics = append(refused, rr.Topics...)
		})
}

func (s *Server) txnOffsetCommitTopicsChecked(ctx context.Context, hdr *reqHeader, req coordinator.Request, r *kmsg.TxnOffsetCommitRequest) func() kmsg.Response {
	byID := r.Version >= 6
	return topicsChecked(s, ctx, req, r.Topics,
		func(t kmsg.TxnOffsetCommitRequestTopic) bool {
			return s.topicAllowed(hdr, kmsg.ACLOperationRead, t.Topic, t.TopicID, byID)
		},
		func(t kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		}, true,
		func(ts []kmsg.TxnOffsetCommitRequestTopic) kmsg.Request { part := *r; part.Topics = ts; return &part },
		func() kmsg.Response { resp := r.ResponseKind(); resp.SetVersion(r.Version); return resp },
		func(resp kmsg.Response, refused []kmsg.TxnOffsetCommitResponseTopic) {
			rr := resp.(*kmsg.TxnOffsetCommitResponse)
			rr.Topics = append(refused, rr.Topics...)
		})
}

// filterOffsetFetch answers, in resp, the topics the principal may not
// describe: TOPIC_AUTHORIZATION_FAILED on each partition (offset -1, no
// metadata) where the request named them, left out where it asked for
// every topic (Kafka's OffsetFetch).
func (s *Server) filterOffsetFetch(who security.Request, r *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) kmsg.Response {
	if r.Version < 8 {
		kept := resp.Topics[:0]
		for _, t := range resp.Topics {
			if !s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
				if r.Topics == nil {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			}
			kept = append(kept, t)
		}
		resp.Topics = kept
		return resp
	}
	all := map[string]bool{}
	for _, g := range r.Groups {
		all[g.Group] = g.Topics == nil
	}
	byID := r.Version >= 10
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if !s.topicAllowedAs(who, kmsg.ACLOperationDescribe, t.Topic, t.TopicID, byID) {
				if all[g.Group] {
					continue
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			}
			kept = append(kept, t)
		}
		g.Topics = kept
	}
	return resp
}

// deniedTopics are the topics among names the principal may not
// DESCRIBE: a ConsumerGroupHeartbeat naming one is refused
// TOPIC_AUTHORIZATION_FAILED, as Kafka 4 (KAFKA-18813), so that a
// subscription cannot learn of topics the principal cannot see.
func (s *Server) deniedTopics(hdr *reqHeader, names []string) []string {
	var denied []string
	for _, n := range names {
		if !s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, n) {
			denied = append(denied, n)
		}
	}
	return denied
}

// shareTopicsDescribable is groupTopicsDescribable for a described share
// group: its members' assignments (Kafka 4.2's ShareGroupDescribe v1).
func (s *Server) shareTopicsDescribable(who security.Request, g *kmsg.ShareGroupDescribeResponseGroup) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	for _, m := range g.Members {
		for _, t := range m.Assignment.TopicPartitions {
			if !s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
				return false
			}
		}
	}
	return true
}

// groupTopicsDescribable reports whether who may DESCRIBE every topic in
// the members' current and target assignments of a described consumer
// group: Kafka 4 (KAFKA-18813) answers a group with any other
// TOPIC_AUTHORIZATION_FAILED and nothing of it.
func (s *Server) groupTopicsDescribable(who security.Request, g *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	seen := map[string]bool{}
	for _, m := range g.Members {
		for _, a := range [][]kmsg.AssignmentTopicPartition{m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions} {
			for _, t := range a {
				if seen[t.Topic] {
					continue
				}
				seen[t.Topic] = true
				if !s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
					return false
				}
			}
		}
	}
	return true
}
