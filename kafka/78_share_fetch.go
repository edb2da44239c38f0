package kafka

// ShareFetch, key 78 (KIP-932).
//
// Version notes:
//   - v0 was Kafka 4.0's early access, dropped by 4.1; not served.
//   - v1 (KIP-1206): MaxRecords and BatchSize; AcquisitionLockTimeoutMs.
//   - v2 (KIP-1206, KIP-1222): ShareAcquireMode (0 batch-optimized, 1
//     record-limit) and IsRenewAck (acknowledgements of type RENEW that
//     extend locks, with every fetch parameter zero and nothing fetched).
//
// As Kafka 4.2's KafkaApis.handleShareFetchRequest and
// SharePartitionManager: READ on the group (else GROUP_AUTHORIZATION_FAILED
// for the whole request) and on each topic (else TOPIC_AUTHORIZATION_FAILED
// for its partitions); the share session (share_session.go) settles which
// partitions are fetched; the acknowledgements carried are applied first,
// each partition's answer in AcknowledgeErrorCode; then each partition's
// share state (sharecoord) says where to read, the log is read from there,
// and the records acquired for the member come back with their delivery
// counts. A request with epoch -1 closes the session: its
// acknowledgements are applied, the member's records in the session's
// partitions are released, and nothing is fetched.
//
// Long polling as Kafka's DelayedShareFetch: the request waits until the
// records it could acquire reach MinBytes, MaxWaitMs pass, or the server
// shuts down, woken by appends to the partitions' logs and by changes of
// their share state (records released, locks expiring, room under the
// in-flight limit): sharecoord.Host.Watch. Records are acquired only when
// the request answers, so a waiting fetch holds no lock.

import (
	"context"
	"encoding/binary"
	"reflect"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ShareFetch, 1, 2, handleShareFetch) }

// maxShareMemberID is the longest member id a share request may carry: a
// UUID's string form (Kafka's members are UUIDs).
const maxShareMemberID = 36

// shareRPCTimeout bounds how long one share request waits on the share
// coordinator, beyond its long poll.
const shareRPCTimeout = 30 * time.Second

func handleShareFetch(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
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
	acks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			acks = acks || len(p.AcknowledgementBatches) > 0
		}
	}
	renew := hdr.version >= 2 && req.IsRenewAck
	if renew {
		// KIP-1222: a renewal fetches nothing.
		if req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0 {
			return fail(kerr.InvalidRequest.Code, "A renewal's fetch parameters must be zero.")
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if len(p.AcknowledgementBatches) == 0 {
					return fail(kerr.InvalidRequest.Code, "A renewal may only acknowledge.")
				}
			}
		}
	}
	if hdr.version >= 2 && req.ShareAcquireMode != 0 && req.ShareAcquireMode != 1 {
		return fail(kerr.InvalidRequest.Code, "Unknown share acquire mode.")
	}
	tenant := hdr.tenant()
	if req.ShareSessionEpoch == shareInitialEpoch && !acks {
		// A session opens for a member of a share group only, so
		// that share state is made for share groups' partitions
		// alone, where this node coordinates the group. (Kafka does
		// not ask; its share coordinator refuses partitions the group
		// coordinator did not initialise.)
		// In cluster mode the group's coordinator may be another
		// node: then nothing is asked, as in Kafka.
		m, code, err := s.groups.ShareMember(ctx, tenant, group, member)
		switch {
		case err != nil:
			return fail(kerr.RequestTimedOut.Code, "")
		case code == kerr.NotCoordinator.Code:
		case code != 0:
			return fail(code, "")
		case m.Code != 0:
			return fail(m.Code, "")
		}
	}
	key := shareSessionKey{tenant: tenant, group: group, member: member}
	var named, forgotten []sharePartitionID
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			named = append(named, sharePartitionID{t.TopicID, p.Partition})
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, sharePartitionID{t.TopicID, p})
		}
	}
	sess, code := s.shareSess.fetch(hdr.owner(), key, req.ShareSessionEpoch, named, forgotten, acks)
	if code != 0 {
		return fail(code, "")
	}
	cfg := s.shareGroupConfig(tenant, group)
	resp.AcquisitionLockTimeoutMillis = int32(s.share.LockDuration(cfg.limits).Milliseconds())
	sf := &shareFetch{
		s: s, hdr: hdr, req: req, resp: resp, key: key, cfg: cfg, sc: s.scope(hdr),
		hints: leaders{s: s, listener: hdr.listenerName()},
		parts: map[sharePartitionID]*kmsg.ShareFetchResponseTopicPartition{},
	}
	deadline := now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareRPCTimeout+time.Duration(req.MaxWaitMillis)*time.Millisecond)
		defer cancel()
		sf.acknowledge(ctx, renew)
		switch {
		case sess.final:
			// The session is gone: what the member still holds of its
			// partitions goes back.
			s.releaseShare(ctx, key, sess.parts)
		case !renew:
			sf.fetch(ctx, sess.parts, deadline, req.ShareSessionEpoch == shareInitialEpoch)
		}
		return sf.finish()
	}
}

