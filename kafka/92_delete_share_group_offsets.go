package kafka

// DeleteShareGroupOffsets, key 92 (KIP-932).
//
// Version notes:
//   - v0 (Kafka 4.1, KIP-932): the share-partition state of whole topics
//     of an empty share group is deleted.
//
// As Kafka 4.2's KafkaApis.handleDeleteShareGroupOffsetsRequest,
// GroupCoordinatorService.deleteShareGroupOffsets and
// GroupCoordinatorShard.initiateDeleteShareGroupOffsets /
// completeDeleteShareGroupOffsets:
//   - DELETE on the group, else GROUP_AUTHORIZATION_FAILED for the
//     request.
//   - Each topic needs READ, else TOPIC_AUTHORIZATION_FAILED for it
//     (first, in request order, with no topic id).
//   - An empty group id is INVALID_GROUP_ID; then the group's shard
//     checks the group (GROUP_ID_NOT_FOUND with Kafka's messages,
//     NON_EMPTY_GROUP), answered for the whole request with no topics.
//   - An unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a topic whose state
//     the group does not hold too, with "There is no offset information
//     to delete.". The others move to the group's Deleting list
//     (groups.ShareDeleteCmd), every partition's state is deleted
//     (sharestate.DeleteCmd), and those whose state is all gone leave the
//     list (groups.ShareStateDeletedCmd) and are answered with their id
//     and no error; a topic a share-state shard failed for keeps the
//     shard's code (it stays Deleting, unassigned, and a retry deletes it
//     again), and a group shard that cannot complete the deletion is the
//     request's error, as Kafka's.
//
// The answer lists the topics refused READ first, then the deleted ones,
// then those with nothing to delete, then those a share-state shard
// failed for, each kind in request order (Kafka lists the deleted ones in
// no set order).

import (
	"context"
	"slices"
	"sync"

	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DeleteShareGroupOffsets, 0, 0, handleDeleteShareGroupOffsets)
}

func handleDeleteShareGroupOffsets(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	fail := func(code int16, msg string) func() kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, errPtr(msg)
		return done(resp)
	}
	if code := s.shareOffsetsCheck(hdr, kmsg.ACLOperationDelete, req.GroupID); code != 0 {
		return fail(code, kafkaMessage(code))
	}
	sc := s.scope(hdr)
	resp.Topics = make([]kmsg.DeleteShareGroupOffsetsResponseTopic, len(req.Topics))
	// named are the topics for the group's shard, by index in the
	// request.
	var named []int
	for i, rt := range req.Topics {
		out := &resp.Topics[i]
		*out = kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		out.Topic = rt.Topic
		switch t := sc.topic(rt.Topic); {
		case !s.authorize(hdr, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic):
			out.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case t == nil:
			out.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			out.TopicID = t.ID
			named = append(named, i)
		}
		if out.ErrorCode != 0 {
			out.ErrorMessage = errPtr(kafkaMessage(out.ErrorCode))
		}
	}
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareRPCTimeout)
		defer cancel()
		ask := make([]share.OffsetsTopic, len(named))
		for k, i := range named {
			out := &resp.Topics[i]
			ask[k] = share.OffsetsTopic{TopicID: out.TopicID, Name: out.Topic}
			if t := sc.topicByID(out.TopicID); t != nil {
				ask[k].Partitions = int32(len(t.Partitions))
			}
		}
		deleted, code, err := s.groups.ShareDelete(ctx, sc.tenant, req.GroupID, ask)
		switch code = coordinatorCode(code, err); {
		case code != 0:
			resp.Topics, resp.ErrorCode, resp.ErrorMessage = nil, code, errPtr(kafkaMessage(code))
			return resp
		case deleted.Code != 0:
			resp.Topics, resp.ErrorCode, resp.ErrorMessage = nil, deleted.Code, errPtr(deleted.Message)
			return resp
		}
		var drop []record.ShareStateTopic
		var dropped []int // indexes into resp.Topics
		for k, i := range named {
			out := &resp.Topics[i]
			if c := deleted.Codes[k]; c != 0 {
				out.TopicID, out.ErrorCode = [16]byte{}, c
				out.ErrorMessage = errPtr(share.NoOffsetInformation)
				continue
			}
			drop = append(drop, deleted.Drop[k])
			dropped = append(dropped, i)
		}
		codes, code := s.dropShareState(ctx, sc.tenant, req.GroupID, drop)
		if code != 0 {
			resp.Topics, resp.ErrorCode, resp.ErrorMessage = nil, code, errPtr(kafkaMessage(code))
			return resp
		}
		for k, i := range dropped {
			if c := codes[k]; c != 0 {
				resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = c, errPtr(kafkaMessage(c))
			}
		}
		resp.Topics = deleteOrder(resp.Topics, dropped)
		return resp
	}
}

