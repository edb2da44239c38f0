package assign

import (
	"slices"
)

// UniformName is the name clients use for [Uniform].
const UniformName = "uniform"

// Uniform spreads partitions evenly and moves as few as it can, as Kafka's
// server-side UniformAssignor (its default). It ranks balance above
// stickiness above rack locality:
//
//   - Each member keeps the partitions of its previous target assignment
//     that it still subscribes to (a partition claimed by two members stays
//     with the first by id).
//   - When every member subscribes to the same topics, counts end within one
//     of each other and a partition moves only when balance needs it: the
//     members that keep the most get the larger quotas, so the number of
//     moves is the minimum any balanced assignment needs (Kafka hands the
//     larger quotas out in member order and can move a few more).
//   - When subscriptions differ, free partitions go to the least loaded
//     subscriber, topics with the most partitions per subscriber first; then
//     partitions move from the most to the least loaded subscriber of each
//     topic until no single move narrows a gap of two or more. Each move
//     lowers the sum of squared loads, so the loop ends. Then, where no
//     single move helps, partitions move along chains of members (a gives
//     b a partition of one topic, b gives c one of another) until no member
//     can reach, through such a chain, one with two fewer partitions. Kafka
//     stops before the chains: with m1 on topic a, m2 on a and b, m3 on b,
//     30 partitions end 9/10/11 there and 10/10/10 here.
//   - Where members and partitions have racks, a free partition goes to a
//     member in one of its replicas' racks when balance allows, and a member
//     over its quota gives up partitions outside its rack first.
type Uniform struct{}

// Name implements Assignor.
func (Uniform) Name() string { return UniformName }

// Assign implements Assignor.
func (Uniform) Assign(g Group) Assignment {
	x := newIndex(g, byID)
	u := &uniform{index: x, rackAware: x.hasRacks()}
	u.owners = make([]int32, x.total)
	for i := range u.owners {
		u.owners[i] = -1
	}
	u.load = make([]int32, len(x.members))
	u.retain()
	if x.homogeneous {
		u.quotas()
	} else {
		u.fill()
		u.balance()
		u.chains()
	}
	return x.output(u.owners)
}

type uniform struct {
	*index
	rackAware bool
	owners    []int32 // global partition → member index, -1 free
	load      []int32 // member index → partitions owned
}

// retain keeps each member's previous partitions that it still subscribes to.
func (u *uniform) retain() {
	for mi, m := range u.members {
		for t, ps := range m.Current {
			ti, ok := u.topicIx[t]
			if !ok {
				continue
			}
			if _, sub := slices.BinarySearch(u.subs[mi], ti); !sub {
				continue
			}
			for _, p := range ps {
				if p < 0 || p >= u.counts[ti] {
					continue
				}
				g := u.base[ti] + p
				if u.owners[g] >= 0 {
					continue
				}
				u.owners[g] = int32(mi)
				u.load[mi]++
			}
		}
	}
}

// owned lists each member's partitions in ascending order.
func (u *uniform) owned() [][]int32 {
	out := make([][]int32, len(u.members))
	for g, o := range u.owners {
		if o >= 0 {
			out[o] = append(out[o], int32(g))
		}
	}
	return out
}

