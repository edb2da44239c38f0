package kafka

// ShareAcknowledge, key 79 (KIP-932).
//
// Version notes:
//   - v0 was Kafka 4.0's early access; not served.
//   - v1: AcquisitionLockTimeoutMs.
//   - v2 (KIP-1222): IsRenewAck, and acknowledgement type 4 (RENEW),
//     which restarts the locks of the records named.
//
// As Kafka 4.2's KafkaApis.handleShareAcknowledgeRequest: READ on the
// group, else GROUP_AUTHORIZATION_FAILED; the member id must be set;
// epoch 0 is INVALID_SHARE_SESSION_EPOCH (a session opens with a
// ShareFetch), and another must be the session's
// (share_session.go); each partition's acknowledgements are applied all
// or nothing (sharecoord, answered once durable) and answered in its
// ErrorCode. Epoch -1 applies them, then closes the session and releases
// what the member still holds of its partitions.

import (
	"context"
	"sync"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ShareAcknowledge, 1, 2, handleShareAcknowledge) }

func handleShareAcknowledge(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(code int16, msg string) func() kmsg.Response {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = errPtr(msg)
		}
		return done(resp)
	}
	group, member := deref(req.GroupID), deref(req.MemberID)
	if code, msg := s.shareRequestCheck(hdr, group, member); code != 0 {
		return fail(code, msg)
	}
	tenant := hdr.tenant()
	key := shareSessionKey{tenant: tenant, group: group, member: member}
	final, closed, code := s.shareSess.acknowledge(key, req.ShareSessionEpoch)
	if code != 0 {
		return fail(code, "")
	}
	cfg := s.shareGroupConfig(tenant, group)
	resp.AcquisitionLockTimeoutMillis = int32(s.share.LockDuration(cfg.limits).Milliseconds())
	var batches []shareAckPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			ap := shareAckPartition{id: sharePartitionID{t.TopicID, p.Partition}}
			for _, b := range p.AcknowledgementBatches {
				ap.acks = append(ap.acks, shareAck{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
			}
			batches = append(batches, ap)
		}
	}
	renew := hdr.version >= 2 && req.IsRenewAck
	sc := s.scope(hdr)
	hints := leaders{s: s, listener: hdr.listenerName()}
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareRPCTimeout)
		defer cancel()
		codes := s.applyShareAcks(ctx, hdr, sc, key, batches, renew, &hints)
		if closed {
			s.releaseShare(ctx, key, final)
		}
		idx := map[[16]byte]int{}
		for i, ap := range batches {
			ti, ok := idx[ap.id.topic]
			if !ok {
				ti = len(resp.Topics)
				idx[ap.id.topic] = ti
				t := kmsg.NewShareAcknowledgeResponseTopic()
				t.TopicID = ap.id.topic
				resp.Topics = append(resp.Topics, t)
			}
			p := kmsg.NewShareAcknowledgeResponseTopicPartition()
			p.Partition, p.ErrorCode = ap.id.partition, codes[i].code
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
			if l := codes[i].leader; l != nil {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = l.id, l.epoch
			}
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
		}
		for _, b := range hints.brokers {
			ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			ne.NodeID, ne.Host, ne.Port, ne.Rack = b.NodeID, b.Host, b.Port, b.Rack
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
		return resp
	}
}

// shareAck is one acknowledgement batch as the wire gives it.
type shareAck struct {
	first, last int64
	types       []int8
}

// shareAckPartition is one partition's acknowledgements.
type shareAckPartition struct {
	id   sharePartitionID
	acks []shareAck
}

// shareAckResult is a partition's answer: its code, and for
// NOT_LEADER_OR_FOLLOWER the live leader.
type shareAckResult struct {
	code   int16
	leader *struct {
		id, epoch int32
	}
}

// applyShareAcks applies the acknowledgements of a ShareFetch or
// ShareAcknowledge, each partition's on its share-state shard, at once;
// the answers are in the order of parts. Types above REJECT are
// INVALID_REQUEST unless renew (KIP-1222: RENEW only in a renewal).
func (s *Server) applyShareAcks(ctx context.Context, hdr *reqHeader, sc scope, key shareSessionKey, parts []shareAckPartition, renew bool, hints *leaders) []shareAckResult {
	out := make([]shareAckResult, len(parts))
	maxType := int8(sharestate.AckReject)
	if renew {
		maxType = int8(sharestate.AckRenew)
	}
	var wg sync.WaitGroup
	for i, ap := range parts {
		t := sc.topicByID(ap.id.topic)
		if t != nil && !s.topicAllowed(hdr, kmsg.ACLOperationRead, "", ap.id.topic, true) {
			out[i].code = kerr.TopicAuthorizationFailed.Code
			continue
		}
		if _, code := s.partitionOf(t, ap.id.partition, true); code != 0 {
			out[i].code = code
			if code == kerr.NotLeaderForPartition.Code {
				if b, ok := hints.of(t, ap.id.partition); ok {
					out[i].leader = &struct{ id, epoch int32 }{b.NodeID, t.LeaderEpoch(ap.id.partition)}
				}
			}
			continue
		}
		cmd := sharestate.AckCmd{
			Key:    sharestate.Key{Tenant: key.tenant, Group: key.group, TopicID: ap.id.topic, Partition: ap.id.partition},
			Member: key.member,
		}
		for _, a := range ap.acks {
			b := sharestate.Ack{First: a.first, Last: a.last}
			for _, typ := range a.types {
				if typ < 0 || typ > maxType {
					out[i].code = kerr.InvalidRequest.Code
				}
				b.Types = append(b.Types, sharestate.AckType(typ))
			}
			if len(a.types) == 0 {
				out[i].code = kerr.InvalidRequest.Code
			}
			cmd.Acks = append(cmd.Acks, b)
		}
		if out[i].code != 0 {
			continue
		}
		wg.Go(func() { out[i].code = s.share.Ack(ctx, cmd).Code })
	}
	wg.Wait()
	return out
}
