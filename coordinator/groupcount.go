package coordinator

import (
	"sync"
	"sync/atomic"

	"github.com/cohort-dev/cohort/coordinator/groups"
)

// groupCounts is the count of each tenant's groups in each shard, for the
// organisations' max_groups (groups/limits.go): each shard writes its own
// slot and reads the others'. Safe for concurrent use.
type groupCounts struct {
	shards int
	m      sync.Map // tenant → []atomic.Int64, one slot per shard
}

var _ groups.GroupCounter = (*groupCounts)(nil)

func newGroupCounts(shards int) *groupCounts { return &groupCounts{shards: shards} }

func (c *groupCounts) slots(tenant string) []atomic.Int64 {
	if v, ok := c.m.Load(tenant); ok {
		return v.([]atomic.Int64)
	}
	v, _ := c.m.LoadOrStore(tenant, make([]atomic.Int64, c.shards))
	return v.([]atomic.Int64)
}

// Set publishes shard's count of tenant's groups.
func (c *groupCounts) Set(shard uint16, tenant string, n int) {
	if int(shard) < c.shards {
		c.slots(tenant)[shard].Store(int64(n))
	}
}

// reset forgets shard's counts: it is unloaded, or loads again from the
// store.
func (c *groupCounts) reset(shard uint16) {
	if int(shard) >= c.shards {
		return
	}
	c.m.Range(func(_, v any) bool {
		v.([]atomic.Int64)[shard].Store(0)
		return true
	})
}

// Others is tenant's groups in every shard but shard.
func (c *groupCounts) Others(shard uint16, tenant string) int {
	n := int64(0)
	s := c.slots(tenant)
	for i := range s {
		if i != int(shard) {
			n += s[i].Load()
		}
	}
	return int(n)
}