// quotas balances a homogeneous group: every member subscribes to every
// topic, so any member can take any partition.
func (u *uniform) quotas() {
	m := int32(len(u.members))
	q, r := u.total/m, u.total%m
	// The r larger quotas go to the members keeping the most, which makes
	// the number of moved partitions minimal.
	order := make([]int32, m)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return int(u.load[b] - u.load[a]) })
	quota := make([]int32, m)
	for k, mi := range order {
		quota[mi] = q
		if int32(k) < r {
			quota[mi]++
		}
	}
	owned := u.owned()
	for mi := range u.members {
		excess := u.load[mi] - quota[mi]
		if excess <= 0 {
			continue
		}
		ps := owned[mi]
		// Give up partitions outside the member's rack first, then the
		// highest numbered.
		if u.rackAware {
			for i := len(ps) - 1; i >= 0 && excess > 0; i-- {
				if !u.rackMatch(int32(mi), ps[i]) {
					u.owners[ps[i]] = -1
					excess--
				}
			}
		}
		for i := len(ps) - 1; i >= 0 && excess > 0; i-- {
			if u.owners[ps[i]] == int32(mi) {
				u.owners[ps[i]] = -1
				excess--
			}
		}
		u.load[mi] = quota[mi]
	}
	var free []int32
	for g, o := range u.owners {
		if o < 0 {
			free = append(free, int32(g))
		}
	}
	if u.rackAware {
		free = u.fillByRack(free, quota)
	}
	mi := 0
	for _, g := range free {
		for u.load[mi] >= quota[mi] {
			mi++
		}
		u.owners[g] = int32(mi)
		u.load[mi]++
	}
}

// fillByRack gives free partitions to members with room in one of the
// partition's replica racks, and returns the partitions left.
func (u *uniform) fillByRack(free []int32, quota []int32) []int32 {
	byRack := map[string][]int32{}
	for mi, m := range u.members {
		if m.Rack != "" && u.load[mi] < quota[mi] {
			byRack[m.Rack] = append(byRack[m.Rack], int32(mi))
		}
	}
	left := free[:0]
	for _, g := range free {
		if !u.placeByRack(g, byRack, func(mi int32) bool { return u.load[mi] < quota[mi] }) {
			left = append(left, g)
		}
	}
	return left
}

// placeByRack gives g to the first member with room in one of g's replica
// racks, dropping full members from the rack queues as it goes.
func (u *uniform) placeByRack(g int32, byRack map[string][]int32, room func(int32) bool) bool {
	ti := u.topicOf(g)
	p := g - u.base[ti]
	if int(p) >= len(u.index.racks[ti]) {
		return false
	}
	for _, rack := range u.index.racks[ti][p] {
		q := byRack[rack]
		for len(q) > 0 && !room(q[0]) {
			q = q[1:]
		}
		byRack[rack] = q
		if len(q) > 0 {
			u.owners[g] = q[0]
			u.load[q[0]]++
			return true
		}
	}
	return false
}

// topicOrder orders topics for the heterogeneous passes: most partitions per
// subscriber first, then fewest subscribers, then name (Kafka's order).
func (u *uniform) topicOrder() []int32 {
	var order []int32
	for ti := range u.topics {
		if len(u.byTopic[ti]) > 0 {
			order = append(order, int32(ti))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		na, sa := int64(u.counts[a]), int64(len(u.byTopic[a]))
		nb, sb := int64(u.counts[b]), int64(len(u.byTopic[b]))
		if l, r := na*sb, nb*sa; l != r {
			if l > r {
				return -1
			}
			return 1
		}
		if sa != sb {
			return int(sa - sb)
		}
		return int(a - b)
	})
	return order
}

// fill gives each free partition to the least loaded of its topic's
// subscribers, preferring one in a replica's rack among equally loaded ones.
func (u *uniform) fill() {
	for _, ti := range u.topicOrder() {
		base, n := u.base[ti], u.counts[ti]
		var free []int32
		for g := base; g < base+n; g++ {
			if u.owners[g] < 0 {
				free = append(free, g)
			}
		}
		if len(free) == 0 {
			continue
		}
		less := func(a, b int32) bool {
			if u.load[a] != u.load[b] {
				return u.load[a] < u.load[b]
			}
			return a < b
		}
		all := newHeap(len(u.members), less)
		racks := map[string]*heap{}
		for _, mi := range u.byTopic[ti] {
			all.push(mi)
			if r := u.members[mi].Rack; u.rackAware && r != "" {
				if racks[r] == nil {
					racks[r] = newHeap(len(u.members), less)
				}
				racks[r].push(mi)
			}
		}
		for _, g := range free {
			pick := all.top()
			if u.rackAware {
				p := g - base
				if int(p) < len(u.index.racks[ti]) {
					for _, r := range u.index.racks[ti][p] {
						if h := racks[r]; h != nil && h.len() > 0 && u.load[h.top()] == u.load[pick] {
							pick = h.top()
							break
						}
					}
				}
			}
			u.owners[g] = pick
			u.load[pick]++
			all.fix(pick)
			if h := racks[u.members[pick].Rack]; h != nil {
				h.fix(pick)
			}
		}
	}
}

