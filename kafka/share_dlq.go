package kafka

// Share groups' dead-letter topics (KIP-1191, as Kafka trunk's
// ShareGroupDLQStateManager): a record a member rejects, or that reaches
// the delivery limit, while its group names a dead-letter topic
// (errors.deadletterqueue.topic.name) goes ARCHIVING in the share state;
// the share coordinator names its partition (sharecoord.Host.DeadLetters)
// and this writer, on the node serving the partition's share-state
// shard, writes one dead letter per record to the topic, then archives
// the records (DeadLettered). A crash between the two writes them again
// after the load: at least once, as Kafka's. A topic the rules refuse,
// or a write that fails five times, archives the records with nothing
// written and an error logged, as Kafka's "proceeding to ARCHIVED
// regardless".
//
// A dead letter, as Kafka's: no key and no value unless the group sets
// errors.deadletterqueue.copy.record.enable (then the record's own, its
// headers not copied), the time it is written (CreateTime), and the
// headers __dlq.errors.topic, .partition, .offset, .group,
// .delivery.count and .message ("Offset rejected by client." or
// "Offset delivery count exceeded the threshold."), all strings. It goes
// to the dead-letter topic's partition (source partition mod its
// partition count), on its leader: here, or through the node's peer
// client (Produce v13 by topic id, acks=all). A record read from another
// node's partition is fetched the same way. The peer connects as the
// default organisation's principal, and names another organisation in
// the topic's entry (tagTenant), which the leader believes as it does a
// transaction's verification (peerTenant: with --authorizer on, the
// nodes' principals allowed CLUSTER_ACTION); without an authorizer an
// organisation other than the default one gets its dead letters only
// where the dead-letter partition is on the node serving the share state
// (and its copies only where the source partition is too), and the
// others are archived with an error logged.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/topics"
	"github.com/cohort-dev/cohort/topics/recbatch"
)

// The dead letters' headers and reasons (Kafka's
// ProduceRequestHandler.HEADER_DLQ_ERRORS_* and ShareGroupDLQManager's).
const (
	dlqHeaderTopic     = "__dlq.errors.topic"
	dlqHeaderPartition = "__dlq.errors.partition"
	dlqHeaderOffset    = "__dlq.errors.offset"
	dlqHeaderGroup     = "__dlq.errors.group"
	dlqHeaderCount     = "__dlq.errors.delivery.count"
	dlqHeaderMessage   = "__dlq.errors.message"

	dlqRejected = "Offset rejected by client."
	dlqExceeded = "Offset delivery count exceeded the threshold."
)

// Kafka's retries of a dead-letter write: five attempts, backoff from 1 s
// doubling to 30 s at most.
const (
	dlqAttempts   = 5
	dlqBackoff    = time.Second
	dlqBackoffMax = 30 * time.Second
)

// dlqBatchRecords is the most dead letters one batch holds; a run of
// more is written in several.
const dlqBatchRecords = 500

// dlqWriter is the writer of this node's dead letters.
type dlqWriter struct {
	s *Server
	// retry are partitions whose write failed and waits for its
	// backoff, by the attempts made.
	mu    sync.Mutex
	tries map[sharestate.Key]int
	again chan sharestate.Key
}

// startDLQ starts the writer, which stops with the server.
func (s *Server) startDLQ() {
	if s.share == nil {
		return
	}
	w := &dlqWriter{s: s, tries: map[sharestate.Key]int{}, again: make(chan sharestate.Key, 64)}
	s.wg.Go(w.run)
}

func (w *dlqWriter) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-w.s.closing
		cancel()
	}()
	for {
		var keys []sharestate.Key
		select {
		case <-w.s.closing:
			return
		case <-w.s.share.DeadLetters():
			keys = w.s.share.TakeDeadLetters()
		case k := <-w.again:
			keys = []sharestate.Key{k}
		}
		for _, k := range keys {
			if ctx.Err() != nil {
				return
			}
			w.partition(ctx, k)
		}
	}
}

// errRetry is a write to try again after a backoff.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

