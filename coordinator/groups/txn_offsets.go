package groups

// Transactional offsets (KIP-98, KIP-447): a TxnOffsetCommit stores its
// offsets as pending, per producer, in KindTxnOffset records; the
// transaction coordinator ends them with TxnEndCmd, which a commit turns
// into ordinary offsets and an abort deletes, as Kafka's
// OffsetMetadataManager does when a transaction marker reaches
// __consumer_offsets. While a partition has a pending offset, OffsetFetch
// with RequireStable answers UNSTABLE_OFFSET_COMMIT for it, and the group
// is neither deleted nor expired.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnEndCmd tells the shard that a producer's transaction ended: Commit
// makes its pending offsets of Group committed offsets, else they are
// dropped. It is answered, once durable, with Out TxnEnded{}.
type TxnEndCmd struct {
	Tenant, Group string
	ProducerID    int64
	Commit        bool
	// Early answers once the records are written rather than durable
	// (machine.Reply.Early): for the node's own transaction coordinator,
	// whose Prepare record went to the same store before this and whose
	// load ends the groups again if the store lost their end.
	Early bool
	// AllGroups ends the producer's pending offsets in every group of
	// the shard, whatever Tenant and Group say: what a marker written to
	// the shard's __consumer_offsets partition does in Kafka, which is
	// what a transaction coordinator on another node sends
	// (WriteTxnMarkers names partitions, not groups). Producer ids are
	// unique in the cluster, so no other producer's offsets are touched.
	AllGroups bool
}

// TxnEnded answers a TxnEndCmd.
type TxnEnded struct{}

type tpKey struct {
	topic     string
	partition int32
}

// pendingTxn is the pending offsets of the shard's groups, by group and
// producer: durable state, built by replayTxnOffset alone.
type pendingTxn map[gkey]map[int64]map[tpKey]record.Offset

func (s *Shard) replayTxnOffset(k record.TxnOffsetKey, v []byte) error {
	gk := gkey{k.Tenant, k.Group}
	tp := tpKey{k.Topic, k.Partition}
	if v == nil {
		if byPID := s.pending[gk]; byPID != nil {
			delete(byPID[k.ProducerID], tp)
			if len(byPID[k.ProducerID]) == 0 {
				delete(byPID, k.ProducerID)
			}
			if len(byPID) == 0 {
				delete(s.pending, gk)
			}
		}
		return nil
	}
	o, err := record.DecodeOffset(v)
	if err != nil {
		return fmt.Errorf("pending offset %s/%s/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	if s.pending == nil {
		s.pending = pendingTxn{}
	}
	byPID := s.pending[gk]
	if byPID == nil {
		byPID = map[int64]map[tpKey]record.Offset{}
		s.pending[gk] = byPID
	}
	if byPID[k.ProducerID] == nil {
		byPID[k.ProducerID] = map[tpKey]record.Offset{}
	}
	byPID[k.ProducerID][tp] = o
	return nil
}

func (s *Shard) txnOffsetKey(k gkey, pid int64, tp tpKey) []byte {
	return record.TxnOffsetKey{GroupKey: s.key(k), ProducerID: pid, Topic: tp.topic, Partition: tp.partition}.Key()
}

// hasPending reports whether a group has pending transactional offsets.
func (s *Shard) hasPending(k gkey) bool { return len(s.pending[k]) > 0 }

// unstable reports whether a partition of a group has a pending offset.
func (s *Shard) unstable(k gkey, topic string, p int32) bool {
	for _, offs := range s.pending[k] {
		if _, ok := offs[tpKey{topic, p}]; ok {
			return true
		}
	}
	return false
}

// pendingState renders the pending offsets for DurableState.
func (s *Shard) pendingState() string {
	var lines []string
	for k, byPID := range s.pending {
		for pid, offs := range byPID {
			for tp, o := range offs {
				lines = append(lines, fmt.Sprintf("pending %q/%q pid=%d %s/%d %+v", k.tenant, k.name, pid, tp.topic, tp.partition, o))
			}
		}
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// txnOffsetCommit is Kafka's commitTransactionalOffset: the group and
// member are checked as for OffsetCommit (KIP-447: a zombie of an older
// generation is fenced), except that a rebalance in progress does not
// refuse it; the offsets are stored as the producer's pending ones.
func (s *Shard) txnOffsetCommit(now time.Time, req machine.Request, r *kmsg.TxnOffsetCommitRequest) {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Version = r.Version
	k := gkey{req.Tenant, r.Group}
	generation, memberID, instance := r.Generation, r.MemberID, r.InstanceID
	if r.Version < 3 {
		generation, memberID, instance = -1, "", nil
	}
	// names[i] is the name of r.Topics[i] (v6 names topics by id);
	// resolved[i] is false for an unknown id.
	names := make([]string, len(r.Topics))
	resolved := make([]bool, len(r.Topics))
	known := 0
	for i, t := range r.Topics {
		names[i], resolved[i] = t.Topic, true
		if r.Version >= 6 {
			names[i], resolved[i] = topicName(req.Topics, t.TopicID)
		}
		for _, p := range t.Partitions {
			if resolved[i] && s.known(req.Topics, names[i], p.Partition) {
				known++
			}
		}
	}
	code := int16(0)
	if known > 0 {
		// The group check of OffsetCommit at v9: a consumer group's
		// member commits transactionally at any version (Kafka's
		// validateOffsetCommit checks the version of plain commits
		// only); before v6, GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH
		// are ILLEGAL_GENERATION (KIP-1319).
		code = s.validateCommit(now, k, &kmsg.OffsetCommitRequest{Version: 9, Group: r.Group, Generation: generation, MemberID: memberID, InstanceID: instance}, generation, memberID)
		switch {
		case code == kerr.RebalanceInProgress.Code:
			code = 0 // Kafka's validateOffsetCommit lets a transactional commit through
		case (code == kerr.StaleMemberEpoch.Code || code == kerr.GroupIDNotFound.Code) && r.Version < 6:
			code = kerr.IllegalGeneration.Code
		}
	}
	for i, t := range r.Topics {
		rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			id, pc, meta := s.commitPartition(req.Topics, resolved[i], names[i], p.Partition, p.Metadata, code)
			if pc == 0 {
				epoch := p.LeaderEpoch
				if r.Version < 2 {
					epoch = -1
				}
				o := record.Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: meta, CommitTimestamp: now.UnixMilli(), TopicID: id}
				s.emit(s.txnOffsetKey(k, r.ProducerID, tpKey{names[i], p.Partition}), o.Encode())
			}
			rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: pc})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.reply(req.ID, resp)
}

// txnEnd ends a producer's pending offsets of a group: committed (each
// becomes the group's offset, stamped with the commit time) or dropped.
func (s *Shard) txnEnd(now time.Time, c TxnEndCmd) {
	if c.AllGroups {
		var ks []gkey
		for k, byPID := range s.pending {
			if _, ok := byPID[c.ProducerID]; ok {
				ks = append(ks, k)
			}
		}
		slices.SortFunc(ks, func(a, b gkey) int {
			if c := strings.Compare(a.tenant, b.tenant); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		for _, k := range ks {
			s.txnEnd(now, TxnEndCmd{Tenant: k.tenant, Group: k.name, ProducerID: c.ProducerID, Commit: c.Commit})
		}
		return
	}
	k := gkey{c.Tenant, c.Group}
	offs := s.pending[k][c.ProducerID]
	tps := make([]tpKey, 0, len(offs))
	for tp := range offs {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b tpKey) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition) - int(b.partition)
	})
	if c.Commit && len(tps) > 0 && s.lookup(k.tenant, k.name) == nil {
		// The group went away while the transaction held offsets for
		// it (a simple group has no other record): as OffsetCommit, a
		// commit makes it again.
		s.emitClassic(s.newClassic(k, now))
	}
	for _, tp := range tps {
		o := offs[tp]
		if c.Commit {
			o.CommitTimestamp = now.UnixMilli()
			s.emitOffset(k, tp.topic, tp.partition, o)
		}
		s.emit(s.txnOffsetKey(k, c.ProducerID, tp), nil)
	}
}

