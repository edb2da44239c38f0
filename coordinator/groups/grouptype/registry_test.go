package grouptype

import (
	"reflect"
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