// shareRequestCheck is what ShareFetch and ShareAcknowledge check first,
// as Kafka: share groups on (UNSUPPORTED_VERSION), READ on the group
// (GROUP_AUTHORIZATION_FAILED), a member id (INVALID_REQUEST).
func (s *Server) shareRequestCheck(hdr *reqHeader, group, member string) (int16, string) {
	switch {
	case s.share == nil:
		return kerr.UnsupportedVersion.Code, "Share groups are off on this node."
	case !s.authorize(hdr, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, group):
		return kerr.GroupAuthorizationFailed.Code, ""
	case member == "" || len(member) > maxShareMemberID:
		return kerr.InvalidRequest.Code, "The member id is empty or too long."
	}
	return 0, ""
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// shareFetch is one ShareFetch being answered.
type shareFetch struct {
	s     *Server
	hdr   *reqHeader
	req   *kmsg.ShareFetchRequest
	resp  *kmsg.ShareFetchResponse
	key   shareSessionKey
	cfg   shareGroupConfig
	sc    scope
	hints leaders
	// parts are the response's partitions, by id.
	parts map[sharePartitionID]*kmsg.ShareFetchResponseTopicPartition
	order []sharePartitionID
}

// part returns the response entry of id, adding it.
func (f *shareFetch) part(id sharePartitionID) *kmsg.ShareFetchResponseTopicPartition {
	if p, ok := f.parts[id]; ok {
		return p
	}
	p := new(kmsg.ShareFetchResponseTopicPartition)
	*p = kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = id.partition
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
	f.parts[id] = p
	f.order = append(f.order, id)
	return p
}

// finish builds the response from the partitions answered, topics in
// the order first answered.
func (f *shareFetch) finish() kmsg.Response {
	idx := map[[16]byte]int{}
	for _, id := range f.order {
		i, ok := idx[id.topic]
		if !ok {
			i = len(f.resp.Topics)
			idx[id.topic] = i
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = id.topic
			f.resp.Topics = append(f.resp.Topics, t)
		}
		p := f.parts[id]
		if p.Records == nil {
			p.Records = []byte{}
		}
		f.resp.Topics[i].Partitions = append(f.resp.Topics[i].Partitions, *p)
	}
	for _, b := range f.hints.brokers {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port, ne.Rack = b.NodeID, b.Host, b.Port, b.Rack
		f.resp.NodeEndpoints = append(f.resp.NodeEndpoints, ne)
	}
	return f.resp
}

// acknowledge applies the acknowledgements the request carries.
func (f *shareFetch) acknowledge(ctx context.Context, renew bool) {
	var batches []shareAckPartition
	for _, t := range f.req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			ap := shareAckPartition{id: sharePartitionID{t.TopicID, p.Partition}}
			for _, b := range p.AcknowledgementBatches {
				ap.acks = append(ap.acks, shareAck{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
			}
			batches = append(batches, ap)
		}
	}
	codes := f.s.applyShareAcks(ctx, f.hdr, f.sc, f.key, batches, renew, &f.hints)
	for i, ap := range batches {
		p := f.part(ap.id)
		p.AcknowledgeErrorCode = codes[i].code
		if codes[i].leader != nil {
			p.CurrentLeader = kmsg.ShareFetchResponseTopicPartitionCurrentLeader{LeaderID: codes[i].leader.id, LeaderEpoch: codes[i].leader.epoch}
		}
	}
}

// shareTarget is a partition a fetch reads.
type shareTarget struct {
	id  sharePartitionID
	key sharestate.Key
	p   *topics.Partition
	// What the last look found: where the share state said to read,
	// and the log batches read from there.
	from    int64
	raw     []byte
	batches []batchSpan
	aborted []sharestate.Range
}

// fetch acquires records of the session's partitions for the member,
// waiting until deadline for MinBytes of them. full: the session is new,
// and every partition is in the response; otherwise only those with
// records or an error are (Kafka's incremental share sessions).
func (f *shareFetch) fetch(ctx context.Context, parts []sharePartitionID, deadline time.Time, full bool) {
	targets := f.targets(parts)
	if full {
		for _, id := range parts {
			f.part(id)
		}
	}
	if len(targets) == 0 {
		return
	}
	// Fairness: each request starts at another partition, so that a
	// busy one does not take MaxRecords every time (Kafka rotates its
	// partitions likewise).
	if n := len(targets); n > 1 {
		start := int(f.s.shareRotation.Add(1) % uint64(n))
		targets = append(targets[start:], targets[:start]...)
	}
	keys := make([]sharestate.Key, len(targets))
	remote := false
	for i, t := range targets {
		keys[i] = t.key
		remote = remote || f.s.share.Remote(t.key)
	}
	maxRecords := int(f.req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	// No partition takes more than its in-flight limit at once, and no
	// limit is above Kafka's most (the share coordinator caps them too).
	maxRecords = min(maxRecords, maxShareRecordLocks)
	for {
		w := f.s.share.Watch(keys...)
		appends := make([]<-chan struct{}, len(targets))
		for i, t := range targets {
			appends[i] = t.p.Wait()
		}
		size, failed := f.look(ctx, targets, maxRecords)
		late := !now().Before(deadline)
		if failed || late || size >= int(max(f.req.MinBytes, 1)) {
			if f.acquire(ctx, targets, maxRecords) > 0 || failed || late {
				w.Stop()
				return
			}
		}
		if !f.wait(w, appends, deadline, remote) {
			w.Stop()
			return
		}
		w.Stop()
	}
}

// remoteLook is how often a long-polling fetch looks again at partitions
// whose share state another node keeps, for records released or whose
// locks expired there.
const remoteLook = 250 * time.Millisecond

// maxShareFetchBytes caps what one ShareFetch reads of the logs, whatever
// its MaxBytes: Kafka's fetch.max.bytes default (55 MiB), which its
// brokers apply to every fetch. (A first batch larger than that is still
// read alone, as KIP-74 asks.)
const maxShareFetchBytes = 57671680

// maxShareRecordLocks is the most records a ShareFetch acquires: Kafka's
// highest group.share.partition.max.record.locks.
const maxShareRecordLocks = 10000

// defaultShareMaxRecords is the records a request that sets no
// MaxRecords may acquire: Kafka's share consumer's max.poll.records.
const defaultShareMaxRecords = 500

// wait waits for a partition's log to grow or its share state to change,
// the deadline or shutdown; false when the fetch should answer now. A
// partition whose share state is another node's cannot be watched
// (remote): the fetch looks again every remoteLook.
func (f *shareFetch) wait(w interface{ C() <-chan struct{} }, appends []<-chan struct{}, deadline time.Time, remote bool) bool {
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	timer := time.NewTimer(left)
	defer timer.Stop()
	cases := make([]reflect.SelectCase, 0, len(appends)+4)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(f.s.closing)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.C())})
	for _, c := range appends {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	if remote && left > remoteLook {
		look := time.NewTimer(remoteLook)
		defer look.Stop()
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(look.C)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2 // not the deadline or shutdown
}

// targets checks the session's partitions: those the principal may read
// and this node leads are returned; the others get their error.
func (f *shareFetch) targets(parts []sharePartitionID) []*shareTarget {
	var out []*shareTarget
	for _, id := range parts {
		t := f.sc.topicByID(id.topic)
		switch {
		case t != nil && !f.s.topicAllowed(f.hdr, kmsg.ACLOperationRead, "", id.topic, true):
			f.part(id).ErrorCode = kerr.TopicAuthorizationFailed.Code
			continue
		case t != nil && f.sc.isOffsets("", id.topic, true):
			// __consumer_offsets is the coordinator's view, not a log
			// a share group reads (Kafka's share groups skip internal
			// topics).
			f.part(id).ErrorCode = kerr.InvalidTopicException.Code
			continue
		}
		p, code := f.s.partitionOf(t, id.partition, true)
		if code != 0 {
			sp := f.part(id)
			sp.ErrorCode = code
			if code == kerr.NotLeaderForPartition.Code {
				if b, ok := f.hints.of(t, id.partition); ok {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = b.NodeID, t.LeaderEpoch(id.partition)
				}
			}
			continue
		}
		out = append(out, &shareTarget{id: id, p: p, key: sharestate.Key{Tenant: f.key.tenant, Group: f.key.group, TopicID: id.topic, Partition: id.partition}})
	}
	return out
}

// look asks each target's share state where to read (all at once: each
// may be another shard's, or another node's) and reads its log from
// there, at most maxRecords offsets' batches; it returns the bytes read
// and whether a partition failed (which answers at once, as Kafka's).
func (f *shareFetch) look(ctx context.Context, targets []*shareTarget, maxRecords int) (int, bool) {
	budget := int(f.req.MaxBytes)
	if budget <= 0 || budget > maxShareFetchBytes {
		budget = maxShareFetchBytes
	}
	per := max(budget/len(targets), 1)
	nexts := make([]sharestate.Next, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		t.raw, t.batches, t.aborted, t.from = nil, nil, nil, -1
		logStart, hw := t.p.Offsets()
		cmd := sharestate.NextCmd{Key: t.key, Log: sharestate.Log{Start: logStart, Latest: hw, AtTime: -1}, Reset: f.cfg.reset, Limits: f.cfg.limits}
		if f.cfg.reset == sharestate.ResetByDuration {
			if off, _, ok, err := t.p.OffsetForTimestamp(now().Add(-f.cfg.resetAge).UnixMilli()); err == nil && ok {
				cmd.Log.AtTime = off
			}
		}
		if len(targets) == 1 {
			nexts[i] = f.s.share.Next(ctx, cmd)
			continue
		}
		wg.Go(func() { nexts[i] = f.s.share.Next(ctx, cmd) })
	}
	wg.Wait()
	size, failed := 0, false
	for i, t := range targets {
		next := nexts[i]
		if next.Code != 0 {
			f.part(t.id).ErrorCode = next.Code
			failed = true
			continue
		}
		if next.Full || budget <= 0 {
			continue
		}
		var res topics.ReadResult
		var aborted []topics.AbortedTxn
		var err error
		limit := min(per, budget)
		if f.cfg.readCommitted {
			res, aborted, err = t.p.ReadCommittedOffsets(next.Offset, limit, int64(maxRecords), size == 0)
		} else {
			res, err = t.p.ReadOffsets(next.Offset, limit, int64(maxRecords), size == 0)
		}
		if err != nil {
			code := errorCode(err)
			if code == kerr.OffsetOutOfRange.Code {
				// The log start moved past the state's start
				// between the look and the read: the next look
				// moves it.
				continue
			}
			f.part(t.id).ErrorCode = code
			failed = true
			if code == kerr.KafkaStorageError.Code {
				f.s.logger.Error("read failed", "topic", t.p.Topic, "partition", t.p.Index, "err", err)
			}
			continue
		}
		t.from, t.raw = next.Offset, res.Batches
		t.batches = batchSpans(res.Batches)
		t.aborted = abortedSpans(t.batches, aborted)
		size += len(res.Batches)
		budget -= len(res.Batches)
	}
	return size, failed
}

// acquire acquires records of what the last look read, at most
// maxRecords over every partition, and puts them in the response; it
// returns the records acquired.
func (f *shareFetch) acquire(ctx context.Context, targets []*shareTarget, maxRecords int) int {
	total := 0
	for _, t := range targets {
		if len(t.batches) == 0 || total >= maxRecords {
			continue
		}
		ranges := make([]sharestate.Range, len(t.batches))
		for i, b := range t.batches {
			ranges[i] = sharestate.Range{First: b.first, Last: b.last}
		}
		cmd := sharestate.AcquireCmd{
			Key: t.key, Member: f.key.member, FetchOffset: t.from, Batches: ranges, Aborted: t.aborted,
			MaxRecords: maxRecords - total, Limits: f.cfg.limits,
		}
		if f.hdr.version >= 2 {
			cmd.Mode = sharestate.Mode(f.req.ShareAcquireMode)
		}
		if cmd.Mode == sharestate.BatchOptimized && f.req.BatchSize > 0 {
			cmd.BatchSize = int(f.req.BatchSize)
		}
		got := f.s.share.Acquire(ctx, cmd)
		if got.Code != 0 {
			f.part(t.id).ErrorCode = got.Code
			continue
		}
		if len(got.Records) == 0 {
			continue
		}
		sp := f.part(t.id)
		first, last := got.Records[0].First, got.Records[len(got.Records)-1].Last
		for _, r := range got.Records {
			sp.AcquiredRecords = append(sp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: r.First, LastOffset: r.Last, DeliveryCount: r.DeliveryCount})
			total += int(r.Last - r.First + 1)
		}
		// The log batches holding what was acquired.
		lo, hi := -1, -1
		for _, b := range t.batches {
			if b.last >= first && b.first <= last {
				if lo < 0 {
					lo = b.start
				}
				hi = b.end
			}
		}
		if lo >= 0 {
			sp.Records = t.raw[lo:hi]
		}
	}
	return total
}

