package grouptype

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/internal/memtest"
)

// registryKeys returns n keys over a few tenants, named as a load names
// them, and the same keys in strings of their own, as a request's frame
// brings them (a lookup compares the bytes, not the pointers).
func registryKeys(n int) (keys, asked []Key) {
	keys, asked = make([]Key, n), make([]Key, n)
	for i := range keys {
		keys[i] = Key{fmt.Sprintf("tenant-%d", i%4), fmt.Sprintf("group-%07d", i)}
		asked[i] = Key{strings.Clone(keys[i].Tenant), strings.Clone(keys[i].Name)}
	}
	return keys, asked
}

// TestRegistryBytes: the registry's own share of a quiet group, its
// entry and names aside, is a few bytes (issue 34: a node may hold a
// million groups, 62,500 in each of 16 shards). The keys are built
// outside the measure and the entries' 80 bytes taken off; the touched
// list Register grows is dropped (TouchAll) as an inspect of changes
// would take it, and the load's order of the groups as the load ends
// (SetLoaded).
func TestRegistryBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	for _, n := range []int{62_500, 200_000} {
		keys, _ := registryKeys(n)
		before := memtest.HeapAlloc()
		h := NewHost(Config{}, func(machine.Record) error { return nil })
		for _, k := range keys {
			h.Register(k)
		}
		h.TouchAll()
		h.SetLoaded() // as a load ends: its order of the groups goes
		after := memtest.HeapAlloc()
		runtime.KeepAlive(h)
		runtime.KeepAlive(keys)
		entry := reflect.TypeFor[Entry]().Size() // 80, a size class (TestEntrySize)
		per := float64(int64(after)-int64(before))/float64(n) - float64(entry)
		t.Logf("%.1f bytes a group besides its %d-byte entry, at %d groups", per, entry, n)
		const most = 24
		if per > most {
			t.Errorf("%.1f bytes a group besides its entry at %d groups, want at most %d", per, n, most)
		}
	}
}

// BenchmarkRegistryLookup is the lookup every request and timer of a
// group starts with (OffsetCommit, Heartbeat), in a shard of 100,000
// groups: of a group it holds (hit) and of one it does not (miss, as a
// new group's first request or a load's first record of it).
func BenchmarkRegistryLookup(b *testing.B) {
	const n = 100_000
	keys, asked := registryKeys(2 * n)
	h := NewHost(Config{}, func(machine.Record) error { return nil })
	for _, k := range keys[:n] {
		h.Register(k)
	}
	h.TouchAll()
	for _, c := range []struct {
		name  string
		asked []Key
		found bool
	}{{"hit", asked[:n], true}, {"miss", asked[n:], false}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				// A stride through the keys, so that successive
				// lookups land far apart as a shard's requests do.
				i = (i + 7919) % n
				k := c.asked[i]
				if got := h.Lookup(k.Tenant, k.Name); (got != nil) != c.found {
					b.Fatalf("lookup of %v: %v", k, got)
				}
			}
		})
	}
}
