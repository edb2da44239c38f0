package grouptype

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/machine"
)

// TestSortedKept: Sorted is made once and kept until an entry comes or
// goes; ranging over it while one does is safe, and the next call sees
// the change, in order.
func TestSortedKept(t *testing.T) {
	h := NewHost(Config{}, func(machine.Record) error { return nil })
	for _, n := range []string{"c", "a", "b"} {
		h.Register(Key{"", n})
	}
	h.Register(Key{"t", "a"})
	names := func(es []*Entry) string {
		s := ""
		for _, e := range es {
			s += e.Tenant + "/" + e.Name + " "
		}
		return s
	}
	first := h.Sorted()
	if got := names(first); got != "/a /b /c t/a " {
		t.Fatalf("sorted %q", got)
	}
	if again := h.Sorted(); &again[0] != &first[0] {
		t.Error("made again with nothing changed")
	}
	h.Register(Key{"", "a"}) // already there: no change
	if again := h.Sorted(); &again[0] != &first[0] {
		t.Error("made again after registering an existing group")
	}
	for _, e := range first {
		if e.Name == "b" {
			h.Forget(e) // while ranging: first stays as it was
			h.Register(Key{"", "aa"})
		}
	}
	if got := names(first); got != "/a /b /c t/a " {
		t.Errorf("the slice ranged over changed: %q", got)
	}
	if got := names(h.Sorted()); got != "/a /aa /c t/a " {
		t.Errorf("after a group went and another came: %q", got)
	}
}

// TestEntrySize: a registry entry, which every group has (a million on a
// node), stays in the allocator's 80-byte class with its offsets' slot.
func TestEntrySize(t *testing.T) {
	if n := reflect.TypeFor[Entry]().Size(); n > 80 {
		t.Errorf("Entry is %d bytes, want at most 80", n)
	}
}

func byKey(a, b Key) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Name, b.Name))
}

// TestSortedAfterLoad: Sorted is every group in (tenant, name) order
// whatever order a load registered them in: in order (taken as it came,
// with no sort), in two sorted runs (a kind's records, then another's),
// shuffled, or with a group forgotten on the way; and after the load.
func TestSortedAfterLoad(t *testing.T) {
	for _, how := range []string{"in order", "two runs", "shuffled", "one forgotten"} {
		t.Run(how, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var keys []Key
			for i := range 300 {
				keys = append(keys, Key{fmt.Sprintf("t%d", i%3), fmt.Sprintf("g%04d", i)})
			}
			want := slices.Clone(keys)
			slices.SortFunc(want, byKey)
			order := slices.Clone(want)
			switch how {
			case "two runs":
				order = append(slices.Clone(want[150:]), want[:150]...)
			case "shuffled":
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			h := NewHost(Config{}, func(machine.Record) error { return nil })
			for _, k := range order {
				h.Register(k)
			}
			if how == "one forgotten" {
				// And another registered: as many groups as came.
				h.Forget(h.Get(want[10]))
				later := Key{"t2", "g9999"}
				h.Register(later)
				want = append(slices.Delete(want, 10, 11), later)
			}
			check := func(when string) {
				t.Helper()
				var got []Key
				for _, e := range h.Sorted() {
					got = append(got, e.Key)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: Sorted %v\nwant %v", when, got, want)
				}
			}
			check("loading")
			h.SetLoaded()
			extra := Key{"t0", "g0000a"}
			h.Register(extra)
			want = append(want, extra)
			slices.SortFunc(want, byKey)
			check("after the load, a group more")
		})
	}
}
