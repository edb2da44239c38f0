package cluster

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func counts(owners []int32) map[int32]int {
	c := map[int32]int{}
	for _, o := range owners {
		c[o]++
	}
	return c
}

func moved(a, b []int32) int {
	n := 0
	for u := range a {
		if a[u] != b[u] {
			n++
		}
	}
	return n
}

func none(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = None
	}
	return out
}

// TestBalanceJoin: a fourth node joining three with 48 shards takes
// exactly 12, and every node ends with 12.
func TestBalanceJoin(t *testing.T) {
	three := Balance(none(48), []int32{1, 2, 3})
	for n, c := range counts(three) {
		if c != 16 {
			t.Fatalf("node %d has %d shards of 48 over 3 nodes", n, c)
		}
	}
	four := Balance(three, []int32{1, 2, 3, 4})
	if m := moved(three, four); m != 12 {
		t.Fatalf("%d shards moved when a fourth node joined, want 12", m)
	}
	for n, c := range counts(four) {
		if c != 12 {
			t.Fatalf("node %d has %d shards of 48 over 4 nodes", n, c)
		}
	}
}

// TestBalanceProperties: for random owners and node sets, every live node
// gets ⌊U/N⌋ or ⌈U/N⌉ units, no unit goes to a dead node, a unit whose
// owner is live and kept within its share does not move, the number of
// moves is the minimum, and the result does not depend on the order of
// the live list.
func TestBalanceProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 5000 {
		units := 1 + r.IntN(70)
		var live []int32
		for n := range int32(8) {
			if r.IntN(2) == 0 {
				live = append(live, n)
			}
		}
		owners := make([]int32, units)
		for u := range owners {
			owners[u] = int32(r.IntN(10)) - 1 // None, live, dead
		}
		out := Balance(owners, live)
		if len(live) == 0 {
			if !slices.Equal(out, none(units)) {
				t.Fatalf("iter %d: no live node but %v", iter, out)
			}
			continue
		}
		c := counts(out)
		lo, hi := units/len(live), (units+len(live)-1)/len(live)
		for _, n := range live {
			if c[n] < lo || c[n] > hi {
				t.Fatalf("iter %d: node %d has %d units, want %d..%d (owners %v live %v → %v)", iter, n, c[n], lo, hi, owners, live, out)
			}
		}
		for u, o := range out {
			if !slices.Contains(live, o) {
				t.Fatalf("iter %d: unit %d to %d, not live %v", iter, u, o, live)
			}
		}
		// Minimum moves: a live node keeps min(held, its share) units;
		// with shares given to the nodes holding most, the units that
		// must move are those beyond each node's largest possible share.
		held := map[int32]int{}
		for _, o := range owners {
			if slices.Contains(live, o) {
				held[o]++
			}
		}
		byHeld := slices.Clone(live)
		slices.SortStableFunc(byHeld, func(a, b int32) int { return held[b] - held[a] })
		keep := 0
		for i, n := range byHeld {
			share := lo
			if i < units%len(live) {
				share = hi
			}
			keep += min(held[n], share)
		}
		if got := units - countSame(owners, out); got != units-keep {
			t.Fatalf("iter %d: %d units moved, the minimum is %d (owners %v live %v → %v)", iter, got, units-keep, owners, live, out)
		}
		shuffled := slices.Clone(live)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := Balance(owners, shuffled); !slices.Equal(again, out) {
			t.Fatalf("iter %d: order of live changed the result: %v vs %v", iter, out, again)
		}
	}
}

func countSame(a, b []int32) int {
	n := 0
	for u := range a {
		if a[u] == b[u] {
			n++
		}
	}
	return n
}

