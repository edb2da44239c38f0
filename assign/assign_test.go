package assign

import (
	"fmt"
	"reflect"
	"testing"
)

func topics(counts map[string]int32) map[string]Topic {
	out := map[string]Topic{}
	for t, n := range counts {
		out[t] = Topic{Partitions: n}
	}
	return out
}

func members(n int, subs ...string) []Member {
	out := make([]Member, n)
	for i := range out {
		out[i] = Member{ID: fmt.Sprintf("m%02d", i), Topics: subs}
	}
	return out
}

func TestRangeCoPartitions(t *testing.T) {
	g := Group{Members: members(2, "a", "b"), Topics: topics(map[string]int32{"a": 3, "b": 3})}
	got := Range{}.Assign(g)
	want := Assignment{
		"m00": {"a": {0, 1}, "b": {0, 1}},
		"m01": {"a": {2}, "b": {2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRangeStaticMembersFirst(t *testing.T) {
	g := Group{
		Members: []Member{
			{ID: "a-dynamic", Topics: []string{"t"}},
			{ID: "z", InstanceID: "i1", Topics: []string{"t"}},
			{ID: "b", InstanceID: "i2", Topics: []string{"t"}},
		},
		Topics: topics(map[string]int32{"t": 5}),
	}
	got := Range{}.Assign(g)
	want := Assignment{
		"z":         {"t": {0, 1}},
		"b":         {"t": {2, 3}},
		"a-dynamic": {"t": {4}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRangeHeterogeneous(t *testing.T) {
	g := Group{
		Members: []Member{
			{ID: "m1", Topics: []string{"a"}},
			{ID: "m2", Topics: []string{"a", "b"}},
			{ID: "m3", Topics: []string{"b", "missing"}},
		},
		Topics: topics(map[string]int32{"a": 3, "b": 4}),
	}
	got := Range{}.Assign(g)
	want := Assignment{
		"m1": {"a": {0, 1}},
		"m2": {"a": {2}, "b": {0, 1}},
		"m3": {"b": {2, 3}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUniformEmptyAndUnsubscribed(t *testing.T) {
	if got := (Uniform{}).Assign(Group{}); len(got) != 0 {
		t.Fatalf("empty group: %v", got)
	}
	g := Group{Members: members(2), Topics: topics(map[string]int32{"a": 3})}
	got := Uniform{}.Assign(g)
	want := Assignment{"m00": {}, "m01": {}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUniformKeepsAndRebalances(t *testing.T) {
	// m00 had everything; m01 joins and takes the highest half.
	ms := members(2, "t")
	ms[0].Current = Partitions{"t": {0, 1, 2, 3}}
	got := Uniform{}.Assign(Group{Members: ms, Topics: topics(map[string]int32{"t": 4})})
	want := Assignment{"m00": {"t": {0, 1}}, "m01": {"t": {2, 3}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// A partition claimed twice stays with the first member by id; a
	// partition beyond the topic's end is dropped.
	ms[0].Current = Partitions{"t": {0, 1}}
	ms[1].Current = Partitions{"t": {1, 2, 3, 9}}
	got = Uniform{}.Assign(Group{Members: ms, Topics: topics(map[string]int32{"t": 4})})
	want = Assignment{"m00": {"t": {0, 1}}, "m01": {"t": {2, 3}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUniformHeterogeneous(t *testing.T) {
	// Kafka's example: m1 on a, m2 on a and b, m3 on b.
	g := Group{
		Members: []Member{
			{ID: "m1", Topics: []string{"a"}},
			{ID: "m2", Topics: []string{"a", "b"}},
			{ID: "m3", Topics: []string{"b"}},
		},
		Topics: topics(map[string]int32{"a": 15, "b": 15}),
	}
	got := Uniform{}.Assign(g)
	checkValid(t, g, got)
	checkLocallyBalanced(t, g, got)
	// Balancing topic by topic stops at 9, 10, 11 (Kafka's builder does);
	// moving a chain of partitions m3 → m2 → m1 reaches 10 each.
	for id, ps := range got {
		if n := ps.Count(); n != 10 {
			t.Errorf("%s has %d partitions, want 10: %v", id, n, got)
		}
	}
}

func TestUniformRacks(t *testing.T) {
	// Six partitions, replicas alternating between racks x and y; members in
	// both racks. From scratch every member gets partitions of its rack, in
	// both the homogeneous and the heterogeneous path.
	racks := make([][]string, 6)
	for p := range racks {
		racks[p] = []string{[]string{"x", "y"}[p%2]}
	}
	tp := map[string]Topic{"t": {Partitions: 6, Racks: racks}, "u": {Partitions: 1}}
	for _, hetero := range []bool{false, true} {
		ms := []Member{
			{ID: "a", Rack: "x", Topics: []string{"t"}},
			{ID: "b", Rack: "y", Topics: []string{"t"}},
			{ID: "c", Rack: "x", Topics: []string{"t"}},
		}
		if hetero {
			ms = append(ms, Member{ID: "d", Topics: []string{"u"}})
		}
		g := Group{Members: ms, Topics: tp}
		got := Uniform{}.Assign(g)
		checkValid(t, g, got)
		// Rack y has three partitions but only b, with a quota of two: one
		// partition must leave its rack, and no more.
		off := 0
		for _, m := range ms[:3] {
			for _, p := range got[m.ID]["t"] {
				if racks[p][0] != m.Rack {
					off++
				}
			}
		}
		if off != 1 || len(got["b"]["t"]) != 2 {
			t.Errorf("hetero=%v: %d partitions outside their rack, want 1: %v", hetero, off, got)
		}
	}
	// A member over quota gives up the partition outside its rack.
	ms := []Member{
		{ID: "a", Rack: "x", Topics: []string{"t"}, Current: Partitions{"t": {0, 1, 2, 4}}},
		{ID: "b", Rack: "y", Topics: []string{"t"}, Current: Partitions{"t": {3, 5}}},
	}
	got := Uniform{}.Assign(Group{Members: ms, Topics: tp})
	want := Assignment{"a": {"t": {0, 2, 4}}, "b": {"t": {1, 3, 5}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestByName(t *testing.T) {
	for _, n := range Names() {
		a, ok := ByName(n)
		if !ok || a.Name() != n {
			t.Fatalf("ByName(%q) = %v, %v", n, a, ok)
		}
	}
	if _, ok := ByName("sticky"); ok {
		t.Fatal("unknown assignor found")
	}
}