// releaseShare gives back what the member holds of the session's
// partitions (its session closed, or its connection did).
func (s *Server) releaseShare(ctx context.Context, key shareSessionKey, parts []sharePartitionID) {
	if s.share == nil || len(parts) == 0 {
		return
	}
	keys := make([]sharestate.Key, len(parts))
	for i, p := range parts {
		keys[i] = sharestate.Key{Tenant: key.tenant, Group: key.group, TopicID: p.topic, Partition: p.partition}
	}
	if r := s.share.Release(ctx, sharestate.ReleaseCmd{Tenant: key.tenant, Group: key.group, Member: key.member, Partitions: keys}); r.Code != 0 {
		// Not fatal: the locks expire by themselves.
		s.logger.Debug("share release failed", "group", key.group, "member", key.member, "code", r.Code)
	}
}

// shareSessionGone is told of a session that went with its connection:
// the member's records in its partitions go back, as Kafka's
// ClientConnectionDisconnectListener releases them.
func (s *Server) shareSessionGone(key shareSessionKey, parts []sharePartitionID) {
	s.shareReleases.Add(1)
	go func() {
		defer s.shareReleases.Done()
		ctx, cancel := context.WithTimeout(context.Background(), shareRPCTimeout)
		defer cancel()
		s.releaseShare(ctx, key, parts)
	}()
}