// balance moves partitions, topic by topic, from the most loaded subscriber
// owning one to the least loaded subscriber while their loads differ by two
// or more, until a whole round moves nothing.
func (u *uniform) balance() {
	order := u.topicOrder()
	for {
		moved := false
		owned := u.owned()
		for _, ti := range order {
			subs := u.byTopic[ti]
			if len(subs) < 2 {
				continue
			}
			base, n := u.base[ti], u.counts[ti]
			mine := map[int32][]int32{}
			for _, mi := range subs {
				ps := owned[mi]
				lo, _ := slices.BinarySearch(ps, base)
				hi, _ := slices.BinarySearch(ps, base+n)
				if hi > lo {
					mine[mi] = slices.Clone(ps[lo:hi])
				}
			}
			recv := newHeap(len(u.members), func(a, b int32) bool {
				if u.load[a] != u.load[b] {
					return u.load[a] < u.load[b]
				}
				return a < b
			})
			give := newHeap(len(u.members), func(a, b int32) bool {
				if u.load[a] != u.load[b] {
					return u.load[a] > u.load[b]
				}
				return a < b
			})
			for _, mi := range subs {
				recv.push(mi)
				if len(mine[mi]) > 0 {
					give.push(mi)
				}
			}
			for give.len() > 0 {
				d, r := give.top(), recv.top()
				if u.load[d]-u.load[r] < 2 {
					break
				}
				ps := mine[d]
				k := len(ps) - 1
				if u.rackAware {
					for i := len(ps) - 1; i >= 0; i-- {
						if u.rackMatch(r, ps[i]) && !u.rackMatch(d, ps[i]) {
							k = i
							break
						}
					}
				}
				g := ps[k]
				mine[d] = append(ps[:k], ps[k+1:]...)
				u.owners[g] = r
				u.load[d]--
				u.load[r]++
				mine[r] = append(mine[r], g)
				moved = true
				if len(mine[d]) == 0 {
					give.remove(d)
				} else {
					give.fix(d)
				}
				if give.has(r) {
					give.fix(r)
				} else {
					give.push(r)
				}
				recv.fix(d)
				recv.fix(r)
			}
			// owned is only read per topic range; refresh the ranges this
			// topic changed.
			for mi, ps := range mine {
				owned[mi] = mergeRange(owned[mi], base, base+n, ps)
			}
		}
		if !moved {
			return
		}
	}
}

