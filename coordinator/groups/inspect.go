package groups

// InspectCmd: what the admin API and the lag tracker read of a shard's
// groups that no Kafka response carries: every tenant's groups at once,
// each with its stable cgp_ id and, per committed offset, when it was
// committed (Burrow-like lag status tells "commits stopped" from "commits
// repeat the same offset" by it).

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/record"
)

// InspectCmd asks for a Summary of every group of the shard, all tenants,
// or, with Only set, of that one group; its Reply's Out is a []Summary
// sorted by tenant, then group. It writes nothing.
type InspectCmd struct {
	Only *GroupRef
	// Token, if not zero, asks for the groups whose summary changed since
	// the InspectCmd whose Token was Since (InspectDelta): a sampler
	// that reads every group every few seconds copies only what changed.
	// A shard that did not answer Since last (it was loaded since, or
	// another reader asked in between) answers in full.
	Token, Since uint64
}

// InspectDelta is the reply to an InspectCmd with a Token.
type InspectDelta struct {
	// Full: Changed is every group of the shard; else only those whose
	// summary changed since the inspect Since named.
	Full    bool
	Changed []Summary // sorted by tenant, then group
	// Count is how many groups the shard lists now: a reader whose
	// groups of the shard, with Changed applied, are not as many has
	// missed a deletion, and asks again in full.
	Count int
}

// Reading is a coordinator's reading of every group it serves, as it
// hands each one to its single reader (the lag sampler): the groups,
// and what changed since the reading before.
type Reading struct {
	// Groups is every group, sorted by tenant, then group.
	Groups []Summary
	// InPlace says that Groups is the slice of the reading before, no
	// group having come or gone since: the summaries at Changed
	// (ascending) were replaced in it, and only those. Without it,
	// Groups is a new slice, any group of which may have changed.
	InPlace bool
	Changed []int32
}

// GroupRef names a tenant's group.
type GroupRef struct{ Tenant, Group string }

// Summary is one group as InspectCmd reports it.
type Summary struct {
	Tenant, Group string
	// ID is the stable cgp_<ULID> id; "" for a group known only by its
	// offsets while its shard loads (never once loaded).
	ID           string
	ProtocolType string
	// Type and State are a byte each, not strings, and the counts int32,
	// not int, next to them with no padding between: a reading holds a
	// summary for each of a million groups (TestSummarySize). A group's
	// members fit the int32 Kafka's protocol counts an array's elements
	// with.
	Type    GroupType // ClassicGroup (also simple groups), ConsumerGroup or ShareGroup
	State   GroupState
	Members int32
	// Generation is a classic group's generation, or a consumer or share
	// group's group epoch.
	Generation int32
	// PendingMembers counts a classic group's member ids handed out with
	// MEMBER_ID_REQUIRED and not yet used to join (KIP-394).
	PendingMembers int32
	Offsets        Offsets // sorted by topic, then partition
	// Assigned are the partitions the group's members are assigned now
	// (a classic group's, of the consumer protocol's assignments), by
	// the names its tenant knows, sorted: the lag status counts one with
	// no committed offset as not evaluated, as a group's detail shows
	// it.
	Assigned []AssignedPartition
}

// AssignedPartition is a partition a member is assigned.
type AssignedPartition struct {
	Topic     string
	Partition int32
}

// OffsetSummary is one committed offset.
type OffsetSummary struct {
	Topic           string
	Partition       int32
	Offset          int64
	CommitTimestamp int64 // Unix ms
}

// inspect builds the shard's summaries, as ListGroups lists groups (a
// dead classic group is left out).
func (s *Shard) inspect(only *GroupRef) []Summary {
	var out []Summary
	entries := s.sortedGroups
	if only != nil {
		entries = func() []*group {
			if g := s.lookup(only.Tenant, only.Group); g != nil {
				return []*group{g}
			}
			return nil
		}
	}
	for _, e := range entries() {
		if sum, ok := s.summary(e); ok {
			out = append(out, sum)
		}
	}
	return out
}

