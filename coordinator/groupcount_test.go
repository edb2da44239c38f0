package coordinator

import (
	"sync"
	"testing"
)

func TestGroupCounts(t *testing.T) {
	c := newGroupCounts(3)
	c.Set(0, "acme", 2)
	c.Set(1, "acme", 5)
	c.Set(2, "globex", 7)
	if got := c.Others(0, "acme"); got != 5 {
		t.Fatalf("acme beside shard 0: %d, want 5", got)
	}
	if got := c.Others(2, "acme"); got != 7 {
		t.Fatalf("acme beside shard 2: %d, want 7", got)
	}
	c.reset(1)
	if got := c.Others(0, "acme"); got != 0 {
		t.Fatalf("after shard 1's reset: %d, want 0", got)
	}
	c.Set(7, "acme", 100) // a shard the coordinator does not have: ignored
	if got := c.Others(0, "acme"); got != 0 {
		t.Fatalf("after an out-of-range shard: %d", got)
	}
	// Shards write their own slots concurrently (run with -race).
	var wg sync.WaitGroup
	for s := range 3 {
		wg.Go(func() {
			for i := range 1000 {
				c.Set(uint16(s), "busy", i)
				_ = c.Others(uint16(s), "busy")
			}
		})
	}
	wg.Wait()
	if got := c.Others(3, "busy"); got != 3*999 {
		t.Fatalf("busy: %d, want %d", got, 3*999)
	}
}
