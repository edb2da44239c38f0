package kafka

// ListOffsets, key 2.
//
// Version notes:
//   - v1: one offset per partition (v0's MaxNumOffsets is gone); Kafka 4's
//     oldest, and ours.
//   - v2: IsolationLevel: latest is the last stable offset for
//     read_committed (1), the high watermark for read_uncommitted.
//   - v4 (KIP-320): CurrentLeaderEpoch, checked against the partition's
//     (leaderEpochCode), and LeaderEpoch, the epoch the offset answered
//     was written in.
//   - v6: flexible.
//   - v7 (KIP-734): timestamp -3, the record with the largest timestamp.
//   - v8 (KIP-405): -4, earliest local offset (the log start here).
//   - v9 (KIP-1005): -5, earliest pending upload; no tiered storage, so
//     not found (-1).
//   - v10: TimeoutMillis. v11 (KIP-1023): -6, earliest tiered, likewise not
//     found.
//
// A partition another node leads (cluster mode) is NOT_LEADER_OR_FOLLOWER,
// as Kafka answers a broker that is not the leader.

import (
	"context"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListOffsets, 1, 11, handleListOffsets) }

// Special timestamps.
const (
	tsLatest     = -1
	tsEarliest   = -2
	tsMax        = -3
	tsEarliestLo = -4
)

func handleListOffsets(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	// With authorization on, as Kafka: DESCRIBE on each topic, else
	// TOPIC_AUTHORIZATION_FAILED. Decided here, on the reader, which
	// owns the connection's principal.
	denied := make([]bool, len(req.Topics))
	for i, rt := range req.Topics {
		denied[i] = !s.authorize(hdr, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, rt.Topic)
	}
	sc := s.scope(hdr)
	// Timestamp searches read batches from disk: do them on the writer.
	return func() kmsg.Response {
		for ti, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			t := sc.topic(rt.Topic)
			internal := sc.isOffsets(rt.Topic, [16]byte{}, false)
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
				p, code := s.partitionOf(t, rp.Partition, false)
				switch {
				case denied[ti]:
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case internal:
					s.listOffsetsOffsets(rp, &sp) // consumer_offsets.go
				case code != 0:
					sp.ErrorCode = code
				case leaderEpochCode(rp.CurrentLeaderEpoch, p.LeaderEpoch()) != 0:
					sp.ErrorCode = leaderEpochCode(rp.CurrentLeaderEpoch, p.LeaderEpoch())
				case req.IsolationLevel == 1 && rp.Timestamp == tsLatest:
					// read_committed: the last stable offset, as Kafka.
					sp.Offset = p.LastStable()
					sp.LeaderEpoch = p.EpochAt(sp.Offset)
				default:
					s.listOffset(p, rp.Timestamp, &sp)
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}

func (s *Server) listOffset(p *topics.Partition, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) {
	if err := answerListOffset(p, ts, sp); err != nil {
		s.logger.Error("list offsets", "topic", p.Topic, "partition", p.Index, "err", err)
		sp.ErrorCode = errorCode(err)
	}
}

// offsetLog is what ListOffsets reads of a partition: a topic's, or one
// of __consumer_offsets.
type offsetLog interface {
	Offsets() (logStart, highWatermark int64)
	MaxTimestamp() (offset, at int64, found bool, err error)
	OffsetForTimestamp(ts int64) (offset, at int64, found bool, err error)
	EpochAt(offset int64) int32
}

// answerListOffset fills sp with p's offset for the request's timestamp
// ts (latest, earliest, the max timestamp, or the first record at or
// after ts), or returns the error that kept it from reading.
func answerListOffset(p offsetLog, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	start, hw := p.Offsets()
	var (
		off, at int64
		found   bool
		err     error
	)
	switch {
	case ts == tsLatest:
		off, found = hw, true
	case ts == tsEarliest || ts == tsEarliestLo:
		off, found = start, true
	case ts == tsMax:
		off, at, found, err = p.MaxTimestamp()
	case ts >= 0:
		off, at, found, err = p.OffsetForTimestamp(ts)
	}
	if err != nil {
		return err
	}
	if found {
		sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, -1, p.EpochAt(off)
		if ts == tsMax || ts >= 0 {
			sp.Timestamp = at
		}
	}
	return nil
}
