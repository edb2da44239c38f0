package admin

// Share groups (KIP-932) in the operator's views: their share-partition
// state, as the share coordinator describes it (sharestate.Description,
// read through APIConfig.ShareState), counted for the JSON API, the web
// page and /metrics, and their lag as KIP-1226 defines it.
//
// A share group commits no offsets: what a consumer group's committed
// offset says, a share partition's start offset (SPSO) and the records in
// flight after it (up to its end offset, SPEO) say together. Records
// before the SPSO are done; records between it and the SPEO are each
// available, acquired by a member, acknowledged or archived; records from
// the SPEO to the high watermark were never delivered.

import (
	"context"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/topics"
)

// ShareCounts are records in flight (from a share partition's start
// offset to its end offset), by state.
type ShareCounts struct {
	// InFlight is every record from the start offset to the end offset:
	// the sum of the four states.
	InFlight int64 `json:"in_flight"`
	// Available records may be acquired: released, their lock expired,
	// their member gone, or never delivered yet.
	Available int64 `json:"available"`
	// Acquired records are locked by a member until it acknowledges them
	// or the lock expires.
	Acquired int64 `json:"acquired"`
	// Acknowledged (accepted) and Archived (rejected, a gap, or at the
	// delivery limit) records are done; they are in flight only while an
	// earlier record is not.
	Acknowledged int64 `json:"acknowledged"`
	Archived     int64 `json:"archived"`
	// Redelivered counts the records in flight delivered more than once
	// (delivery count above 1), whatever their state now.
	Redelivered int64 `json:"redelivered"`
}

func (c *ShareCounts) add(o ShareCounts) {
	c.InFlight += o.InFlight
	c.Available += o.Available
	c.Acquired += o.Acquired
	c.Acknowledged += o.Acknowledged
	c.Archived += o.Archived
	c.Redelivered += o.Redelivered
}

// SharePartition is a share partition's state: its start and end offsets,
// its state epoch (bumped by every AlterShareGroupOffsets) and its records
// in flight.
type SharePartition struct {
	StartOffset int64 `json:"start_offset"`
	EndOffset   int64 `json:"end_offset"`
	StateEpoch  int32 `json:"state_epoch"`
	ShareCounts
}

// Lag is the share partition's lag against the high watermark hwm, as
// KIP-1226 defines it and Kafka 4.2's DescribeShareGroupOffsets v1
// answers it: hwm less the start offset less the records already done in
// flight (acknowledged or archived: Kafka's DeliveryCompleteCount), never
// below 0. It counts what remains to be processed: available and acquired
// records in flight and everything not delivered yet.
func (p SharePartition) Lag(hwm int64) int64 {
	return max(0, hwm-p.StartOffset-p.Acknowledged-p.Archived)
}

// position is where the share partition's consumption stands for the lag
// tracker, which reads a consumer group's committed offset: the start
// offset plus the records done in flight, so that the tracker's lag (the
// high watermark less it) is Lag's.
func (p SharePartition) position() int64 { return p.StartOffset + p.Acknowledged + p.Archived }

// sharePartition counts d.
func sharePartition(d sharestate.Description) SharePartition {
	p := SharePartition{StartOffset: d.StartOffset, EndOffset: d.EndOffset, StateEpoch: d.StateEpoch}
	for _, r := range d.Runs {
		n := r.Last - r.First + 1
		p.InFlight += n
		switch r.State {
		case record.ShareAvailable:
			p.Available += n
		case record.ShareAcquired:
			p.Acquired += n
		case record.ShareAcknowledged:
			p.Acknowledged += n
		case record.ShareArchived:
			p.Archived += n
		}
		if r.DeliveryCount > 1 {
			p.Redelivered += n
		}
	}
	return p
}

// topicNames maps topic ids to the names their organisations know them
// by, from the topic log's names (TopicInfo.ID).
func topicNames(ts []TopicInfo) map[[16]byte]string {
	out := make(map[[16]byte]string, len(ts))
	for _, t := range ts {
		if t.ID != ([16]byte{}) {
			_, name := topics.Owner(t.Name)
			out[t.ID] = name
		}
	}
	return out
}

// shareState reads the share-partition state of share group s that this
// node holds, by the topic names of its organisation; nil for a group of
// another type, or with no share coordinator. A partition with no state
// (never fetched, or deleted) or of a topic deleted since is left out.
func (a *API) shareState(ctx context.Context, s groups.Summary, names map[[16]byte]string) map[TopicPartition]SharePartition {
	if s.Type != groups.ShareGroup || a.cfg.ShareState == nil {
		return nil
	}
	out := map[TopicPartition]SharePartition{}
	for _, d := range a.cfg.ShareState(ctx, s.Tenant, s.Group) {
		name, ok := names[d.Key.TopicID]
		if d.Code != 0 || !ok {
			continue
		}
		out[TopicPartition{Topic: name, Partition: d.Key.Partition}] = sharePartition(d)
	}
	return out
}

// shareProgress is when a share partition's position (SharePartition's
// position) last moved, the lag tracker's commit time for share groups:
// a share group commits nothing, and the records it finishes are its
// progress. A position first seen counts as moved then.
type shareProgress struct {
	position int64
	at       time.Time
}

type shareRef struct {
	tenant, group string
	tp            TopicPartition
}

// shareSamples adds share group s's partitions to gs for the lag tracker
// and notes their progress in a.progress (under a.mu), which keeps only
// the partitions seen.
func (a *API) shareSamples(s groups.Summary, shares map[TopicPartition]SharePartition, ends map[TopicPartition]PartitionOffsets, now time.Time, gs GroupSample, seen map[shareRef]bool) {
	for tp, p := range shares {
		po, ok := ends[TopicPartition{Topic: topics.Internal(s.Tenant, tp.Topic), Partition: tp.Partition}]
		if !ok {
			continue
		}
		ref := shareRef{s.Tenant, s.Group, tp}
		seen[ref] = true
		pr, known := a.progress[ref]
		if !known || pr.position != p.position() {
			pr = shareProgress{position: p.position(), at: now}
			a.progress[ref] = pr
		}
		gs.Partitions[tp] = LagSample{Committed: pr.position, CommitAt: pr.at, End: po.End}
	}
}

// shareTotals sums a share group's partitions.
func shareTotals(shares map[TopicPartition]SharePartition) *ShareCounts {
	var c ShareCounts
	for _, p := range shares {
		c.add(p.ShareCounts)
	}
	return &c
}