// deleteOrder puts the topics in Kafka's order: those refused READ (which
// KafkaApis answers before asking the group coordinator), the deleted
// ones, those with nothing to delete or unknown (the coordinator's
// errors), then those the share state failed for; dropped are the
// indexes of the topics whose state was to be deleted.
func deleteOrder(ts []kmsg.DeleteShareGroupOffsetsResponseTopic, dropped []int) []kmsg.DeleteShareGroupOffsetsResponseTopic {
	rank := func(i int) int {
		switch t := ts[i]; {
		case t.ErrorCode == kerr.TopicAuthorizationFailed.Code:
			return 0
		case t.ErrorCode == 0:
			return 1
		case !slices.Contains(dropped, i):
			return 2
		}
		return 3
	}
	out := make([]kmsg.DeleteShareGroupOffsetsResponseTopic, 0, len(ts))
	for r := range 4 {
		for i := range ts {
			if rank(i) == r {
				out = append(out, ts[i])
			}
		}
	}
	return out
}

// dropShareState deletes the share-partition state of these partitions of
// group (Deleting in its record), then tells the group's shard of the
// topics whose state is all gone (ShareStateDeleted), which leave the
// list. It returns each topic's code (0: gone; else a share-state shard's,
// the topic left Deleting for a later retry) and the group shard's code
// for that last step (0 when it is durable, or had nothing to do).
func (s *Server) dropShareState(ctx context.Context, tenant, group string, topics []record.ShareStateTopic) ([]int16, int16) {
	codes := make([]int16, len(topics))
	var mu sync.Mutex
	var keys []sharestate.Key
	var owner []int
	for i, t := range topics {
		for _, p := range t.Partitions {
			keys = append(keys, sharestate.Key{Tenant: tenant, Group: group, TopicID: t.TopicID, Partition: p})
			owner = append(owner, i)
		}
	}
	shareEach(len(keys), func(k int) {
		r := s.share.Delete(ctx, sharestate.DeleteCmd{Key: keys[k]})
		// GROUP_ID_NOT_FOUND: the partition had no state, which is
		// what a deletion wants (Kafka's share coordinator answers it
		// as a deletion).
		if r.Code != 0 && r.Code != kerr.GroupIDNotFound.Code {
			mu.Lock()
			if codes[owner[k]] == 0 {
				codes[owner[k]] = r.Code
			}
			mu.Unlock()
		}
	})
	var gone [][16]byte
	for i, t := range topics {
		if codes[i] == 0 {
			gone = append(gone, t.TopicID)
		}
	}
	if len(gone) == 0 {
		return codes, 0
	}
	code, err := s.groups.ShareStateDeleted(ctx, tenant, group, gone)
	return codes, coordinatorCode(code, err)
}

// shareEachLimit bounds the share-state commands one request has under
// way at once: enough for the shards' group commit to batch their
// writes, few enough that a topic of thousands of partitions does not
// start thousands of goroutines.
const shareEachLimit = 32

// shareEach calls fn(0..n-1), at most shareEachLimit at once, and
// returns when every call has.
func shareEach(n int, fn func(int)) {
	sem := make(chan struct{}, shareEachLimit)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
