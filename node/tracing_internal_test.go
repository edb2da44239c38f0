package node

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTracingOffIsFree: with no endpoint, no exporter and none of the
// standard variables, a node installs no tracer, and (its log below
// DEBUG, no metrics listener) nothing wants request events, so the wire
// server skips building them. An exporter turns both on; a bad endpoint
// fails the start, saying why.
func TestTracingOffIsFree(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
		os.Unsetenv(k) // restored by t.Setenv
	}
	start := func(cfg Config) (*Node, error) {
		cfg.KafkaListen, cfg.GRPCListen, cfg.HTTPListen, cfg.DataDir = "127.0.0.1:0", "-", "-", t.TempDir()
		n, err := Start(cfg)
		if err == nil {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				n.Shutdown(ctx)
			})
		}
		return n, err
	}
	n, err := start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n.tracing != nil || observe.WantsRequests(n.obs) {
		t.Errorf("no tracing configured: tracer %v, request events wanted %v", n.tracing, observe.WantsRequests(n.obs))
	}

	n, err = start(Config{TraceExporter: tracetest.NewInMemoryExporter()})
	if err != nil {
		t.Fatal(err)
	}
	if n.tracing == nil || !observe.WantsRequests(n.obs) {
		t.Errorf("with an exporter: tracer %v, request events wanted %v", n.tracing, observe.WantsRequests(n.obs))
	}

	if _, err := start(Config{OTLPEndpoint: "collector-without-port"}); err == nil || !strings.Contains(err.Error(), "otlp endpoint") {
		t.Errorf("a bad endpoint: %v", err)
	}
	// The variable alone turns it on (at ratio 0 nothing is sent to
	// the address, where nobody listens).
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	zero := 0.0
	if n, err = start(Config{TraceSampleRatio: &zero}); err != nil {
		t.Fatal(err)
	}
	if n.tracing == nil {
		t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT set: no tracer")
	}
}
