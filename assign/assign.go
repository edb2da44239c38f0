// Package assign computes the target assignment of a consumer group: which
// member should own which topic-partition. It is the server side of KIP-848,
// where the coordinator, not a client leader, decides, and it is usable on its
// own by anything that shares partitions among workers.
//
// Two assignors match Apache Kafka's built-in server-side assignors by name
// and intent:
//
//   - [Uniform] ("uniform", Kafka's default): balanced, sticky and rack-aware.
//   - [Range] ("range"): contiguous ranges per topic, co-partitioned topics
//     line up.
//
// An assignor is a pure function of its input. It does no I/O, reads no clock
// and starts no goroutine, and its output does not depend on the order of
// the members or topics it is given: members are ordered by id (Range: static
// members by instance id first, as Kafka).
package assign

import (
	"slices"
	"sort"
)

// Partitions maps a topic name to partition numbers in ascending order.
type Partitions map[string][]int32

// Count returns the number of partitions.
func (p Partitions) Count() int {
	n := 0
	for _, ps := range p {
		n += len(ps)
	}
	return n
}

// Clone returns a deep copy.
func (p Partitions) Clone() Partitions {
	out := make(Partitions, len(p))
	for t, ps := range p {
		out[t] = slices.Clone(ps)
	}
	return out
}

// Equal reports whether p and q hold the same partitions. A topic with no
// partitions is the same as an absent one.
func (p Partitions) Equal(q Partitions) bool {
	if p.Count() != q.Count() {
		return false
	}
	for t, ps := range p {
		if !slices.Equal(ps, q[t]) {
			return false
		}
	}
	return true
}

// Member is one member of the group as an assignor sees it.
type Member struct {
	// ID is the member id. Ids are unique within a group.
	ID string
	// InstanceID is the static member's group.instance.id, or empty.
	InstanceID string
	// Rack is the member's client.rack, or empty.
	Rack string
	// Topics are the topics the member subscribes to. Topics missing from
	// Group.Topics (not created yet, or deleted) are ignored.
	Topics []string
	// Current is the member's previous target assignment. Uniform keeps as
	// much of it as balance allows; Range ignores it.
	Current Partitions
}

// Topic describes a topic the group may subscribe to.
type Topic struct {
	// Partitions is the partition count.
	Partitions int32
	// Racks, if not nil, holds for each partition the racks of its replicas.
	// Uniform prefers a member in one of them.
	Racks [][]string
}

// Group is an assignor's input.
type Group struct {
	Members []Member
	// Topics holds every topic a member may subscribe to, by name.
	Topics map[string]Topic
}

// Assignment is an assignor's output: every member of the group, by id, with
// the partitions it should own. A member that gets nothing has an empty map.
type Assignment map[string]Partitions

// Assignor computes a target assignment.
type Assignor interface {
	// Name is the name a client asks for (ConsumerGroupHeartbeat's
	// ServerAssignor).
	Name() string
	// Assign returns the target assignment for g. Every partition of a topic
	// that some member subscribes to is assigned to exactly one member that
	// subscribes to it.
	Assign(g Group) Assignment
}

// Names lists the built-in assignors, the default first (as Kafka's
// group.consumer.assignors default: uniform, range).
func Names() []string { return []string{UniformName, RangeName} }

// ByName returns the built-in assignor with that name.
func ByName(name string) (Assignor, bool) {
	switch name {
	case UniformName:
		return Uniform{}, true
	case RangeName:
		return Range{}, true
	}
	return nil, false
}

// index is the dense form both assignors work on: members sorted, topics
// sorted, every partition of a subscribed topic numbered 0..total-1 in
// (topic name, partition) order.
type index struct {
	members []*Member
	topics  []string // subscribed, existing topics, sorted
	counts  []int32  // partitions per topic
	racks   [][][]string
	base    []int32 // global number of a topic's partition 0
	total   int32
	topicIx map[string]int32
	subs    [][]int32 // per member: subscribed topic indexes, ascending
	byTopic [][]int32 // per topic: subscribing member indexes, ascending
	// homogeneous reports whether every member subscribes to the same
	// non-empty set of existing topics.
	homogeneous bool
}

func newIndex(g Group, less func(a, b *Member) int) *index {
	x := &index{topicIx: map[string]int32{}}
	x.members = make([]*Member, len(g.Members))
	for i := range g.Members {
		x.members[i] = &g.Members[i]
	}
	slices.SortFunc(x.members, less)
	names := map[string]bool{}
	for _, m := range x.members {
		for _, t := range m.Topics {
			if _, ok := g.Topics[t]; ok && g.Topics[t].Partitions > 0 {
				names[t] = true
			}
		}
	}
	x.topics = make([]string, 0, len(names))
	for t := range names {
		x.topics = append(x.topics, t)
	}
	sort.Strings(x.topics)
	x.counts = make([]int32, len(x.topics))
	x.racks = make([][][]string, len(x.topics))
	x.base = make([]int32, len(x.topics))
	x.byTopic = make([][]int32, len(x.topics))
	for i, t := range x.topics {
		x.topicIx[t] = int32(i)
		info := g.Topics[t]
		x.counts[i] = info.Partitions
		x.racks[i] = info.Racks
		x.base[i] = x.total
		x.total += info.Partitions
	}
	x.subs = make([][]int32, len(x.members))
	x.homogeneous = len(x.members) > 0
	for mi, m := range x.members {
		var s []int32
		for _, t := range m.Topics {
			if ti, ok := x.topicIx[t]; ok {
				s = append(s, ti)
			}
		}
		slices.Sort(s)
		s = slices.Compact(s)
		x.subs[mi] = s
		for _, ti := range s {
			x.byTopic[ti] = append(x.byTopic[ti], int32(mi))
		}
		if len(s) != len(x.topics) {
			x.homogeneous = false
		}
	}
	return x
}

// topicOf returns the topic index of global partition g.
func (x *index) topicOf(g int32) int32 {
	i, _ := slices.BinarySearch(x.base, g+1)
	return int32(i - 1)
}

// rackMatch reports whether member mi's rack holds a replica of global
// partition g. It is false when either side has no rack.
func (x *index) rackMatch(mi int32, g int32) bool {
	rack := x.members[mi].Rack
	if rack == "" {
		return false
	}
	ti := x.topicOf(g)
	rs := x.racks[ti]
	p := g - x.base[ti]
	if int(p) >= len(rs) {
		return false
	}
	return slices.Contains(rs[p], rack)
}

// hasRacks reports whether rack awareness can apply at all.
func (x *index) hasRacks() bool {
	anyMember := false
	for _, m := range x.members {
		if m.Rack != "" {
			anyMember = true
			break
		}
	}
	if !anyMember {
		return false
	}
	for _, rs := range x.racks {
		if len(rs) > 0 {
			return true
		}
	}
	return false
}

// output turns owners (global partition → member index, -1 none) into an
// Assignment listing every member.
func (x *index) output(owners []int32) Assignment {
	out := make(Assignment, len(x.members))
	for _, m := range x.members {
		out[m.ID] = Partitions{}
	}
	for ti, t := range x.topics {
		base := x.base[ti]
		for p := int32(0); p < x.counts[ti]; p++ {
			o := owners[base+p]
			if o < 0 {
				continue
			}
			a := out[x.members[o].ID]
			a[t] = append(a[t], p)
		}
	}
	return out
}

// byID orders members by id.
func byID(a, b *Member) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}