// TestPlanWarmMove: a unit moving to a new node keeps its owner, with
// Next set, until the target is ready (or forced); a dead owner's units
// move at once; a draining node's units move warm.
func TestPlanWarmMove(t *testing.T) {
	a, changed := Plan([]int{4}, Assignment{}, []int32{1}, nil, nil, nil)
	if !changed || !slices.Equal(a.Owner, []int32{1, 1, 1, 1}) || !slices.Equal(a.Next, none(4)) || a.Epoch != 1 {
		t.Fatalf("first plan: %+v changed=%v", a, changed)
	}
	if _, changed := Plan([]int{4}, a, []int32{1}, nil, nil, nil); changed {
		t.Fatal("the same input changed the plan")
	}
	// Node 2 joins: two units move warm.
	b, _ := Plan([]int{4}, a, []int32{1, 2}, nil, nil, nil)
	if !slices.Equal(b.Owner, []int32{1, 1, 1, 1}) || !slices.Equal(b.Next, []int32{None, None, 2, 2}) {
		t.Fatalf("join: %+v", b)
	}
	// Node 2 is ready for unit 2: it flips; unit 3 waits.
	c, _ := Plan([]int{4}, b, []int32{1, 2}, nil, map[int][]int32{2: {2}, 3: {1}}, nil)
	if !slices.Equal(c.Owner, []int32{1, 1, 2, 1}) || !slices.Equal(c.Next, []int32{None, None, None, 2}) {
		t.Fatalf("ready: %+v", c)
	}
	// Forced after the warm timeout.
	d, _ := Plan([]int{4}, c, []int32{1, 2}, nil, nil, map[int]bool{3: true})
	if !slices.Equal(d.Owner, []int32{1, 1, 2, 2}) || !slices.Equal(d.Next, none(4)) {
		t.Fatalf("forced: %+v", d)
	}
	// Node 1 drains: its units move warm to 2.
	e, _ := Plan([]int{4}, d, []int32{1, 2}, []int32{1}, nil, nil)
	if !slices.Equal(e.Owner, []int32{1, 1, 2, 2}) || !slices.Equal(e.Next, []int32{2, 2, None, None}) {
		t.Fatalf("drain: %+v", e)
	}
	// Node 1 dies mid-move: its units go to 2 at once.
	f, _ := Plan([]int{4}, e, []int32{2}, nil, nil, nil)
	if !slices.Equal(f.Owner, []int32{2, 2, 2, 2}) || !slices.Equal(f.Next, none(4)) {
		t.Fatalf("death: %+v", f)
	}
	// The last node drains: nobody to move to, it keeps serving.
	g, changed := Plan([]int{4}, f, []int32{2}, []int32{2}, nil, nil)
	if changed || !slices.Equal(g.Owner, []int32{2, 2, 2, 2}) {
		t.Fatalf("last drain: %+v changed=%v", g, changed)
	}
}

// TestReconcile: a node loads what it owns, unloads what it does not,
// preloads what moves to it, and serves nothing while suspended.
func TestReconcile(t *testing.T) {
	a := Assignment{Owner: []int32{1, 2, 1, 2}, Next: []int32{None, 1, 2, None}}
	act := Reconcile(a, 1, map[int]bool{0: true, 3: true}, nil, false)
	if !slices.Equal(act.Load, []int{2}) || !slices.Equal(act.Unload, []int{3}) || !slices.Equal(act.Preload, []int{1}) {
		t.Fatalf("%+v", act)
	}
	act = Reconcile(a, 1, map[int]bool{0: true}, map[int]bool{1: true}, false)
	if len(act.Preload) != 0 {
		t.Fatalf("preloads a warmed unit again: %+v", act)
	}
	act = Reconcile(a, 1, map[int]bool{0: true, 2: true}, nil, true)
	if len(act.Load)+len(act.Preload) != 0 || !slices.Equal(act.Unload, []int{0, 2}) {
		t.Fatalf("suspended: %+v", act)
	}
}

// TestPlanReadyOnlyForTheAnnouncedMove: a node's readiness flips a unit
// only for a move already announced to it (cur.Next is that node); a
// move to a new target records the epoch it was announced at (Since),
// which is what the Member checks readiness against.
func TestPlanReadyOnlyForTheAnnouncedMove(t *testing.T) {
	cur := Assignment{Epoch: 7, Owner: []int32{1, 1}, Next: []int32{None, None}, Since: []int64{0, 0}}
	// Node 2 joins; it says ready for unit 1 before the move is even
	// announced (a stale ready key of an earlier move): no flip.
	a, _ := Plan([]int{2}, cur, []int32{1, 2}, nil, map[int][]int32{1: {2}}, nil)
	if !slices.Equal(a.Owner, []int32{1, 1}) || !slices.Equal(a.Next, []int32{None, 2}) || !slices.Equal(a.Since, []int64{0, 8}) {
		t.Fatalf("announce: %+v", a)
	}
	// Now it counts.
	b, _ := Plan([]int{2}, a, []int32{1, 2}, nil, map[int][]int32{1: {2}}, nil)
	if !slices.Equal(b.Owner, []int32{1, 2}) || !slices.Equal(b.Next, []int32{None, None}) || !slices.Equal(b.Since, []int64{0, 0}) {
		t.Fatalf("flip: %+v", b)
	}
}
