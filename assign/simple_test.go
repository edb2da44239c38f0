package assign

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// simpleCheck fails unless got is a valid share assignment of g: every
// member listed, partitions sorted and of topics the member subscribes to
// and that exist, every such partition held by ceil(M/P) members of its
// pool (all of them, per topic, or one when there are more partitions
// than members); and, for a homogeneous group, the members' counts within
// one of each other.
func simpleCheck(t *testing.T, g Group, got Assignment) {
	t.Helper()
	if len(got) != len(g.Members) {
		t.Fatalf("%d members in, %d out", len(g.Members), len(got))
	}
	subs := map[string]map[string]bool{}
	subscribers := map[string]int{} // topic → members subscribing
	sameSubs := true
	var first []string
	for i, m := range g.Members {
		subs[m.ID] = map[string]bool{}
		var mine []string
		for _, tp := range m.Topics {
			if info, ok := g.Topics[tp]; ok && info.Partitions > 0 && !subs[m.ID][tp] {
				subs[m.ID][tp] = true
				subscribers[tp]++
				mine = append(mine, tp)
			}
		}
		slices.Sort(mine)
		if i == 0 {
			first = mine
		} else if !slices.Equal(first, mine) {
			sameSubs = false
		}
	}
	holders := map[string]int{}
	counts := map[string]int{}
	for id, ps := range got {
		if _, ok := subs[id]; !ok {
			t.Fatalf("unknown member %s in output", id)
		}
		for tp, parts := range ps {
			if !slices.IsSorted(parts) || len(slices.Compact(slices.Clone(parts))) != len(parts) {
				t.Fatalf("%s %s not sorted or repeated: %v", id, tp, parts)
			}
			if len(parts) > 0 && !subs[id][tp] {
				t.Fatalf("%s got %s/%v without subscribing (or it does not exist)", id, tp, parts)
			}
			for _, p := range parts {
				if p < 0 || p >= g.Topics[tp].Partitions {
					t.Fatalf("%s got %s/%d, which does not exist", id, tp, p)
				}
				holders[fmt.Sprintf("%s/%d", tp, p)]++
				counts[id]++
			}
		}
	}
	// The pools: one of everything when homogeneous, else per topic.
	total := 0
	for tp := range subscribers {
		total += int(g.Topics[tp].Partitions)
	}
	for tp, n := range subscribers {
		P, M := int(g.Topics[tp].Partitions), n
		if sameSubs {
			P, M = total, len(g.Members)
		}
		sharing := (M + P - 1) / P
		for p := range g.Topics[tp].Partitions {
			h := holders[fmt.Sprintf("%s/%d", tp, p)]
			if h != sharing {
				t.Fatalf("%s/%d has %d holders, want %d (P=%d M=%d): %v", tp, p, h, sharing, P, M, got)
			}
		}
	}
	if sameSubs && len(g.Members) > 0 && total > 0 {
		lo, hi := -1, 0
		for _, m := range g.Members {
			c := counts[m.ID]
			if lo < 0 || c < lo {
				lo = c
			}
			hi = max(hi, c)
		}
		if hi-lo > 1 {
			t.Fatalf("homogeneous group unbalanced: counts from %d to %d (%v)", lo, hi, counts)
		}
	}
}

func simpleGroup(rng *rand.Rand, next *int) Group {
	g := Group{Topics: map[string]Topic{}}
	names := []string{"a", "b", "c", "d"}
	for _, n := range names[:1+rng.IntN(len(names))] {
		g.Topics[n] = Topic{Partitions: int32(rng.IntN(9))}
	}
	homogeneous := rng.IntN(2) == 0
	var shared []string
	for n := range g.Topics {
		shared = append(shared, n)
	}
	slices.Sort(shared)
	for range 1 + rng.IntN(12) {
		*next++
		m := Member{ID: fmt.Sprintf("m%03d", *next), Topics: shared}
		if !homogeneous {
			m.Topics = nil
			for _, n := range append(shared, "missing") {
				if rng.IntN(2) == 0 {
					m.Topics = append(m.Topics, n)
				}
			}
		}
		g.Members = append(g.Members, m)
	}
	return g
}

