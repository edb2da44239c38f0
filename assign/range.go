package assign

// RangeName is the name clients use for [Range].
const RangeName = "range"

// Range assigns each topic's partitions as contiguous ranges over the
// topic's subscribers, as Kafka's server-side RangeAssignor: subscribers are
// ordered static members first by instance id, then the others by member
// id; with n partitions over m subscribers, each gets n/m and the first n%m
// one more. Topics with the same partition count and the same subscribers
// are therefore co-partitioned: subscriber k gets the same partition numbers
// in each. Range is not sticky; a static member keeps its range across
// restarts because its place in the order comes from its instance id.
type Range struct{}

// Name implements Assignor.
func (Range) Name() string { return RangeName }

// Assign implements Assignor.
func (Range) Assign(g Group) Assignment {
	x := newIndex(g, rangeOrder)
	owners := make([]int32, x.total)
	for ti := range x.topics {
		subs := x.byTopic[ti]
		if len(subs) == 0 {
			continue
		}
		n, m := x.counts[ti], int32(len(subs))
		quota, extra := n/m, n%m
		next := x.base[ti]
		for k, mi := range subs {
			size := quota
			if int32(k) < extra {
				size++
			}
			for i := int32(0); i < size; i++ {
				owners[next] = mi
				next++
			}
		}
	}
	return x.output(owners)
}

// rangeOrder puts static members first, ordered by instance id, then dynamic
// members by member id.
func rangeOrder(a, b *Member) int {
	switch {
	case a.InstanceID != "" && b.InstanceID != "":
		if a.InstanceID != b.InstanceID {
			if a.InstanceID < b.InstanceID {
				return -1
			}
			return 1
		}
	case a.InstanceID != "":
		return -1
	case b.InstanceID != "":
		return 1
	}
	return byID(a, b)
}
