package cluster

import (
	"slices"
	"sort"
)

// None is the owner of a unit that nobody owns.
const None int32 = -1

// Assignment is who owns each unit (a coordinator shard; the last unit is
// the assignment service's shard), and who is to own it next: a unit whose
// Next is a node is being moved there warm, and keeps being served by its
// Owner until the leader flips it. It is the only record the leader writes.
type Assignment struct {
	// Epoch grows with every assignment written.
	Epoch int64 `json:"epoch"`
	// Owner[u] is the node that serves unit u, or None.
	Owner []int32 `json:"owner"`
	// Next[u] is the node unit u is moving to, or None.
	Next []int32 `json:"next"`
	// Since[u] is the epoch of the assignment that set Next[u] (0 when
	// it is None). A node's "ready" for unit u counts only if it was
	// said for this move, at Since[u] or later: a node that warmed u up
	// for an earlier move and has since let it go must warm it again.
	Since []int64 `json:"since,omitempty"`
}

// clone returns a deep copy.
func (a Assignment) clone() Assignment {
	return Assignment{Epoch: a.Epoch, Owner: slices.Clone(a.Owner), Next: slices.Clone(a.Next), Since: slices.Clone(a.Since)}
}

// equal reports whether a and b assign the same owners and moves.
func (a Assignment) equal(b Assignment) bool {
	return slices.Equal(a.Owner, b.Owner) && slices.Equal(a.Next, b.Next) && slices.Equal(a.Since, b.Since)
}

// Balance spreads units over the live nodes with the fewest moves: every
// live node ends with ⌊U/N⌋ or ⌈U/N⌉ units, a unit stays with its owner
// whenever that owner is live and under its share, and the rest go to the
// nodes with the most room. owners[u] is the current owner of unit u
// (None, or a node that is not live, frees it). Nodes with more units
// today get the ⌈U/N⌉ shares, so that fewer move. With no live node every
// unit is None. Pure and deterministic: the same input gives the same
// output whatever the order of live.
func Balance(owners []int32, live []int32) []int32 { return balance(owners, live, nil) }

// balance is Balance where the ⌈U/N⌉ shares go first to the nodes with the
// fewest units in prior (the classes balanced before this one), so that
// the totals over all classes stay within one of each other too.
func balance(owners []int32, live []int32, prior map[int32]int) []int32 {
	out := make([]int32, len(owners))
	if len(live) == 0 {
		for u := range out {
			out[u] = None
		}
		return out
	}
	nodes := slices.Clone(live)
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	isLive := make(map[int32]bool, len(nodes))
	for _, n := range nodes {
		isLive[n] = true
	}
	held := map[int32][]int{} // node → units it owns now, ascending
	for u, o := range owners {
		if isLive[o] {
			held[o] = append(held[o], u)
		}
	}
	// Shares: the nodes holding most get the larger ones.
	byHeld := slices.Clone(nodes)
	sort.SliceStable(byHeld, func(i, j int) bool {
		if pi, pj := prior[byHeld[i]], prior[byHeld[j]]; pi != pj {
			return pi < pj
		}
		return len(held[byHeld[i]]) > len(held[byHeld[j]])
	})
	base, extra := len(owners)/len(nodes), len(owners)%len(nodes)
	share := make(map[int32]int, len(nodes))
	for i, n := range byHeld {
		share[n] = base
		if i < extra {
			share[n]++
		}
	}
	for u := range out {
		out[u] = None
	}
	count := map[int32]int{}
	for _, n := range nodes {
		keep := held[n]
		if len(keep) > share[n] {
			keep = keep[:share[n]]
		}
		for _, u := range keep {
			out[u] = n
		}
		count[n] = len(keep)
	}
	// The freed units, ascending, to the nodes with the most room left
	// (ties: lowest id).
	for u := range out {
		if out[u] != None {
			continue
		}
		best := None
		for _, n := range nodes {
			if count[n] >= share[n] {
				continue
			}
			if best == None || share[n]-count[n] > share[best]-count[best] {
				best = n
			}
		}
		out[u] = best
		count[best]++
	}
	return out
}