// partition writes the dead letters of share partition k and archives
// them; a write that can be retried is, after a backoff, up to
// dlqAttempts times.
func (w *dlqWriter) partition(ctx context.Context, k sharestate.Key) {
	s := w.s
	ds := s.share.Describe(ctx, sharestate.DescribeCmd{Tenant: k.Tenant, Group: k.Group, Partitions: []sharestate.Key{k}})
	if len(ds) != 1 || ds[0].Code != 0 {
		// Deleted, or its shard is another node's now: that node's load
		// names it again.
		return
	}
	var runs []sharestate.Run
	for _, r := range ds[0].Runs {
		if r.State == record.ShareArchiving {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	err := w.write(ctx, k, runs)
	var retry errRetry
	if errors.As(err, &retry) && ctx.Err() == nil {
		w.mu.Lock()
		w.tries[k]++
		n := w.tries[k]
		w.mu.Unlock()
		if n < dlqAttempts {
			backoff := min(dlqBackoff<<(n-1), dlqBackoffMax)
			s.logger.Warn("writing dead letters, retrying", "group", k.Group, "partition", k.Partition, "attempt", n, "in", backoff, "err", err)
			time.AfterFunc(backoff, func() {
				select {
				case w.again <- k:
				case <-s.closing:
				}
			})
			return
		}
	}
	w.mu.Lock()
	delete(w.tries, k)
	w.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down: the next load writes them
		}
		s.logger.Error("failed to write to the dead-letter topic, archiving the records regardless", "tenant", k.Tenant, "group", k.Group,
			"partition", k.Partition, "records", countRuns(runs), "err", err)
	}
	for _, r := range runs {
		if res := s.share.DeadLettered(ctx, sharestate.DeadLetteredCmd{Key: k, First: r.First, Last: r.Last}); res.Code != 0 && ctx.Err() == nil {
			s.logger.Warn("archiving dead letters", "group", k.Group, "partition", k.Partition, "err", kerr.ErrorForCode(res.Code))
		}
	}
}

func countRuns(runs []sharestate.Run) int64 {
	var n int64
	for _, r := range runs {
		n += r.Last - r.First + 1
	}
	return n
}

// dlqConfigError is a dead-letter topic the rules refuse: nothing is
// written.
type dlqConfigError string

func (e dlqConfigError) Error() string { return string(e) }

// dlqTopic checks group's dead-letter topic against Kafka's rules, in
// its order, creating it if it is missing and the cluster allows that,
// and returns it.
func (s *Server) dlqTopic(tenant, group, name string) (*topics.Topic, error) {
	switch {
	case name == "":
		return nil, dlqConfigError(fmt.Sprintf("Configured DLQ topic name in share group: %s is empty.", group))
	case strings.HasPrefix(name, "__"):
		return nil, dlqConfigError(fmt.Sprintf("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, name))
	}
	sc := scope{tenant: tenant, s: s}
	t := sc.topic(name)
	if t != nil {
		if v, _ := t.Config("errors.deadletterqueue.group.enable"); !strings.EqualFold(v, "true") {
			return nil, dlqConfigError(fmt.Sprintf("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s.", group, name))
		}
	} else if !strings.EqualFold(s.brokerValue("errors.deadletterqueue.auto.create.topics.enable").value, "true") {
		return nil, dlqConfigError(fmt.Sprintf("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, name))
	}
	if prefix := s.brokerValue("errors.deadletterqueue.topic.name.prefix").value; prefix != "" && !strings.HasPrefix(name, prefix) {
		return nil, dlqConfigError(fmt.Sprintf("Configured DLQ topic name does not comply with the DLQ topic prefix %s for share group: %s, topic: %s.", prefix, group, name))
	}
	if t != nil {
		return t, nil
	}
	if !topics.ValidTopicName(name) {
		return nil, dlqConfigError(fmt.Sprintf("Configured DLQ topic name %q for share group %s is not a valid topic name.", name, group))
	}
	t, err := s.topics.Create(sc.in(name), s.cfg.DefaultPartitions, map[string]string{
		"errors.deadletterqueue.group.enable": "true",
		"message.timestamp.type":              "CreateTime",
	}, false)
	if errors.Is(err, topics.ErrTopicExists) {
		t, err = sc.topic(name), nil
	}
	if err != nil || t == nil {
		return nil, errRetry{fmt.Errorf("creating dead-letter topic %s: %v", name, err)}
	}
	s.logger.Info("created dead-letter topic", "tenant", tenant, "group", group, "topic", name, "partitions", len(t.Partitions))
	return t, nil
}

// write writes the dead letters of k's ARCHIVING runs.
func (w *dlqWriter) write(ctx context.Context, k sharestate.Key, runs []sharestate.Run) error {
	s := w.s
	cfg := s.shareGroupConfig(k.Tenant, k.Group)
	dlq, err := s.dlqTopic(k.Tenant, k.Group, cfg.dlqTopic)
	if err != nil {
		return err
	}
	src := s.topics.TopicByID(k.TopicID)
	srcName := uuidString(k.TopicID)
	if src != nil {
		if _, name := topics.Owner(src.Name); name != "" {
			srcName = name
		}
	}
	limit := cfg.limits.DeliveryLimit
	if limit <= 0 {
		limit = s.shareLimits().DeliveryLimit
	}
	dp := k.Partition % int32(len(dlq.Partitions))
	for _, r := range runs {
		for first := r.First; first <= r.Last; first += dlqBatchRecords {
			last := min(r.Last, first+dlqBatchRecords-1)
			var payload map[int64]kgo.Record
			if cfg.dlqCopy && src != nil {
				// A record that cannot be read goes with no key and
				// value, as Kafka's.
				payload, _ = s.readRecords(ctx, src, k.Partition, first, last)
			}
			reason := dlqRejected
			if r.DeliveryCount >= limit {
				reason = dlqExceeded
			}
			now := time.Now().UnixMilli()
			letters := make([]recbatch.Record, 0, last-first+1)
			for o := first; o <= last; o++ {
				l := recbatch.Record{Offset: o - first, Timestamp: now, Headers: []recbatch.Header{
					{Key: dlqHeaderTopic, Value: []byte(srcName)},
					{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(k.Partition)))},
					{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(o, 10))},
					{Key: dlqHeaderGroup, Value: []byte(k.Group)},
					{Key: dlqHeaderCount, Value: []byte(strconv.Itoa(int(r.DeliveryCount)))},
					{Key: dlqHeaderMessage, Value: []byte(reason)},
				}}
				if rec, ok := payload[o]; ok {
					l.Key, l.Value = rec.Key, rec.Value
				}
				letters = append(letters, l)
			}
			if err := s.appendDurable(ctx, dlq, dp, recbatch.Append(nil, letters)); err != nil {
				return err
			}
		}
	}
	return nil
}

// uuidString is a topic id as Kafka's Uuid.toString: URL-safe base64
// without padding.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// appendDurable appends batch to partition p of t and returns once it is
// durable (acks=all): here if this node leads it, else on its leader
// through the peer client.
func (s *Server) appendDurable(ctx context.Context, t *topics.Topic, p int32, batch []byte) error {
	if part, code := s.partitionOf(t, p, true); code == 0 {
		if err := t.CheckRecords(p, batch); err != nil {
			return err
		}
		res, err := part.Append(batch, t.MaxBatchBytes())
		if err != nil {
			return err
		}
		return part.Sync(res.End)
	} else if code != kerr.NotLeaderForPartition.Code {
		return errRetry{kerr.ErrorForCode(code)}
	}
	if s.cfg.Peer == nil {
		return errRetry{fmt.Errorf("partition %d of %s is node %d's, and this node reaches no other", p, t.Name, t.Leaders[p])}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 13
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = t.ID
	tenant, _ := topics.Owner(t.Name)
	tagTenant(&rt.UnknownTags, tenant)
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := s.cfg.Peer(ctx, t.Leaders[p], req)
	if err != nil {
		return errRetry{err}
	}
	resp := kresp.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errRetry{errors.New("produce answered no partition")}
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		switch err := kerr.ErrorForCode(code); {
		case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.RequestTimedOut), kerr.IsRetriable(err):
			return errRetry{err}
		default:
			return err
		}
	}
	return nil
}

