package offsets

// Transactional offsets (KIP-98, KIP-447): a TxnOffsetCommit stores its
// offsets as pending, per producer, in record.KindTxnOffset records; the
// end of the transaction turns them into committed offsets (a commit) or
// drops them (an abort), as Kafka's OffsetMetadataManager does when a
// transaction marker reaches __consumer_offsets.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-dev/cohort/record"
)

// ReplayPending applies a pending transactional offset's record (v nil:
// a tombstone).
func (b *Book) ReplayPending(k record.TxnOffsetKey, v []byte) error {
	g := Group{k.Tenant, k.Group}
	tp := TP{k.Topic, k.Partition}
	if v == nil {
		if byPID := b.pending[g]; byPID != nil {
			delete(byPID[k.ProducerID], tp)
			if len(byPID[k.ProducerID]) == 0 {
				delete(byPID, k.ProducerID)
			}
			if len(byPID) == 0 {
				delete(b.pending, g)
			}
		}
		return nil
	}
	o, err := record.DecodeOffset(v)
	if err != nil {
		return fmt.Errorf("pending offset %s/%s/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	if b.pending == nil {
		b.pending = map[Group]map[int64]map[TP]record.Offset{}
	}
	byPID := b.pending[g]
	if byPID == nil {
		byPID = map[int64]map[TP]record.Offset{}
		b.pending[g] = byPID
	}
	if byPID[k.ProducerID] == nil {
		byPID[k.ProducerID] = map[TP]record.Offset{}
	}
	byPID[k.ProducerID][tp] = o
	return nil
}

// AddPending writes a producer's pending offset of a partition of g.
func (b *Book) AddPending(g Group, pid int64, tp TP, o record.Offset) {
	b.rec.Emit(b.pendingKey(g, pid, tp), o.Encode())
}

// HasPending reports whether g has pending transactional offsets.
func (b *Book) HasPending(g Group) bool { return len(b.pending[g]) > 0 }

// AnyPending reports whether any group of the shard has pending offsets.
func (b *Book) AnyPending() bool { return len(b.pending) > 0 }

// Unstable reports whether a partition of g has a pending offset.
func (b *Book) Unstable(g Group, topic string, p int32) bool {
	for _, offs := range b.pending[g] {
		if _, ok := offs[TP{topic, p}]; ok {
			return true
		}
	}
	return false
}

// PendingGroups returns the groups where producer pid has pending
// offsets, sorted.
func (b *Book) PendingGroups(pid int64) []Group {
	var out []Group
	for g, byPID := range b.pending {
		if _, ok := byPID[pid]; ok {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, compareGroups)
	return out
}

// HasPendingOf reports whether producer pid has pending offsets in g.
func (b *Book) HasPendingOf(g Group, pid int64) bool { return len(b.pending[g][pid]) > 0 }

// EndTxn ends producer pid's pending offsets of g: with commit, each
// becomes g's committed offset stamped with nowMs; either way the pending
// record goes.
func (b *Book) EndTxn(g Group, pid int64, commit bool, nowMs int64) {
	offs := b.pending[g][pid]
	tps := make([]TP, 0, len(offs))
	for tp := range offs {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(x, y TP) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	for _, tp := range tps {
		o := offs[tp]
		if commit {
			o.CommitTimestamp = nowMs
			b.Commit(g, tp.Topic, tp.Partition, o)
		}
		b.rec.Emit(b.pendingKey(g, pid, tp), nil)
	}
}

// PendingState renders the pending offsets for the shard's rendering of
// its durable state.
func (b *Book) PendingState() string {
	var lines []string
	for g, byPID := range b.pending {
		for pid, offs := range byPID {
			for tp, o := range offs {
				lines = append(lines, fmt.Sprintf("pending %q/%q pid=%d %s/%d %+v", g.Tenant, g.Name, pid, tp.Topic, tp.Partition, o))
			}
		}
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
