package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
)

// brokerIDs is what a member answers Metadata and DescribeCluster with:
// the ids of Member.Brokers.
func brokerIDs(m *cluster.Member) []int32 {
	var ids []int32
	for _, n := range m.Brokers() {
		ids = append(ids, n.ID)
	}
	return ids
}

// brokersCluster starts and stops members on one prefix and checks what
// each answers Metadata with.
type brokersCluster struct {
	t      *testing.T
	ep     []string
	prefix string
	mu     sync.Mutex
	live   map[int32]*node
}

// start joins node id and checks that it lists every live node before
// its loop has run: a node serves Metadata as soon as Run returns (see
// node.Start), so this is its first answer. want are the nodes it must
// list then, itself included.
func (c *brokersCluster) start(id int32, want []int32) *node {
	t := c.t
	t.Helper()
	cfg := nodeConfig(c.prefix, id, nil)
	cfg.Client = etcdtest.NewClient(t, c.ep)
	m, err := cluster.Join(context.Background(), cfg)
	if err != nil {
		t.Fatalf("join node %d: %v", id, err)
	}
	if got := brokerIDs(m); !slices.Equal(got, want) {
		t.Errorf("node %d lists %v once joined; want %v", id, got, want)
	}
	n := &node{id: id, m: m, units: newUnits()}
	m.Run(n.units)
	t.Cleanup(m.Close)
	if got := brokerIDs(m); !slices.Equal(got, want) {
		t.Errorf("node %d lists %v as it starts serving; want %v", id, got, want)
	}
	c.mu.Lock()
	c.live[id] = n
	c.mu.Unlock()
	return n
}

// ids are the live nodes' ids, ascending.
func (c *brokersCluster) ids() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int32
	for id := range c.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// crash stops node id as a kill would: its lease is left to expire.
func (c *brokersCluster) crash(id int32) {
	c.live[id].m.Crash()
	delete(c.live, id)
}

// wait waits until every live node lists exactly the live nodes.
func (c *brokersCluster) wait(within time.Duration, step string) {
	c.t.Helper()
	want := c.ids()
	var last string
	ok := testkit.WaitFor(within, func() bool {
		last = ""
		for _, id := range want {
			if got := brokerIDs(c.live[id].m); !slices.Equal(got, want) {
				last += fmt.Sprintf(" node %d lists %v;", id, got)
			}
		}
		return last == ""
	})
	if !ok {
		c.t.Fatalf("%s: not every node lists %v within %v:%s", step, want, within, last)
	}
}

// TestBrokersListLiveNodes: every node lists every live node (what it
// answers Metadata and DescribeCluster with) from the moment it serves,
// whatever order the nodes start in, and the others list it soon after;
// two nodes started at once, a node restarted on its directory and a
// node gone for good are listed as they are. A node used to list only
// itself until its loop's first read: a client that asked then saw one
// broker, and kept that answer for its metadata max age (5 min).
func TestBrokersListLiveNodes(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	orders := [][]int32{{1, 2, 3}, {1, 3, 2}, {2, 1, 3}, {2, 3, 1}, {3, 1, 2}, {3, 2, 1}}
	for i, order := range orders {
		t.Run(fmt.Sprintf("order %v", order), func(t *testing.T) {
			c := &brokersCluster{t: t, ep: ep, prefix: fmt.Sprintf("/order%d", i), live: map[int32]*node{}}
			for _, id := range order {
				want := append(c.ids(), id)
				slices.Sort(want)
				c.start(id, want)
				c.wait(5*time.Second, fmt.Sprintf("node %d started", id))
			}
			// The last node started restarts on its directory (it takes
			// its registration over), then the first stops for good.
			last, first := order[2], order[0]
			c.crash(last)
			c.start(last, []int32{1, 2, 3})
			c.wait(5*time.Second, fmt.Sprintf("node %d restarted", last))
			c.crash(first)
			c.wait(testTTL+5*time.Second, fmt.Sprintf("node %d gone", first))
			// It comes back.
			c.start(first, []int32{1, 2, 3})
			c.wait(5*time.Second, fmt.Sprintf("node %d back", first))
		})
	}
	t.Run("two at once", func(t *testing.T) {
		c := &brokersCluster{t: t, ep: ep, prefix: "/together", live: map[int32]*node{}}
		c.start(1, []int32{1})
		// Nodes 2 and 3 join together: each lists node 1 and itself as
		// it starts, and the other one if it registered first.
		var wg sync.WaitGroup
		got := map[int32][]int32{}
		var mu sync.Mutex
		for _, id := range []int32{2, 3} {
			wg.Go(func() {
				cfg := nodeConfig(c.prefix, id, nil)
				cfg.Client = etcdtest.NewClient(t, c.ep)
				m, err := cluster.Join(context.Background(), cfg)
				if err != nil {
					t.Errorf("join node %d: %v", id, err)
					return
				}
				n := &node{id: id, m: m, units: newUnits()}
				m.Run(n.units)
				t.Cleanup(m.Close)
				mu.Lock()
				got[id] = brokerIDs(m)
				c.live[id] = n
				mu.Unlock()
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		for id, ids := range got {
			if !slices.Contains(ids, 1) || !slices.Contains(ids, id) {
				t.Errorf("node %d lists %v as it starts serving; want 1 and itself at least", id, ids)
			}
		}
		c.wait(5*time.Second, "nodes 2 and 3 started together")
		// Two stop for good at once.
		c.crash(1)
		c.crash(3)
		c.wait(testTTL+5*time.Second, "nodes 1 and 3 gone")
	})
}
