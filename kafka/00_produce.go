package kafka

// Produce, key 0.
//
// Version notes:
//   - v3: RecordBatch v2 (magic 2) only (else INVALID_RECORD), TransactionalID. The oldest Kafka
//     4 serves (KIP-896), and the oldest here.
//   - v4–v6: no request change (v5 LogStartOffset in the response).
//   - v7 (KIP-110): zstd; below v7 a zstd batch gets UNSUPPORTED_COMPRESSION_TYPE.
//   - v8 (KIP-467): per-record errors and an error message: a batch
//     with records a compacted topic refuses (no key) is not appended,
//     and each of them is named by its index; below v8 the partition's
//     INVALID_RECORD alone, as Kafka.
//   - v9: flexible.
//   - v10–v11 (KIP-951): CurrentLeader and NodeEndpoints, tagged: with
//     NOT_LEADER_OR_FOLLOWER (a partition another node leads, cluster
//     mode) they name its live leader.
//   - v12: no request change (KIP-890 part 2): with transaction.version
//     2 a transactional produce adds its partitions to the transaction
//     itself (txn_produce.go); older versions are only verified.
//   - v13 (KIP-516): topics by id instead of name.
//
// A transactional producer's produce (TransactionID set) is checked
// against its transaction first, as Kafka does since 3.6 with
// transaction.partition.verification.enable (KIP-890 part 1): every
// partition must be in the ongoing transaction (txn_produce.go).
//
// With authorization on, as Kafka: a transactional produce needs WRITE on
// its transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
// partition), and each topic WRITE (TOPIC_AUTHORIZATION_FAILED).
//
// A produce appends in request order on the connection's reader, so an
// idempotent producer's pipelined batches meet the sequence check in the
// order they were sent; with acks=-1 the response then waits, on the
// writer, until the batches are fsynced.

import (
	"context"
	"errors"
	"sync"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Produce, 3, 13, handleProduce) }

func handleProduce(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	var fail int16
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		fail = kerr.InvalidRequiredAcks.Code
	case req.TransactionID != nil && s.txn == nil:
		// Transactions off: InitProducerId refuses transactional ids
		// the same way.
		fail = kerr.TransactionalIDAuthorizationFailed.Code
	case req.TransactionID != nil && !s.authorize(hdr, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID):
		// Kafka: a transactional produce needs WRITE on its id.
		fail = kerr.TransactionalIDAuthorizationFailed.Code
	case req.TransactionID != nil:
		// KIP-890 part 1: the partitions must be in the producer's
		// ongoing transaction (txn_produce.go).
		fail = s.verifyTxn(ctx, s.scope(hdr), hdr.version, req)
	}

	type toSync struct {
		p      *topics.Partition
		end    int64
		ti, pi int // response slot
	}
	var syncs []toSync
	failed := false
	hints := leaders{s: s, listener: hdr.listenerName()}
	sc := s.scope(hdr)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		byID := hdr.version >= 13
		tsc := s.entryScope(sc, hdr, &rt.UnknownTags)
		internal := tsc.isOffsets(rt.Topic, rt.TopicID, byID)
		t := tsc.topicFor(rt.Topic, rt.TopicID, byID)
		denied := !s.topicAllowed(hdr, kmsg.ACLOperationWrite, rt.Topic, rt.TopicID, byID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogStartOffset, sp.LogAppendTime = -1, -1, -1
			p, code := s.partitionOf(t, rp.Partition, byID)
			switch {
			case fail != 0:
				sp.ErrorCode = fail
			case denied:
				// Kafka: WRITE on the topic, checked before it is
				// looked up.
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case internal:
				// As Kafka's ReplicaManager.appendToLocalLog: "Cannot
				// append to internal topic" (consumer_offsets.go).
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case code != 0:
				sp.ErrorCode = code
				if code == kerr.NotLeaderForPartition.Code && hdr.version >= 10 {
					if b, ok := hints.of(t, rp.Partition); ok {
						sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = b.NodeID, t.LeaderEpoch(rp.Partition)
					}
				}
			case req.TransactionID == nil && isTransactional(rp.Records):
				// Kafka's ProduceRequest validation: transactional
				// batches need the request's transactional id.
				sp.ErrorCode = kerr.InvalidRecord.Code
			case hdr.version < 7 && isZstd(rp.Records):
				// zstd needs Produce v7 (KIP-110), as Kafka checks.
				sp.ErrorCode = kerr.UnsupportedCompressionType.Code
			default:
				var res topics.AppendResult
				err := t.CheckRecords(rp.Partition, rp.Records)
				if err == nil {
					res, err = p.Append(rp.Records, t.MaxBatchBytes())
				}
				if err != nil {
					sp.ErrorCode = errorCode(err)
					if sp.ErrorCode == kerr.KafkaStorageError.Code {
						s.logger.Error("append failed", "topic", p.Topic, "partition", p.Index, "err", err)
					}
					var re *topics.RecordsError
					if errors.As(err, &re) {
						recordErrors(&sp, p, re)
					}
					break
				}
				sp.BaseOffset, sp.LogStartOffset = res.BaseOffset, res.LogStart
				if req.Acks == -1 {
					syncs = append(syncs, toSync{p: p, end: res.End, ti: len(resp.Topics), pi: len(st.Partitions)})
				}
			}
			if sp.ErrorCode != 0 {
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for _, b := range hints.brokers {
		resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}

	if req.Acks == 0 {
		// No response; an error can only be told by closing the
		// connection, as Kafka does.
		hdr.closeAfter = failed
		return nil
	}
	if len(syncs) == 0 {
		return done(resp)
	}
	return func() kmsg.Response {
		var wg sync.WaitGroup
		for i := range syncs {
			wg.Add(1)
			go func(x *toSync) {
				defer wg.Done()
				if err := x.p.Sync(x.end); err != nil {
					s.logger.Error("fsync failed", "topic", x.p.Topic, "partition", x.p.Index, "err", err)
					out := &resp.Topics[x.ti].Partitions[x.pi]
					out.ErrorCode, out.BaseOffset = errorCode(err), -1
				}
			}(&syncs[i])
		}
		wg.Wait()
		return resp
	}
}

// recordErrors answers a batch refused for some of its records as Kafka's
// ReplicaManager answers a RecordValidationException: INVALID_RECORD (set
// by the caller), each refused record by its index in the batch with its
// message, the summary as the ErrorMessage (both v8+, KIP-467; older
// versions carry the code alone), and the log start offset. librdkafka
// and the Java producer fail the indexed records with INVALID_RECORD and
// the batch's others with a client-side error of their own
// (_INVALID_DIFFERENT_RECORD, a KafkaException); neither retries them.
func recordErrors(sp *kmsg.ProduceResponseTopicPartition, p *topics.Partition, re *topics.RecordsError) {
	for _, r := range re.Records {
		er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		er.RelativeOffset, er.ErrorMessage = r.Index, kmsg.StringPtr(r.Message)
		sp.ErrorRecords = append(sp.ErrorRecords, er)
	}
	sp.ErrorMessage = kmsg.StringPtr(re.Error())
	sp.LogStartOffset, _ = p.Offsets()
}

// isZstd reports whether a v2 batch's attributes name zstd (codec 4).
func isZstd(batch []byte) bool {
	const attributesAt, magicAt = 21, 16
	return len(batch) > attributesAt+1 && batch[magicAt] == 2 && batch[attributesAt+1]&0x07 == 4
}