// TestSimpleProperties runs the share assignor over random groups and
// random histories (members joining and leaving, topics growing,
// subscriptions changing) and checks after each step: a valid
// assignment (simpleCheck), the same answer for the same input in any
// order, nothing moved when nothing changed (Simple is a fixed point of
// its own output), and, for a homogeneous group with at least as many
// partitions as members, stickiness: a member keeps what it had, up to its
// new count, and the larger counts go to the members that held more.
func TestSimpleProperties(t *testing.T) {
	seed := *propSeed
	if seed == 0 {
		seed = 932
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	next := 0
	for c := range *propCases {
		g := simpleGroup(rng, &next)
		var prev Assignment
		for step := range 8 {
			if prev != nil {
				g = withCurrent(g, prev)
			}
			got := Simple(g)
			simpleCheck(t, g, got)
			if again := Simple(shuffled(rng, g)); !reflect.DeepEqual(again, got) {
				t.Fatalf("case %d step %d: input order changed the result:\n%v\n%v", c, step, got, again)
			}
			if fixed := Simple(withCurrent(g, got)); !reflect.DeepEqual(fixed, got) {
				t.Fatalf("case %d step %d: not a fixed point of %+v:\n%v\n%v", c, step, g, got, fixed)
			}
			if prev != nil && simpleDisjoint(g, prev) {
				for _, m := range g.Members {
					old, now := prev[m.ID], got[m.ID]
					kept := 0
					for tp, ps := range old {
						for _, p := range ps {
							if slices.Contains(now[tp], p) {
								kept++
							}
						}
					}
					if want := min(old.Count(), now.Count()); kept < want {
						t.Fatalf("case %d step %d: %s kept %d of %v, now %v; want %d", c, step, m.ID, kept, old, now, want)
					}
				}
				// The larger shares go to those that held more, so
				// that the fewest partitions move.
				for _, a := range g.Members {
					for _, b := range g.Members {
						if prev[a.ID].Count() > prev[b.ID].Count() && got[a.ID].Count() < got[b.ID].Count() {
							t.Fatalf("case %d step %d: %s held %d and got %d, %s held %d and got %d", c, step,
								a.ID, prev[a.ID].Count(), got[a.ID].Count(), b.ID, prev[b.ID].Count(), got[b.ID].Count())
						}
					}
				}
			}
			prev = got
			// Change something.
			switch rng.IntN(4) {
			case 0: // a member leaves
				if len(g.Members) > 1 {
					i := rng.IntN(len(g.Members))
					g.Members = slices.Delete(slices.Clone(g.Members), i, i+1)
				}
			case 1: // a member joins, with the first member's subscription
				next++
				// (Ids sort anywhere among the others'.)
				id := fmt.Sprintf("%c%03d", 'a'+rng.IntN(26), next)
				g.Members = append(slices.Clone(g.Members), Member{ID: id, Topics: g.Members[0].Topics})
			case 2: // a topic grows
				var names []string
				for n := range g.Topics {
					names = append(names, n)
				}
				slices.Sort(names)
				n := names[rng.IntN(len(names))]
				g.Topics[n] = Topic{Partitions: g.Topics[n].Partitions + int32(rng.IntN(3))}
			case 3: // nothing
			}
		}
	}
}

// simpleDisjoint reports whether prev gave each existing partition to at
// most one member and g is homogeneous with at least as many partitions
// as members: the case where stickiness is exact.
func simpleDisjoint(g Group, prev Assignment) bool {
	total := int32(0)
	for _, tp := range g.Members[0].Topics {
		total += g.Topics[tp].Partitions
	}
	for _, m := range g.Members {
		if !slices.Equal(m.Topics, g.Members[0].Topics) {
			return false
		}
	}
	for _, tp := range g.Members[0].Topics {
		if _, ok := g.Topics[tp]; !ok {
			return false
		}
	}
	if int(total) < len(g.Members) {
		return false
	}
	seen := map[string]bool{}
	for _, a := range prev {
		for tp, ps := range a {
			for _, p := range ps {
				k := fmt.Sprintf("%s/%d", tp, p)
				if seen[k] {
					return false
				}
				seen[k] = true
			}
		}
	}
	return true
}

// TestSimpleSpread pins small cases: partitions spread over members, and
// members over partitions when there are more of them.
func TestSimpleSpread(t *testing.T) {
	g := Group{Topics: map[string]Topic{"t": {Partitions: 6}}, Members: members(3, "t")}
	got := Simple(g)
	for _, m := range g.Members {
		if got[m.ID].Count() != 2 {
			t.Fatalf("6 partitions over 3 members: %v", got)
		}
	}
	g = Group{Topics: map[string]Topic{"t": {Partitions: 2}}, Members: members(5, "t")}
	got = Simple(g)
	simpleCheck(t, g, got)
	for _, m := range g.Members {
		if got[m.ID].Count() == 0 {
			t.Fatalf("a member of 5 on 2 partitions got nothing: %v", got)
		}
	}
	// One member leaves a balanced group: its partitions go to the others
	// and nobody else's move.
	g = Group{Topics: map[string]Topic{"t": {Partitions: 4}}, Members: members(2, "t")}
	first := Simple(g)
	g = withCurrent(Group{Topics: g.Topics, Members: members(3, "t")}, first)
	second := Simple(g)
	g = withCurrent(Group{Topics: g.Topics, Members: g.Members[:2]}, second)
	third := Simple(g)
	for _, m := range g.Members {
		for _, p := range second[m.ID]["t"] {
			if !slices.Contains(third[m.ID]["t"], p) {
				t.Fatalf("%s lost %d when another member left: %v → %v", m.ID, p, second, third)
			}
		}
	}
	if !reflect.DeepEqual(Simple(Group{}), Assignment{}) {
		t.Fatalf("an empty group: %v", Simple(Group{}))
	}
}