// readRecords returns the records of partition p of t from first to
// last (those it still has), read here or from its leader.
func (s *Server) readRecords(ctx context.Context, t *topics.Topic, p int32, first, last int64) (map[int64]kgo.Record, error) {
	out := map[int64]kgo.Record{}
	for o := first; o <= last; {
		var raw []byte
		if part, code := s.partitionOf(t, p, true); code == 0 {
			res, err := part.ReadOffsets(o, 1<<20, last-o+1, true)
			if err != nil {
				return out, err
			}
			raw = res.Batches
		} else if s.cfg.Peer != nil && code == kerr.NotLeaderForPartition.Code {
			req := kmsg.NewPtrFetchRequest()
			req.Version = 13
			req.ReplicaID = -1
			req.MaxBytes, req.MinBytes = 1<<20, 1
			ft := kmsg.NewFetchRequestTopic()
			ft.TopicID = t.ID
			tenant, _ := topics.Owner(t.Name)
			tagTenant(&ft.UnknownTags, tenant)
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, o, 1<<20
			fp.CurrentLeaderEpoch, fp.LogStartOffset = -1, -1
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
			kresp, err := s.cfg.Peer(ctx, t.Leaders[p], req)
			if err != nil {
				return out, err
			}
			resp := kresp.(*kmsg.FetchResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				return out, errors.New("fetch of the records failed")
			}
			raw = resp.Topics[0].Partitions[0].RecordBatches
		} else {
			return out, kerr.ErrorForCode(code)
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.RecordBatches = p, raw
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: o, Partition: p}, &rp, kgo.DefaultDecompressor(), nil)
		next := o
		for _, r := range fp.Records {
			if r.Offset >= o && r.Offset <= last {
				out[r.Offset] = *r
			}
			next = max(next, r.Offset+1)
		}
		if next == o {
			break // nothing more to read
		}
		o = next
	}
	return out, nil
}