// Plan is the leader's next assignment, given the current one (zero if
// there is none yet), the registered nodes, those of them that are
// draining (SIGTERM: hand everything off, then leave), and the nodes that
// have warmed up each unit (ready[u] holds a node that has preloaded unit
// u; nodes ready for other units are ignored). classes are the sizes of
// the consecutive classes of units (the group coordinator's shards with
// the assigner's, then the transaction coordinator's); their sum is the
// unit count. Each class is balanced on its own, so that every node
// serves its share of each kind: one balance over all units could give
// one node every group shard and another every transaction shard.
//
// Rules:
//   - a unit whose owner is not registered (its lease expired) or None
//     goes at once to its target: there is nothing to hand over warm;
//   - a unit whose owner is registered but is not its target moves warm:
//     Next is set to the target, and the owner is flipped only once the
//     target has said it is ready for this very move (ready[u] holds
//     it and the move was already announced in cur; the caller keeps
//     only readiness said at cur.Since[u] or later), or when forced
//     (force[u]: the leader's timeout for a target that never warms up);
//   - targets are Balance over the registered nodes that are not draining.
//
// It returns the next assignment and whether it differs from cur. The
// epoch is cur's plus one when it differs.
func Plan(classes []int, cur Assignment, registered, draining []int32, ready map[int][]int32, force map[int]bool) (Assignment, bool) {
	units := 0
	for _, k := range classes {
		units += k
	}
	if n := len(cur.Owner); n < units && len(cur.Next) == n && (cur.Since == nil || len(cur.Since) == n) {
		// The cluster gained units (the transaction coordinator's, added
		// to a cluster created before them): the units it had keep their
		// owners and moves, the new ones are nobody's yet.
		cur = cur.clone()
		for range units - n {
			cur.Owner = append(cur.Owner, None)
			cur.Next = append(cur.Next, None)
			if cur.Since != nil {
				cur.Since = append(cur.Since, 0)
			}
		}
	}
	if len(cur.Owner) != units {
		cur = Assignment{Epoch: cur.Epoch, Owner: make([]int32, units), Next: make([]int32, units)}
		for u := range units {
			cur.Owner[u], cur.Next[u] = None, None
		}
	}
	if len(cur.Since) != units {
		cur = cur.clone()
		cur.Since = make([]int64, units)
		for u, n := range cur.Next {
			if n != None {
				cur.Since[u] = cur.Epoch
			}
		}
	}
	isReg := map[int32]bool{}
	for _, n := range registered {
		isReg[n] = true
	}
	isDraining := map[int32]bool{}
	for _, n := range draining {
		isDraining[n] = true
	}
	var live []int32
	for _, n := range registered {
		if !isDraining[n] {
			live = append(live, n)
		}
	}
	// Owners that are gone count as none; draining owners still serve
	// but get no share.
	valid := make([]int32, units)
	for u, o := range cur.Owner {
		valid[u] = None
		if isReg[o] {
			valid[u] = o
		}
	}
	target := make([]int32, 0, units)
	off := 0
	prior := map[int32]int{}
	for _, k := range classes {
		part := balance(valid[off:off+k], live, prior)
		for _, n := range part {
			prior[n]++
		}
		target = append(target, part...)
		off += k
	}
	next := cur.clone()
	for u := range units {
		o, t := valid[u], target[u]
		switch {
		case o == None:
			next.Owner[u], next.Next[u], next.Since[u] = t, None, 0
		case o == t || t == None:
			next.Owner[u], next.Next[u], next.Since[u] = o, None, 0
		case force[u] || cur.Next[u] == t && slices.Contains(ready[u], t):
			next.Owner[u], next.Next[u], next.Since[u] = t, None, 0
		default:
			next.Owner[u], next.Next[u] = o, t
			if cur.Next[u] != t {
				next.Since[u] = cur.Epoch + 1
			}
		}
	}
	if next.equal(cur) {
		return cur, false
	}
	next.Epoch = cur.Epoch + 1
	return next, true
}

// Actions are what a node must do to match an assignment.
type Actions struct {
	// Load are the units to load and serve (owned here, not held).
	Load []int
	// Unload are the units to stop serving (held here, owned elsewhere
	// or by nobody).
	Unload []int
	// Preload are the units to warm up (moving here, not yet warmed).
	Preload []int
}

// Reconcile is what node me must do: held are the units it serves,
// warmed those it has preloaded. A suspended node (its lease may be
// about to expire) serves nothing, whatever the assignment says.
func Reconcile(a Assignment, me int32, held, warmed map[int]bool, suspended bool) Actions {
	var act Actions
	for u, o := range a.Owner {
		mine := o == me && !suspended
		switch {
		case mine && !held[u]:
			act.Load = append(act.Load, u)
		case !mine && held[u]:
			act.Unload = append(act.Unload, u)
		}
		if !suspended && o != me && a.Next[u] == me && !warmed[u] {
			act.Preload = append(act.Preload, u)
		}
	}
	// Held units beyond the assignment (it shrank): unload.
	for u := range held {
		if u >= len(a.Owner) && held[u] {
			act.Unload = append(act.Unload, u)
		}
	}
	slices.Sort(act.Unload)
	return act
}
