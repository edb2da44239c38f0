package kafka

// Fetch, key 1.
//
// Version notes:
//   - v4: IsolationLevel, LastStableOffset and aborted transactions; the
//     oldest Kafka 4 serves (KIP-896), and the oldest here. read_committed
//     (1) reads up to the last stable offset and gets the aborted
//     transactions that overlap what it reads, to drop their records.
//   - v5: LogStartOffset.
//   - v7 (KIP-227): fetch sessions. Cohort creates none: a full request
//     asking for a session gets SessionID 0, which is how Kafka answers
//     when its session cache is full, and clients then keep sending full
//     requests. An incremental request for a session we never gave gets
//     FETCH_SESSION_ID_NOT_FOUND.
//   - v9 (KIP-320): CurrentLeaderEpoch, checked against the partition's
//     (leaderEpochCode).
//   - v11 (KIP-392): Rack and PreferredReadReplica (-1: read from us).
//   - v12: flexible; LastFetchedEpoch, DivergingEpoch; CurrentLeader
//     (tagged), set with NOT_LEADER_OR_FOLLOWER for a partition another
//     node leads (cluster mode) to its live leader.
//   - v13 (KIP-516): topics by id.
//   - v16 (KIP-951): NodeEndpoints (tagged), the endpoints of the leaders
//     named in CurrentLeader.
//   - v15–v18: replica-fetcher fields (ReplicaState, ReplicaDirectoryID,
//     HighWatermark) that consumers leave at their defaults.
//
// Long polling: the fetch waits on the writer, not the reader, until
// MinBytes are available, MaxWaitMillis pass from the request's arrival,
// or the server shuts down. It is woken by appends to the partitions it
// reads, never by polling.

import (
	"context"
	"reflect"
	"time"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Fetch, 4, 18, handleFetch) }

// Fetch session epochs with meaning (KIP-227).
const (
	sessionEpochInitial = 0
	sessionEpochFinal   = -1
)

func handleFetch(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if hdr.version >= 7 {
		switch {
		case req.SessionID != 0:
			resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
			return done(resp)
		case req.SessionEpoch != sessionEpochInitial && req.SessionEpoch != sessionEpochFinal:
			resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			return done(resp)
		}
	}
	// With authorization on, as Kafka: READ on each topic, else
	// TOPIC_AUTHORIZATION_FAILED on its partitions.
	var denied map[int]bool
	for i, rt := range req.Topics {
		if !s.topicAllowed(hdr, kmsg.ACLOperationRead, rt.Topic, rt.TopicID, hdr.version >= 13) {
			if denied == nil {
				denied = map[int]bool{}
			}
			denied[i] = true
		}
	}
	// A node reading another organisation's records on their leader
	// (share_dlq.go) names it in the topic's entry.
	sc := s.scope(hdr)
	var scopes map[int]scope
	for i := range req.Topics {
		if tsc := s.entryScope(sc, hdr, &req.Topics[i].UnknownTags); tsc != sc {
			if scopes == nil {
				scopes = map[int]scope{}
			}
			scopes[i] = tsc
		}
	}
	deadline := now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	return func() kmsg.Response {
		return s.fetchHintsAt(hdr, s.longPoll(fetchScopes{sc, scopes}, hdr.version, req, denied, deadline))
	}
}

// fetchScopes is a fetch's scope: the connection's, and that of each
// topic entry that names another (entryScope), by index.
type fetchScopes struct {
	sc     scope
	topics map[int]scope
}

// of is topic entry i's scope.
func (f fetchScopes) of(i int) scope {
	if sc, ok := f.topics[i]; ok {
		return sc
	}
	return f.sc
}