// offsetFetchStable is OffsetFetch with RequireStable (v7+): a partition
// with a pending transactional offset is answered UNSTABLE_OFFSET_COMMIT
// (offset -1), so that the consumer retries until the transaction ends.
func (s *Shard) offsetFetchStable(now time.Time, req machine.Request, r *kmsg.OffsetFetchRequest) {
	s.offsetFetch(now, req, r)
	if !r.RequireStable || r.Version < 7 || len(s.pending) == 0 {
		return
	}
	resp := s.out.Replies[len(s.out.Replies)-1].Resp.(*kmsg.OffsetFetchResponse)
	mark := func(k gkey, topic string, p *int32, code *int16, offset *int64) {
		if *code == 0 && s.unstable(k, topic, *p) {
			*code, *offset = kerr.UnstableOffsetCommit.Code, -1
		}
	}
	if r.Version < 8 {
		k := gkey{req.Tenant, r.Group}
		for i := range resp.Topics {
			t := &resp.Topics[i]
			for j := range t.Partitions {
				p := &t.Partitions[j]
				mark(k, t.Topic, &p.Partition, &p.ErrorCode, &p.Offset)
			}
		}
		return
	}
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		k := gkey{req.Tenant, g.Group}
		for i := range g.Topics {
			t := &g.Topics[i]
			name := t.Topic
			if r.Version >= 10 {
				name, _ = topicName(req.Topics, t.TopicID)
			}
			for j := range t.Partitions {
				p := &t.Partitions[j]
				mark(k, name, &p.Partition, &p.ErrorCode, &p.Offset)
			}
		}
	}
}

// deleteGroupsPending is DeleteGroups that keeps groups with pending
// transactional offsets (NON_EMPTY_GROUP), as Kafka does: their offsets
// are still to be committed or dropped.
func (s *Shard) deleteGroupsPending(now time.Time, req machine.Request, r *kmsg.DeleteGroupsRequest) {
	var rest []string
	for _, g := range r.Groups {
		if !s.hasPending(gkey{req.Tenant, g}) {
			rest = append(rest, g)
		}
	}
	if len(rest) == len(r.Groups) {
		s.deleteGroups(now, req, r)
		return
	}
	part := *r
	part.Groups = rest
	s.deleteGroups(now, req, &part)
	reply := &s.out.Replies[len(s.out.Replies)-1]
	done := reply.Resp.(*kmsg.DeleteGroupsResponse)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Version = r.Version
	resp.ThrottleMillis = done.ThrottleMillis
	i := 0
	seen := map[string]bool{}
	for _, g := range r.Groups {
		if seen[g] {
			continue
		}
		seen[g] = true
		if s.hasPending(gkey{req.Tenant, g}) {
			resp.Groups = append(resp.Groups, deleteResult(r.Version, g, kerr.NonEmptyGroup.Code))
			continue
		}
		resp.Groups = append(resp.Groups, done.Groups[i])
		i++
	}
	reply.Resp = resp
}
