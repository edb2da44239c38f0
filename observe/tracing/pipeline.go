package tracing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"
)

// The standard variables Start reads (the OpenTelemetry SDK environment
// specification); the exporter and the SDK read the others themselves
// (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _INSECURE, OTEL_BSP_*,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
const (
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envSampler        = "OTEL_TRACES_SAMPLER"
	envSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
)

// DefaultSampleRatio is the sample ratio when none is set: 1%, not
// OpenTelemetry's usual 100%. What a coordinator is traced for, its
// rebalances, members and shards, is kept at any ratio above 0; what the
// ratio thins out is its hot paths, a span per heartbeat and per commit.
// Every one of them costs about half as much CPU again as the heartbeat
// itself (BENCHMARKS.md, "The cost of observability"), and a node
// answering 150,000 heartbeats a second would hand a collector 150,000
// spans a second, most of which the batch processor's queue (2048 spans)
// would drop anyway. At 1% the hot paths cost about 1% more CPU and still
// give a steady sample of request latencies. Set 1 to see every request
// of a quiet node.
const DefaultSampleRatio = 0.01

// Config configures Start.
type Config struct {
	// Endpoint is the OTLP/gRPC collector to export to: host:port
	// (plaintext, as to a collector beside the node), or a URL,
	// http://host:port (plaintext) or https://host:port (TLS, the
	// system's roots). Empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
	// OTEL_EXPORTER_OTLP_ENDPOINT; with neither (and no Exporter),
	// tracing is off.
	Endpoint string
	// SampleRatio is the share of traces kept, 0 to 1: of requests and
	// store writes (see Observer), and of gRPC calls whose caller did
	// not decide (see Sampler); rebalance, member and shard spans are
	// kept whenever it is above 0. Nil: OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG if set (see RatioFromEnv), else
	// DefaultSampleRatio.
	SampleRatio *float64
	// Exporter, if set, receives the spans instead of OTLP, through the
	// same batch processor and sampler: for tests and benchmarks. The
	// pipeline's Shutdown shuts it down.
	Exporter sdktrace.SpanExporter
	// Attributes are added to the resource every span carries, after
	// service.name=cohort and before OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES, which win.
	Attributes []attribute.KeyValue
}

// Enabled reports whether cfg turns tracing on: an exporter, an endpoint,
// or one of the standard endpoint variables set.
func (cfg Config) Enabled() bool {
	return cfg.Exporter != nil || cfg.Endpoint != "" || os.Getenv(envTracesEndpoint) != "" || os.Getenv(envEndpoint) != ""
}

// Pipeline is tracing switched on: the SDK's TracerProvider with its
// sampler, batch processor and exporter, and the Observer feeding it.
type Pipeline struct {
	// Observer makes the spans of Cohort's events.
	Observer *Observer
	tp       *sdktrace.TracerProvider
	ratio    float64
}

// Start builds the pipeline cfg describes, or returns nil (and no error)
// when cfg does not turn tracing on (Config.Enabled). The exporter
// connects lazily: a collector that is down loses spans (the batch
// processor drops what it cannot queue, and the SDK's error handler is
// told), it does not stop the node.
func Start(cfg Config) (*Pipeline, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	ratio := DefaultSampleRatio
	if cfg.SampleRatio != nil {
		ratio = *cfg.SampleRatio
	} else if r, ok, err := RatioFromEnv(); err != nil {
		return nil, err
	} else if ok {
		ratio = r
	}
	if !(ratio >= 0 && ratio <= 1) {
		return nil, fmt.Errorf("trace sample ratio %v: must be between 0 and 1", ratio)
	}
	exp := cfg.Exporter
	if exp == nil {
		opts, err := endpointOptions(cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		if exp, err = otlptracegrpc.New(context.Background(), opts...); err != nil {
			return nil, fmt.Errorf("otlp exporter: %w", err)
		}
	}
	attrs := append([]attribute.KeyValue{attribute.String("service.name", "cohort")}, cfg.Attributes...)
	res, err := resource.New(context.Background(),
		resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil && res == nil {
		// A partial resource (a detector failed) is still worth having.
		exp.Shutdown(context.Background())
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(Sampler(ratio)),
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	)
	return &Pipeline{Observer: New(tp, ratio), tp: tp, ratio: ratio}, nil
}

// endpointOptions turns Config.Endpoint into the exporter's options.
func endpointOptions(endpoint string) ([]otlptracegrpc.Option, error) {
	if endpoint == "" {
		return nil, nil // the exporter reads the variables itself
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("otlp endpoint %q: want host:port, http://host:port or https://host:port", endpoint)
		}
		return []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint)}, nil
	}
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return nil, fmt.Errorf("otlp endpoint %q: want host:port, http://host:port or https://host:port: %w", endpoint, err)
	}
	return []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure()}, nil
}