// batchSpan is one log batch of a read: its offsets and its bytes'
// place in the read.
type batchSpan struct {
	first, last int64
	start, end  int
	// pid is the producer id of a transactional data batch, -1
	// otherwise.
	pid int64
}

// batchSpans reads the headers of the whole batches in raw.
func batchSpans(raw []byte) []batchSpan {
	var out []batchSpan
	for pos := 0; pos+61 <= len(raw); {
		base := int64(binary.BigEndian.Uint64(raw[pos:]))
		n := int(int32(binary.BigEndian.Uint32(raw[pos+8:])))
		end := pos + 12 + n
		if n < 49 || end > len(raw) {
			break
		}
		attrs := int16(binary.BigEndian.Uint16(raw[pos+21:]))
		lastDelta := int64(int32(binary.BigEndian.Uint32(raw[pos+23:])))
		b := batchSpan{first: base, last: base + lastDelta, start: pos, end: end, pid: -1}
		if attrs&0x10 != 0 && attrs&0x20 == 0 {
			b.pid = int64(binary.BigEndian.Uint64(raw[pos+43:]))
		}
		out = append(out, b)
		pos = end
	}
	return out
}

// abortedSpans are the batches of aborted transactions among bs: a
// transactional data batch whose producer has an aborted transaction
// spanning it.
func abortedSpans(bs []batchSpan, aborted []topics.AbortedTxn) []sharestate.Range {
	if len(aborted) == 0 {
		return nil
	}
	var out []sharestate.Range
	for _, b := range bs {
		if b.pid < 0 {
			continue
		}
		for _, a := range aborted {
			if a.ProducerID == b.pid && a.FirstOffset <= b.first && b.first <= a.LastOffset {
				out = append(out, sharestate.Range{First: b.first, Last: b.last})
				break
			}
		}
	}
	return out
}
