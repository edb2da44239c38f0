package cluster_test

import (
	"slices"
	"testing"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/store/memstore"
)

// hosted is a cluster.HostedShards that records its loads.
type hosted struct {
	n      int
	loaded []int
}

func (h *hosted) Shards() int      { return h.n }
func (h *hosted) Load(i int) error { h.loaded = append(h.loaded, i); return nil }
func (h *hosted) Unload(int)       {}
func (h *hosted) Holds(i int) bool { return slices.Contains(h.loaded, i) }

// TestShardsUnitClasses: units 0..S-1 are the group coordinator's
// shards, S the assigner's, then TxnUnits transaction coordinator
// shards, then the share coordinator's; without a share coordinator
// every unit after the assigner's is the transaction coordinator's, as
// before there were share units.
func TestShardsUnitClasses(t *testing.T) {
	co, err := coordinator.Start(coordinator.Config{Shards: 2}, coordinator.Options{Store: memstore.New(memstore.Options{}), Standby: true})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	txn, share := &hosted{n: 2}, &hosted{n: 3}
	s := &cluster.Shards{Coordinator: co, Txn: txn, Share: share, TxnUnits: 2}
	for u := range 8 {
		if err := s.Load(u); err != nil {
			t.Fatalf("load unit %d: %v", u, err)
		}
	}
	if !slices.Equal(co.Held(), []int{0, 1}) || !slices.Equal(txn.loaded, []int{0, 1}) || !slices.Equal(share.loaded, []int{0, 1, 2}) {
		t.Fatalf("group shards %v, transaction shards %v, share shards %v", co.Held(), txn.loaded, share.loaded)
	}
	for u := range 8 {
		if want := u != 2; s.Holds(u) != want { // unit 2: no assigner here
			t.Errorf("Holds(%d) = %v", u, !want)
		}
	}
	// A unit beyond a service's count is owned, not served.
	if err := s.Load(8); err != nil || len(share.loaded) != 3 {
		t.Fatalf("load of unit 8: %v, share shards %v", err, share.loaded)
	}

	old := &hosted{n: 5}
	s = &cluster.Shards{Coordinator: co, Txn: old}
	for u := 3; u < 8; u++ {
		if err := s.Load(u); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(old.loaded, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("without a share coordinator, transaction shards %v", old.loaded)
	}
}

// TestMetaClasses: the leader balances the group coordinator's units,
// the transaction coordinator's and the share coordinator's each on its
// own, and a class a cluster lacks is no class.
func TestMetaClasses(t *testing.T) {
	for _, tc := range []struct {
		m    cluster.Meta
		want []int
	}{
		{cluster.Meta{Units: 17}, []int{17}},
		{cluster.Meta{Units: 17, TxnUnits: 16}, []int{17, 16}},
		{cluster.Meta{Units: 17, TxnUnits: 16, ShareUnits: 16}, []int{17, 16, 16}},
		{cluster.Meta{Units: 17, ShareUnits: 4}, []int{17, 4}},
	} {
		if got := tc.m.Classes(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: classes %v, want %v", tc.m, got, tc.want)
		}
		total := 0
		for _, n := range tc.want {
			total += n
		}
		if tc.m.Total() != total {
			t.Errorf("%+v: total %d, want %d", tc.m, tc.m.Total(), total)
		}
	}
}