// Ratio is the sample ratio in force.
func (p *Pipeline) Ratio() float64 { return p.ratio }

// TracerProvider is the pipeline's provider, for other instrumentation.
func (p *Pipeline) TracerProvider() trace.TracerProvider { return p.tp }

// GRPCServerHandler instruments a gRPC server (the assignment service):
// a span per call, continuing a caller's W3C traceparent, sampled like
// the rest. Health checks are left out: a load balancer's probes every
// few seconds would bury the calls that matter. It records no metrics:
// the admin listener's Prometheus registry has its own.
func (p *Pipeline) GRPCServerHandler() stats.Handler {
	return otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(p.tp),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()),
		otelgrpc.WithPropagators(propagation.TraceContext{}),
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
	)
}

// Shutdown exports what the batch processor holds and stops the exporter;
// ctx bounds how long that may take.
func (p *Pipeline) Shutdown(ctx context.Context) error {
	return p.tp.Shutdown(ctx)
}

// Sampler returns the sampler of a pipeline at a ratio (0 to 1). Cohort's
// own spans ("cohort.") are kept: the Observer decided before starting
// them (see Observer). Anything else, the gRPC assignment service's calls,
// is sampled parent-based (a caller's decision, from its traceparent,
// stands), and a call without a parent starts a trace kept with that
// probability, by trace id.
func Sampler(ratio float64) sdktrace.Sampler {
	return sampler{base: sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))}
}

type sampler struct{ base sdktrace.Sampler }

func (s sampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if strings.HasPrefix(p.Name, cohortPrefix) {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
	}
	return s.base.ShouldSample(p)
}

func (s sampler) Description() string {
	return "CohortSampler{cohort.* as decided," + s.base.Description() + "}"
}

// RatioFromEnv reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as a
// sample ratio; ok is false when the sampler is not set. always_on is 1,
// always_off 0, traceidratio the argument (1 if empty); each with or
// without "parentbased_": Cohort's sampler is always parent-based (its
// Kafka requests carry no trace context, so only gRPC callers' can
// differ). Other samplers (jaeger_remote, xray) are an error.
func RatioFromEnv() (ratio float64, ok bool, err error) {
	v := strings.TrimSpace(os.Getenv(envSampler))
	if v == "" {
		return 0, false, nil
	}
	switch strings.TrimPrefix(strings.ToLower(v), "parentbased_") {
	case "always_on":
		return 1, true, nil
	case "always_off":
		return 0, true, nil
	case "traceidratio":
		arg := strings.TrimSpace(os.Getenv(envSamplerArg))
		if arg == "" {
			return 1, true, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			return 0, false, fmt.Errorf("%s=%q: want a ratio between 0 and 1", envSamplerArg, arg)
		}
		return r, true, nil
	}
	return 0, false, errors.New(envSampler + "=" + v + ": Cohort honours always_on, always_off and traceidratio (each also parentbased_); use --trace-sample-ratio")
}
