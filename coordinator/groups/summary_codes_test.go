package groups

import (
	"reflect"
	"testing"
)

// TestSummarySize: a Summary, which a reading holds for each group (a
// million on a node), stays at most 136 bytes.
func TestSummarySize(t *testing.T) {
	if n := reflect.TypeFor[Summary]().Size(); n > 136 {
		t.Errorf("Summary is %d bytes, want at most 136", n)
	}
}

// TestGroupStates: every GroupType and GroupState spells a name of its
// own, which stateOf reads back; the zero ones spell none.
func TestGroupStates(t *testing.T) {
	if GroupType(0).String() != "" || GroupState(0).String() != "" {
		t.Errorf("zero type %q, zero state %q, want none", GroupType(0), GroupState(0))
	}
	types := map[string]bool{}
	for ty := ClassicGroup; ty <= ShareGroup; ty++ {
		if name := ty.String(); name == "" || types[name] {
			t.Errorf("type %d spells %q", ty, name)
		}
		types[ty.String()] = true
	}
	for s := StateEmpty; s < stateEnd; s++ {
		if got, ok := stateOf(s.String()); !ok || got != s || s.String() == "" {
			t.Errorf("state %d spells %q, read back as %d, %v", s, s, got, ok)
		}
	}
	if got, ok := stateOf(""); ok {
		t.Errorf("no state read as %d", got)
	}
}
