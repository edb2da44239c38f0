package bench

// What observability costs on the hot paths: the commit and heartbeat
// benchmarks of groups_test.go, against nodes that differ only in what
// observes them.

import (
	"context"
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discardSpans is a span exporter that drops what it is given: the spans
// still go through the SDK's batch processor, so that what is measured is
// Cohort's and the SDK's cost, not a collector's.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// observeTargets are the variants: nothing observing (no admin listener,
// so no metrics, and no tracing; the log below DEBUG wants no request
// events), Prometheus metrics (what `cohort serve` runs by default), and
// metrics with tracing keeping every trace or 1% of them.
func observeTargets(groups coordinator.Config) []groupTarget {
	ratio := func(r float64) *float64 { return &r }
	variants := []struct {
		name string
		cfg  node.Config
	}{
		{"off", node.Config{}},
		{"metrics", node.Config{HTTPListen: "127.0.0.1:0"}},
		{"metrics+trace100", node.Config{HTTPListen: "127.0.0.1:0", TraceExporter: discardSpans{}, TraceSampleRatio: ratio(1)}},
		{"metrics+trace1", node.Config{HTTPListen: "127.0.0.1:0", TraceExporter: discardSpans{}, TraceSampleRatio: ratio(0.01)}},
	}
	var out []groupTarget
	for _, v := range variants {
		cfg := v.cfg
		cfg.Groups = groups
		out = append(out, groupTarget{name: v.name, cohort: true, start: func(b *testing.B) string {
			return testkit.StartNode(b, cfg).KafkaAddr()
		}})
	}
	return out
}

// BenchmarkObserveCost runs BenchmarkCommit's 64 committers and
// BenchmarkHeartbeat's 10,000 members against each variant. -count
// repeats each variant back to back, so a machine whose load drifts
// favours some; BENCHMARKS.md runs one variant per process, in turn.
//
// Metrics: those of the benchmarks they run; cpu-us/commit and
// cpu-us/heartbeat are the steadiest on a shared machine.
func BenchmarkObserveCost(b *testing.B) {
	b.Run("commit/committers=64", func(b *testing.B) {
		for _, tg := range observeTargets(coordinator.Config{}) {
			b.Run(tg.name, func(b *testing.B) { benchCommit(b, tg, 64) })
		}
	})
	b.Run("heartbeat/members=10000", func(b *testing.B) {
		for _, tg := range observeTargets(quiet50ms) {
			b.Run(tg.name, func(b *testing.B) { benchHeartbeat(b, tg) })
		}
	})
}