// longPoll answers req, whose topics at the indexes in denied the
// principal may not read, once it has MinBytes or at deadline.
func (s *Server) longPoll(sc fetchScopes, version int16, req *kmsg.FetchRequest, denied map[int]bool, deadline time.Time) kmsg.Response {
	for {
		resp, targets, size, hasErr := s.fetchOnce(sc, version, req, denied)
		if size >= int(req.MinBytes) || hasErr || req.MaxWaitMillis <= 0 || len(targets) == 0 {
			return resp
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return resp
		}
		// Wait on every partition's append signal, the deadline and
		// shutdown. fetchOnce took each signal before reading, so an
		// append that landed after the read has already fired it.
		cases := make([]reflect.SelectCase, 0, len(targets)+2)
		timer := time.NewTimer(wait)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.closing)})
		for _, t := range targets {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.wait)})
		}
		chosen, _, _ := reflect.Select(cases)
		timer.Stop()
		if chosen <= 1 {
			resp, _, _, _ := s.fetchOnce(sc, version, req, denied)
			return resp
		}
	}
}

type waitTarget struct{ wait <-chan struct{} }

// fetchOnce reads every requested partition once and returns the response,
// the append signals to wait on, the bytes read, and whether any partition
// had an error (which answers at once, as Kafka does).
func (s *Server) fetchOnce(scopes fetchScopes, version int16, req *kmsg.FetchRequest, denied map[int]bool) (*kmsg.FetchResponse, []waitTarget, int, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(version)
	budget := int(req.MaxBytes)
	if version < 3 || budget <= 0 {
		budget = 1<<31 - 1
	}
	var waits []waitTarget
	total, hasErr := 0, false
	hints := leaders{s: s}
	for ti, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		byID := version >= 13
		sc := scopes.of(ti)
		internal := sc.isOffsets(rt.Topic, rt.TopicID, byID)
		t := sc.topicFor(rt.Topic, rt.TopicID, byID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			p, code := s.partitionOf(t, rp.Partition, byID)
			switch {
			case denied[ti]:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case internal:
				// __consumer_offsets: the coordinator's view
				// (consumer_offsets.go).
				if w := s.fetchOffsets(version, rp, &sp, &budget, &total, &hints); w != nil {
					waits = append(waits, waitTarget{w})
				}
			case code != 0:
				sp.ErrorCode = code
				if code == kerr.NotLeaderForPartition.Code && version >= 12 {
					if b, ok := hints.of(t, rp.Partition); ok {
						sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = b.NodeID, t.LeaderEpoch(rp.Partition)
					}
				}
			case leaderEpochCode(rp.CurrentLeaderEpoch, p.LeaderEpoch()) != 0:
				sp.ErrorCode = leaderEpochCode(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			default:
				waits = append(waits, waitTarget{p.Wait()})
				limit := int(rp.PartitionMaxBytes)
				if limit > budget {
					limit = budget
				}
				// KIP-74: the first batch of the first partition with data
				// is returned even if it is over the limits.
				var res topics.ReadResult
				var err error
				if req.IsolationLevel == 1 {
					// read_committed: up to the last stable offset, with
					// the aborted transactions among what is returned.
					var aborted []topics.AbortedTxn
					res, aborted, err = p.ReadCommitted(rp.FetchOffset, limit, total == 0)
					for _, a := range aborted {
						sp.AbortedTransactions = append(sp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
					}
				} else {
					res, err = p.Read(rp.FetchOffset, limit, total == 0)
				}
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStable, res.LogStart
				if err != nil {
					sp.ErrorCode = errorCode(err)
					if sp.ErrorCode == kerr.KafkaStorageError.Code {
						s.logger.Error("read failed", "topic", p.Topic, "partition", p.Index, "err", err)
					}
					break
				}
				sp.RecordBatches = res.Batches
				total += len(res.Batches)
				budget -= len(res.Batches)
				if budget < 0 {
					budget = 0
				}
			}
			if sp.RecordBatches == nil {
				// Records is nullable on the wire, but Kafka always sends an
				// empty set, never null, and librdkafka rejects null below
				// the flexible versions ("invalid MessageSetSize -1").
				sp.RecordBatches = []byte{}
			}
			if sp.ErrorCode != 0 {
				hasErr = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if version >= 16 {
		for _, b := range hints.brokers {
			resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
		}
	}
	return resp, waits, total, hasErr
}
