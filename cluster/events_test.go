package cluster

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cohort-dev/cohort/observe"
)

// TestNodeEvents: the diff of two reads of the registrations.
func TestNodeEvents(t *testing.T) {
	n := func(id int32, lease int64, draining bool) Node {
		return Node{ID: id, Kafka: fmt.Sprintf("h:%d", id), Lease: lease, Draining: draining}
	}
	reg := func(ns ...Node) map[int32]Node {
		m := map[int32]Node{}
		for _, x := range ns {
			m[x.ID] = x
		}
		return m
	}
	type ev struct {
		kind observe.ClusterEventKind
		node int32
	}
	steps := []struct {
		name  string
		nodes map[int32]Node
		want  []ev
	}{
		{"first read: all joined, a draining one draining too", reg(n(1, 10, false), n(2, 20, false), n(3, 30, true)),
			[]ev{{observe.NodeJoined, 1}, {observe.NodeJoined, 2}, {observe.NodeJoined, 3}, {observe.NodeDraining, 3}}},
		{"nothing changed", reg(n(1, 10, false), n(2, 20, false), n(3, 30, true)), nil},
		{"3 left after draining, 2 lost, 4 joined", reg(n(1, 10, false), n(4, 40, false)),
			[]ev{{observe.NodeLost, 2}, {observe.NodeLost, 3}, {observe.NodeJoined, 4}}},
		{"2 back", reg(n(1, 10, false), n(2, 21, false), n(4, 40, false)), []ev{{observe.NodeRejoined, 2}}},
		{"1 draining", reg(n(1, 10, true), n(2, 21, false), n(4, 40, false)), []ev{{observe.NodeDraining, 1}}},
		{"4 registered again under a new lease between reads", reg(n(1, 10, true), n(2, 21, false), n(4, 41, false)),
			[]ev{{observe.NodeLost, 4}, {observe.NodeRejoined, 4}}},
		{"1 back under a new lease, not draining", reg(n(1, 11, false), n(2, 21, false), n(4, 41, false)),
			[]ev{{observe.NodeLost, 1}, {observe.NodeRejoined, 1}}},
		{"all gone", reg(), []ev{{observe.NodeLost, 1}, {observe.NodeLost, 2}, {observe.NodeLost, 4}}},
	}
	seen := map[int32]bool{}
	var prev map[int32]Node
	for _, s := range steps {
		evs := nodeEvents(prev, s.nodes, seen, 2)
		var got []ev
		for _, e := range evs {
			got = append(got, ev{e.Kind, e.Node})
			if e.Self != (e.Node == 2) {
				t.Errorf("%s: %v of node %d: Self %v", s.name, e.Kind, e.Node, e.Self)
			}
			if e.Kafka != fmt.Sprintf("h:%d", e.Node) {
				t.Errorf("%s: %v of node %d: Kafka %q", s.name, e.Kind, e.Node, e.Kafka)
			}
			if e.Kind == observe.NodeLost && e.Reason == "" {
				t.Errorf("%s: lost node %d without a reason", s.name, e.Node)
			}
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("%s: got %v, want %v", s.name, got, s.want)
		}
		prev = s.nodes
	}
	if evs := nodeEvents(reg(n(3, 30, true)), reg(), map[int32]bool{}, 1); len(evs) != 1 || evs[0].Reason != "left after draining" {
		t.Errorf("a draining node gone: %+v", evs)
	}
}

// TestNodeCounts: serving and draining registrations, and this node as
// suspended rather than either while it is.
func TestNodeCounts(t *testing.T) {
	nodes := map[int32]Node{1: {ID: 1}, 2: {ID: 2, Draining: true}, 3: {ID: 3}}
	for _, c := range []struct {
		me                int32
		susp              bool
		serving, draining int
	}{{1, false, 2, 1}, {1, true, 1, 1}, {2, true, 2, 0}, {9, true, 2, 1}} {
		s, d, x := nodeCounts(nodes, c.me, c.susp)
		wantX := 0
		if c.susp {
			wantX = 1
		}
		if s != c.serving || d != c.draining || x != wantX {
			t.Errorf("me %d suspended %v: %d serving, %d draining, %d suspended; want %d, %d, %d", c.me, c.susp, s, d, x, c.serving, c.draining, wantX)
		}
	}
}
