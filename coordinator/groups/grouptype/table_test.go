package grouptype

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTableModel: the registry's table holds what a map of the same keys
// holds, through random puts and removes of keys many of which split one
// string differently between tenant and name (("ab", "c"), ("a", "bc")),
// or are empty, as it grows past several doublings and shrinks back
// through removes (backward shifts) in long runs of colliding slots.
// Every key is looked up after every step that could move it, and a
// range yields each entry once.
func TestTableModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { tableModel(t, seed) })
	}
}

func tableModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	// Keys that differ only in where the tenant ends, and a few short
	// ones, including empty tenants and names.
	var keys []Key
	for i := range 1500 {
		s := fmt.Sprintf("g%d", i)
		if i%5 == 0 {
			s = strings.Repeat("ab", i%7)
		}
		for cut := range len(s) + 1 {
			keys = append(keys, Key{s[:cut], s[cut:]})
		}
	}
	keys = dedupe(keys)
	var tb groupTable
	model := map[Key]*Entry{}
	check := func(step int) {
		t.Helper()
		if tb.len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, tb.len(), len(model))
		}
		for _, k := range keys {
			// A key of strings of their own: the table must compare
			// the bytes, not the pointers.
			asked := Key{strings.Clone(k.Tenant), strings.Clone(k.Name)}
			if got, want := tb.get(asked), model[k]; got != want {
				t.Fatalf("step %d: get(%q) = %v, want %v", step, k, got, want)
			}
		}
		seen := map[*Entry]int{}
		for e := range tb.all() {
			seen[e]++
		}
		for k, e := range model {
			if seen[e] != 1 {
				t.Fatalf("step %d: range yielded %q's entry %d times", step, k, seen[e])
			}
		}
		if len(seen) != len(model) {
			t.Fatalf("step %d: range yielded %d entries, want %d", step, len(seen), len(model))
		}
	}
	check(0)
	// Fill past several doublings, empty most of it, fill again: each
	// phase mixes puts and removes, with more of one than the other.
	step, most := 0, 0
	for _, putShare := range []float64{0.9, 0.2, 0.8, 0.5, 0.05} {
		for range 3000 {
			step++
			k := keys[rng.IntN(len(keys))]
			if e := model[k]; e == nil {
				if rng.Float64() < putShare {
					e = &Entry{Key: k}
					tb.put(e)
					model[k] = e
				}
			} else if rng.Float64() >= putShare {
				tb.remove(e)
				delete(model, k)
			}
			if step%97 == 0 {
				check(step)
			}
		}
		check(step)
		most = max(most, len(tb.slots))
	}
	if most < 2048 {
		t.Fatalf("the table grew to %d slots only", most)
	}
	// Removing an entry the table does not hold, even one whose key it
	// holds in another entry, changes nothing.
	for k, e := range model {
		tb.remove(&Entry{Key: k})
		if tb.get(k) != e {
			t.Fatalf("removing a stranger of key %q dropped its entry", k)
		}
		break
	}
	tb.remove(&Entry{Key: Key{"no such", "group"}})
	check(step + 1)
}

// dedupe drops repeated keys, keeping the first of each.
func dedupe(keys []Key) []Key {
	seen := map[Key]bool{}
	out := keys[:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// TestTableRangeChanged: adding or removing an entry while ranging over
// the table panics rather than skip entries or yield some twice.
func TestTableRangeChanged(t *testing.T) {
	var tb groupTable
	for i := range 10 {
		tb.put(&Entry{Key: Key{"", fmt.Sprint(i)}})
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic when an entry came while ranging")
		}
	}()
	for range tb.all() {
		tb.put(&Entry{Key: Key{"new", "group"}})
	}
}