// inspectDelta answers an InspectCmd with a Token: the groups whose
// fingerprint changed since the inspect Since named (every group if
// that was not this shard's last), noting each group's fingerprint for
// the next. Only the groups touched since (grouptype.Host.Touch) are
// fingerprinted again, so that a shard of quiet groups answers in time
// proportional to what changed, not to what it holds.
func (s *Shard) inspectDelta(c InspectCmd) InspectDelta {
	full := c.Since == 0 || c.Since != s.inspectToken
	s.inspectToken = c.Token
	d := InspectDelta{Full: full}
	touched, all := s.h.TakeTouched()
	if full || all {
		sorted := s.sortedGroups()
		if full {
			d.Changed = make([]Summary, 0, len(sorted)) // every group, sized once
		}
		s.h.Listed = 0
		for _, e := range sorted {
			s.h.Untouched(e)
			if s.inspectOne(e, full, &d) {
				s.h.Listed++
			}
		}
	} else {
		for _, e := range touched {
			was := e.Inspected != 0
			switch is := s.inspectOne(e, false, &d); {
			case is && !was:
				s.h.Listed++
			case !is && was:
				s.h.Listed--
			}
		}
	}
	d.Count = s.h.Listed
	return d
}

// inspectOne fingerprints e for inspectDelta and adds its summary to
// d's if full or if changed; listed reports whether inspect lists it.
func (s *Shard) inspectOne(e *group, full bool, d *InspectDelta) (listed bool) {
	fp, ok := s.fingerprint(e)
	if !ok {
		e.Inspected = 0
		return false
	}
	if !full && fp == e.Inspected {
		return true
	}
	e.Inspected = fp
	if sum, ok := s.summary(e); ok {
		d.Changed = append(d.Changed, sum)
	}
	return true
}

// checkTouched reports a group whose summary changed since the last
// inspect of changes though nothing touched it: a change the next
// inspect would miss. (Check, under every test.)
func (s *Shard) checkTouched() error {
	if s.inspectToken == 0 {
		return nil
	}
	listed := 0
	for _, e := range s.sortedGroups() {
		if e.Inspected != 0 {
			listed++
		}
		if s.h.Touched(e) {
			continue
		}
		fp, ok := s.fingerprint(e)
		if !ok {
			fp = 0
		}
		if fp != e.Inspected {
			return fmt.Errorf("group %q/%q changed since the last inspect, untouched", e.Tenant, e.Name)
		}
	}
	if listed != s.h.Listed {
		return fmt.Errorf("%d groups listed at the last inspect and still held, counted %d", listed, s.h.Listed)
	}
	return nil
}

// fnv is a 64-bit running hash: FNV-1a over strings' and bytes' bytes,
// ints mixed in whole (int).
type fnv uint64

func newFNV() fnv { return 14695981039346656037 }

func (h *fnv) bytes(b []byte) {
	for _, c := range b {
		*h = (*h ^ fnv(c)) * 1099511628211
	}
}

func (h *fnv) str(s string) {
	for i := 0; i < len(s); i++ {
		*h = (*h ^ fnv(s[i])) * 1099511628211
	}
	h.int(int64(len(s)))
}

// int mixes v in whole: splitmix64's finaliser of the hash so far and v,
// a bijection that spreads every bit of both (a byte at a time, as the
// strings are, was most of the time of a reading of quiet groups).
func (h *fnv) int(v int64) {
	x := uint64(*h) ^ uint64(v)
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	*h = fnv(x ^ x>>31)
}

// fingerprint hashes what e's summary shows, without building it; ok is
// false for a group inspect leaves out. Never 0 for a listed group.
func (s *Shard) fingerprint(e *group) (uint32, bool) {
	h := newFNV()
	h.str(e.ID)
	members := func(n int, gen int32) {
		h.int(int64(n))
		h.int(int64(gen))
	}
	assigned := func(a []record.TopicPartitions) {
		for _, t := range a {
			h.bytes(t.TopicID[:])
			for _, p := range t.Partitions {
				h.int(int64(p))
			}
		}
	}
	switch g := e.Part.(type) {
	case *consumer.Group:
		h.str("consumer")
		h.str(g.State())
		members(len(g.Members), g.Epoch)
		for _, id := range sortedKeys(g.Members) {
			assigned(g.Members[id].Assigned)
		}
	case *share.Group:
		h.str("share")
		h.str(g.State())
		members(len(g.Members), g.Epoch)
		for _, id := range sortedKeys(g.Members) {
			assigned(g.Members[id].Assigned)
		}
	case *classic.Group:
		if g.State == classic.Dead {
			return 0, false
		}
		h.str("classic")
		h.str(g.ProtocolType)
		h.str(g.State.String())
		members(len(g.Members()), g.Generation)
		h.int(int64(len(g.PendingJoin())))
		for _, id := range sortedKeys(g.Members()) {
			h.bytes(g.Members()[id].Assignment)
		}
	default:
		return 0, false
	}
	// The catalog names a consumer or share group's assigned topics:
	// the summary of one with members changes when it does. No other's
	// does (a catalog coming with the first request after a load would
	// otherwise change every group's fingerprint at once).
	if catalogNames(e) {
		if cat := s.h.Catalog(e.Tenant); cat != nil {
			h.int(int64(len(cat.ByID)))
		}
	}
	s.offs.Read(e.Off(), func(topic string, p int32, o record.Offset) {
		h.str(topic)
		h.int(int64(p))
		h.int(o.Offset)
		h.int(o.CommitTimestamp)
	})
	v := uint64(h)
	return max(uint32(v^v>>32), 1), true
}