// chains moves partitions along paths of members: the first gives a
// partition of one topic to the second, which gives a partition of another
// topic to the third, and so on. Only the two ends change load, so a path
// from a member to one with at least two fewer partitions narrows a gap that
// no single move can. Each path lowers the sum of squared loads, so the loop
// ends; when it does, no member reaches one two below it, which implies
// the per-topic balance above.
func (u *uniform) chains() {
	m, nt := len(u.members), len(u.topics)
	if m < 3 {
		return
	}
	mine := make([]map[int32][]int32, nt)
	for i := range mine {
		mine[i] = map[int32][]int32{}
	}
	for g, o := range u.owners {
		if o >= 0 {
			ti := u.topicOf(int32(g))
			mine[ti][o] = append(mine[ti][o], int32(g))
		}
	}
	via := make([]int32, m) // member → the member it received from on the path
	viaTopic := make([]int32, m)
	seen := make([]bool, m)
	expanded := make([]bool, nt)
	order := make([]int32, m)
	var queue []int32
	for {
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int {
			if u.load[a] != u.load[b] {
				return int(u.load[b] - u.load[a])
			}
			return int(a - b)
		})
		least := u.load[order[m-1]]
		improved := false
		// One pass tries each member, most loaded first, for as long as it
		// finds paths; loads change under the order, so passes repeat until
		// one finds nothing. least may go stale low: it only skips members
		// that cannot help.
		for _, d := range order {
			for u.load[d]-least >= 2 {
				best := u.reach(d, mine, via, viaTopic, seen, expanded, &queue)
				if best < 0 || u.load[d]-u.load[best] < 2 {
					break
				}
				for b := best; b != d; b = via[b] {
					a, ti := via[b], viaTopic[b]
					ps := mine[ti][a]
					g := ps[len(ps)-1]
					mine[ti][a] = ps[:len(ps)-1]
					mine[ti][b] = append(mine[ti][b], g)
					u.owners[g] = b
				}
				u.load[d]--
				u.load[best]++
				improved = true
			}
		}
		if !improved {
			return
		}
	}
}

// reach searches breadth first from d along "owns a partition of a topic the
// next member subscribes to" and returns the least loaded member reached (-1
// none), with via and viaTopic holding the path back to d.
func (u *uniform) reach(d int32, mine []map[int32][]int32, via, viaTopic []int32, seen, expanded []bool, queue *[]int32) int32 {
	clear(seen)
	clear(expanded)
	seen[d] = true
	q := append((*queue)[:0], d)
	best := int32(-1)
	for qi := 0; qi < len(q); qi++ {
		a := q[qi]
		for _, ti := range u.subs[a] {
			if expanded[ti] || len(mine[ti][a]) == 0 {
				continue
			}
			expanded[ti] = true
			for _, b := range u.byTopic[ti] {
				if seen[b] {
					continue
				}
				seen[b] = true
				via[b], viaTopic[b] = a, ti
				q = append(q, b)
				if best < 0 || u.load[b] < u.load[best] {
					best = b
				}
			}
		}
	}
	*queue = q
	return best
}

// mergeRange replaces the [lo,hi) part of sorted ps with sorted(repl).
func mergeRange(ps []int32, lo, hi int32, repl []int32) []int32 {
	a, _ := slices.BinarySearch(ps, lo)
	b, _ := slices.BinarySearch(ps, hi)
	r := slices.Clone(repl)
	slices.Sort(r)
	out := make([]int32, 0, len(ps)-(b-a)+len(r))
	out = append(out, ps[:a]...)
	out = append(out, r...)
	return append(out, ps[b:]...)
}

// heap is a binary heap of member indexes that can re-sift a member whose
// load changed.
type heap struct {
	items []int32
	pos   []int32 // member index → position in items, -1 absent
	less  func(a, b int32) bool
}

func newHeap(members int, less func(a, b int32) bool) *heap {
	h := &heap{pos: make([]int32, members), less: less}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *heap) len() int         { return len(h.items) }
func (h *heap) top() int32       { return h.items[0] }
func (h *heap) has(m int32) bool { return h.pos[m] >= 0 }

func (h *heap) push(m int32) {
	h.items = append(h.items, m)
	h.pos[m] = int32(len(h.items) - 1)
	h.up(len(h.items) - 1)
}

func (h *heap) remove(m int32) {
	i := int(h.pos[m])
	last := len(h.items) - 1
	h.swap(i, last)
	h.items = h.items[:last]
	h.pos[m] = -1
	if i < last {
		h.down(i)
		h.up(i)
	}
}

func (h *heap) fix(m int32) {
	if i := h.pos[m]; i >= 0 {
		h.down(int(i))
		h.up(int(h.pos[m]))
	}
}

func (h *heap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = int32(i)
	h.pos[h.items[j]] = int32(j)
}

func (h *heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *heap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			return
		}
		h.swap(i, c)
		i = c
	}
}
