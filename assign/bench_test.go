package assign

import (
	"fmt"
	"testing"
)

// benchGroup is m members all subscribed to one topic of p partitions.
func benchGroup(m int, p int32) Group {
	g := Group{Topics: map[string]Topic{"t": {Partitions: p}}}
	for i := range m {
		g.Members = append(g.Members, Member{ID: fmt.Sprintf("member-%05d", i), Topics: []string{"t"}})
	}
	return g
}

// BenchmarkUniform measures one target-assignment computation at the issue's
// scale, 1,000 members × 10,000 partitions: from nothing (every member new),
// after one member joins a balanced group, and with mixed subscriptions.
func BenchmarkUniform(b *testing.B) {
	const members, partitions = 1000, 10000
	b.Run("join-from-empty", func(b *testing.B) {
		g := benchGroup(members, partitions)
		for b.Loop() {
			Uniform{}.Assign(g)
		}
	})
	b.Run("scale-out-1000-to-1001", func(b *testing.B) {
		g := benchGroup(members, partitions)
		g = withCurrent(g, Uniform{}.Assign(g))
		g.Members = append(g.Members, Member{ID: "member-new", Topics: []string{"t"}})
		var moved int
		for b.Loop() {
			out := Uniform{}.Assign(g)
			moved = 0
			for _, m := range g.Members {
				moved += max(0, m.Current.Count()-out[m.ID].Count())
			}
		}
		b.ReportMetric(float64(moved), "moved")
	})
	b.Run("mixed-subscriptions", func(b *testing.B) {
		// Ten topics of 1,000 partitions; member i subscribes to topics
		// i%10 and (i+1)%10.
		g := Group{Topics: map[string]Topic{}}
		for t := range 10 {
			g.Topics[fmt.Sprintf("t%d", t)] = Topic{Partitions: partitions / 10}
		}
		for i := range members {
			g.Members = append(g.Members, Member{
				ID:     fmt.Sprintf("member-%05d", i),
				Topics: []string{fmt.Sprintf("t%d", i%10), fmt.Sprintf("t%d", (i+1)%10)},
			})
		}
		for b.Loop() {
			Uniform{}.Assign(g)
		}
	})
}

// BenchmarkRange is Range at the same scale.
func BenchmarkRange(b *testing.B) {
	g := benchGroup(1000, 10000)
	for b.Loop() {
		Range{}.Assign(g)
	}
}
