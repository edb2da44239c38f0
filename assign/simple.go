package assign

import (
	"cmp"
	"slices"
)

// SimpleName is the name of the share groups' assignor, Kafka's
// group.share.assignors default (and only) value.
const SimpleName = "simple"

// Simple computes the target assignment of a share group (KIP-932), as
// Kafka 4.2's SimpleAssignor: balance first, then stickiness, not
// rack-aware. Unlike a consumer group's assignors it may give one
// partition to several members: a share group's members share the
// records of a partition, so when there are more members than partitions
// each partition goes to ceil(members/partitions) of them and every
// member gets work. It is therefore not an Assignor (whose contract is
// one owner per partition), and no consumer group can ask for it.
//
// When every member subscribes to the same topics (Kafka's homogeneous
// case) the partitions of all of them are balanced together; otherwise
// each topic's partitions are balanced among the members subscribing to
// it, as Kafka's SimpleHeterogeneousAssignmentBuilder does. For each such
// pool of P partitions and M members:
//
//   - each partition is wanted by sharing = ceil(M/P) members, so the pool
//     has sharing×P places, and each member's quota is that divided by M,
//     rounded down or up (Kafka's desiredAssignmentCount); the larger
//     quotas go to the members that hold the most of the pool (Kafka
//     hands them out by member index; this way a balanced group that
//     loses or gains a member moves fewer partitions);
//   - each member keeps the partitions of the pool it had (Member.Current,
//     its previous target), ascending, up to its quota and as long as no
//     partition gets more than sharing holders (Kafka's
//     revokeUnassignablePartitions, revokeOverfilledMembers,
//     revokeOversharedPartitions);
//   - every partition still wanting holders is given, in partition order,
//     to the next member (in id order, round robin) that has room and
//     does not hold it yet (assignRemainingPartitions); when the only
//     members with room hold it already, one of them takes a partition
//     of a full member that then takes this one, where Kafka leaves the
//     partition short of holders.
//
// So every member ends with its quota and every partition with its
// sharing, the assignment of an unchanged group is its own fixed point,
// and members, topics and partitions are taken in sorted order, so the
// result does not depend on the order of the input.
func Simple(g Group) Assignment {
	x := newIndex(g, byID)
	n := int32(len(x.members))
	// cur[mi] are the global partitions member mi held and may keep: of
	// topics it subscribes to, that still exist.
	cur := make([][]int32, n)
	for mi, m := range x.members {
		for _, ti := range x.subs[mi] {
			for _, p := range m.Current[x.topics[ti]] {
				if p >= 0 && p < x.counts[ti] {
					cur[mi] = append(cur[mi], x.base[ti]+p)
				}
			}
		}
		slices.Sort(cur[mi])
		cur[mi] = slices.Compact(cur[mi])
	}
	held := make([][]int32, n) // the result, global partitions per member
	pool := func(parts []int32, mems []int32) {
		simplePool(parts, mems, cur, held)
	}
	if x.homogeneous {
		parts := make([]int32, x.total)
		for i := range parts {
			parts[i] = int32(i)
		}
		all := make([]int32, n)
		for i := range all {
			all[i] = int32(i)
		}
		pool(parts, all)
	} else {
		for ti := range x.topics {
			parts := make([]int32, x.counts[ti])
			for p := range parts {
				parts[p] = x.base[ti] + int32(p)
			}
			pool(parts, x.byTopic[ti])
		}
	}
	out := make(Assignment, n)
	for mi, m := range x.members {
		a := Partitions{}
		slices.Sort(held[mi])
		for _, gp := range held[mi] {
			ti := x.topicOf(gp)
			t := x.topics[ti]
			a[t] = append(a[t], gp-x.base[ti])
		}
		out[m.ID] = a
	}
	return out
}

// simplePool assigns the partitions parts (ascending global numbers) of
// one pool to its members mems (ascending member indexes), given what
// each held before (cur), appending to held.
func simplePool(parts, mems []int32, cur, held [][]int32) {
	P, M := int32(len(parts)), int32(len(mems))
	if P == 0 || M == 0 {
		return
	}
	sharing := (M + P - 1) / P
	places := sharing * P
	in := func(gp int32) (int32, bool) {
		i, ok := slices.BinarySearch(parts, gp)
		return int32(i), ok
	}
	// had[j]: member mems[j]'s previous partitions of the pool, as
	// indexes into parts.
	had := make([][]int32, M)
	for j, mi := range mems {
		for _, gp := range cur[mi] {
			if i, ok := in(gp); ok {
				had[j] = append(had[j], i)
			}
		}
	}
	// Quotas: places/M each, one more for the first places%M members in
	// the order of how much they held (most first), then of id.
	order := make([]int32, M)
	for j := range order {
		order[j] = int32(j)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(len(had[b]), len(had[a])) })
	quota := make([]int32, M)
	for k, j := range order {
		quota[j] = places / M
		if int32(k) < places%M {
			quota[j]++
		}
	}
	holders := make([]int32, P)
	mine := make([][]int32, M) // indexes into parts, per member
	has := make(map[[2]int32]bool)
	give := func(j, i int32) {
		mine[j] = append(mine[j], i)
		holders[i]++
		has[[2]int32{j, i}] = true
	}
	// Keep, in the quota order.
	for _, j := range order {
		for _, i := range had[j] {
			if int32(len(mine[j])) >= quota[j] {
				break
			}
			if holders[i] < sharing {
				give(j, i)
			}
		}
	}
	// swap places partition i when every member with room holds it
	// already: a member k without i and without room hands one of its
	// partitions to a member j with room that lacks it, and takes i. (A
	// k and a partition always exist: k's count is at least j's, and i is
	// j's and not k's. Kafka leaves i short of holders instead; then a
	// later assignment of the same group moves partitions again.)
	swap := func(i int32) bool {
		for j := range M {
			if int32(len(mine[j])) >= quota[j] {
				continue
			}
			for k := range M {
				if has[[2]int32{k, i}] {
					continue
				}
				for x, q := range mine[k] {
					if !has[[2]int32{j, q}] {
						mine[k] = slices.Delete(mine[k], x, x+1)
						delete(has, [2]int32{k, q})
						holders[q]--
						give(j, q)
						give(k, i)
						return true
					}
				}
			}
		}
		return false
	}
	// Fill, round robin over the members with room.
	next := int32(0)
	for i := range P {
		for holders[i] < sharing {
			placed := false
			for step := range M {
				j := (next + step) % M
				if int32(len(mine[j])) < quota[j] && !has[[2]int32{j, i}] {
					give(j, i)
					next = (j + 1) % M
					placed = true
					break
				}
			}
			if !placed && !swap(i) {
				break
			}
		}
	}
	for j, mi := range mems {
		for _, i := range mine[j] {
			held[mi] = append(held[mi], parts[i])
		}
	}
}