// catalogNames reports whether e's summary names topics through the
// topic catalog: a consumer or share group's with members
// (appendAssigned).
func catalogNames(e *group) bool {
	switch g := e.Part.(type) {
	case *consumer.Group:
		return len(g.Members) > 0
	case *share.Group:
		return len(g.Members) > 0
	}
	return false
}

// sortedKeys is m's keys, sorted; nil, allocating nothing, for an empty
// m (slices.Sorted allocates even then, and most groups of a large
// estate have no members).
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// summary is e's Summary; ok is false for a group inspect leaves out.
func (s *Shard) summary(e *group) (Summary, bool) {
	sum := Summary{Tenant: e.Tenant, Group: e.Name, ID: e.ID}
	switch g := e.Part.(type) {
	case *consumer.Group:
		sum.Type, sum.ProtocolType, sum.Members, sum.Generation = ConsumerGroup, "consumer", int32(len(g.Members)), g.Epoch
		sum.State, _ = stateOf(g.State())
		for _, m := range g.Members {
			sum.Assigned = s.appendAssigned(sum.Assigned, e.Tenant, m.Assigned)
		}
	case *share.Group:
		sum.Type, sum.ProtocolType, sum.Members, sum.Generation = ShareGroup, "share", int32(len(g.Members)), g.Epoch
		sum.State, _ = stateOf(g.State())
		for _, m := range g.Members {
			sum.Assigned = s.appendAssigned(sum.Assigned, e.Tenant, m.Assigned)
		}
	case *classic.Group:
		if g.State == classic.Dead {
			return Summary{}, false
		}
		sum.Type, sum.ProtocolType, sum.Members, sum.Generation = ClassicGroup, g.ProtocolType, int32(len(g.Members())), g.Generation
		sum.State, _ = stateOf(g.State.String())
		sum.PendingMembers = int32(len(g.PendingJoin()))
		if g.ProtocolType == "consumer" {
			for _, m := range g.Members() {
				var a kmsg.ConsumerMemberAssignment
				if len(m.Assignment) == 0 || a.ReadFrom(m.Assignment) != nil {
					continue
				}
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						sum.Assigned = append(sum.Assigned, AssignedPartition{t.Topic, p})
					}
				}
			}
		}
	default:
		return Summary{}, false
	}
	s.offs.Read(e.Off(), func(topic string, p int32, o record.Offset) {
		s.inspectOffs.add(topic, p, o.Offset, o.CommitTimestamp)
	})
	sum.Offsets = s.inspectOffs.build() // one allocation a group: a reading makes one a group
	slices.SortFunc(sum.Assigned, func(a, b AssignedPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	sum.Assigned = slices.Compact(sum.Assigned)
	return sum, true
}

// appendAssigned appends the partitions of a (by topic id) to out by the
// names tenant's catalog knows; a topic it does not know is left out, as
// ConsumerGroupDescribe leaves it out.
func (s *Shard) appendAssigned(out []AssignedPartition, tenant string, a []record.TopicPartitions) []AssignedPartition {
	cat := s.h.Catalog(tenant)
	if cat == nil {
		return out
	}
	for _, t := range a {
		name, ok := cat.ByID[t.TopicID]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, AssignedPartition{name, p})
		}
	}
	return out
}
