package groups

// Transactional offsets (KIP-98, KIP-447), the shard's side: a
// TxnOffsetCommit stores its offsets as pending, per producer
// (offsets.Book.ServeTxnCommit); the transaction coordinator ends them
// with TxnEndCmd, which a commit turns into ordinary offsets and an abort
// deletes, as Kafka's OffsetMetadataManager does when a transaction
// marker reaches __consumer_offsets. While a partition has a pending
// offset, OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT
// for it (offsets.Book.ServeFetch), and the group is neither deleted nor
// expired.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
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

// txnEnd ends a producer's pending offsets of a group: committed (each
// becomes the group's offset, stamped with the commit time) or dropped.
func (s *Shard) txnEnd(now time.Time, c TxnEndCmd) {
	if c.AllGroups {
		for _, g := range s.offs.PendingGroups(c.ProducerID) {
			s.txnEnd(now, TxnEndCmd{Tenant: g.Tenant, Group: g.Name, ProducerID: c.ProducerID, Commit: c.Commit})
		}
		return
	}
	k := gkey{Tenant: c.Tenant, Name: c.Group}
	if c.Commit && s.offs.HasPendingOf(k.Off(), c.ProducerID) && s.lookup(k.Tenant, k.Name) == nil {
		// The group went away while the transaction held offsets for
		// it (a simple group has no other record): as OffsetCommit, a
		// commit makes it again.
		s.classic.EmitRecord(s.classic.Create(k, now))
	}
	s.lookup(k.Tenant, k.Name) // touched: its offsets change
	s.offs.EndTxn(k.Off(), c.ProducerID, c.Commit, now.UnixMilli())
}

// deleteGroupsPending is DeleteGroups that keeps groups with pending
// transactional offsets (NON_EMPTY_GROUP), as Kafka does: their offsets
// are still to be committed or dropped.
func (s *Shard) deleteGroupsPending(now time.Time, req machine.Request, r *kmsg.DeleteGroupsRequest) {
	var rest []string
	for _, g := range r.Groups {
		if !s.offs.HasPending(gkey{Tenant: req.Tenant, Name: g}.Off()) {
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
	reply := &s.h.Out.Replies[len(s.h.Out.Replies)-1]
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
		if s.offs.HasPending(gkey{Tenant: req.Tenant, Name: g}.Off()) {
			resp.Groups = append(resp.Groups, deleteResult(r.Version, g, kerr.NonEmptyGroup.Code))
			continue
		}
		resp.Groups = append(resp.Groups, done.Groups[i])
		i++
	}
	reply.Resp = resp
}
