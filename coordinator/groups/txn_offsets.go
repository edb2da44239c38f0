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
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
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
			names[i], resolved[i] = req.Topics.Name(t.TopicID)
		}
		for _, p := range t.Partitions {
			if _, ok := req.Topics.Partition(names[i], p.Partition); resolved[i] && ok {
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
			id, pc, meta := offsets.CheckCommit(req.Topics, resolved[i], names[i], p.Partition, p.Metadata, code, s.cfg.OffsetMetadataMaxBytes)
			if pc == 0 {
				epoch := p.LeaderEpoch
				if r.Version < 2 {
					epoch = -1
				}
				o := record.Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: meta, CommitTimestamp: now.UnixMilli(), TopicID: id}
				s.offs.AddPending(k.off(), r.ProducerID, offsets.TP{Topic: names[i], Partition: p.Partition}, o)
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
		for _, g := range s.offs.PendingGroups(c.ProducerID) {
			s.txnEnd(now, TxnEndCmd{Tenant: g.Tenant, Group: g.Name, ProducerID: c.ProducerID, Commit: c.Commit})
		}
		return
	}
	k := gkey{c.Tenant, c.Group}
	if c.Commit && s.offs.HasPendingOf(k.off(), c.ProducerID) && s.lookup(k.tenant, k.name) == nil {
		// The group went away while the transaction held offsets for
		// it (a simple group has no other record): as OffsetCommit, a
		// commit makes it again.
		s.emitClassic(s.newClassic(k, now))
	}
	s.offs.EndTxn(k.off(), c.ProducerID, c.Commit, now.UnixMilli())
}

// offsetFetchStable is OffsetFetch with RequireStable (v7+): a partition
// with a pending transactional offset is answered UNSTABLE_OFFSET_COMMIT
// (offset -1), so that the consumer retries until the transaction ends.
func (s *Shard) offsetFetchStable(now time.Time, req machine.Request, r *kmsg.OffsetFetchRequest) {
	s.offsetFetch(now, req, r)
	if !r.RequireStable || r.Version < 7 || !s.offs.AnyPending() {
		return
	}
	resp := s.out.Replies[len(s.out.Replies)-1].Resp.(*kmsg.OffsetFetchResponse)
	mark := func(k gkey, topic string, p *int32, code *int16, offset *int64) {
		if *code == 0 && s.offs.Unstable(k.off(), topic, *p) {
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
				name, _ = req.Topics.Name(t.TopicID)
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
		if !s.offs.HasPending(gkey{req.Tenant, g}.off()) {
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
		if s.offs.HasPending(gkey{req.Tenant, g}.off()) {
			resp.Groups = append(resp.Groups, deleteResult(r.Version, g, kerr.NonEmptyGroup.Code))
			continue
		}
		resp.Groups = append(resp.Groups, done.Groups[i])
		i++
	}
	reply.Resp = resp
}
