package admin

import (
	"fmt"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures the admin HTTP handler.
type Config struct {
	// Gatherer is what /metrics serves. Required.
	Gatherer prometheus.Gatherer
	// Ready reports why the node cannot serve yet (nil: it can): /readyz
	// answers 503 with the reason until it returns nil.
	Ready func() error
	// API serves /api/; nil: no JSON API.
	API *API
	// Page serves everything else (the web page); nil: 404.
	Page http.Handler
	// Profiling serves Go's profiles under /debug/pprof/ (CPU, heap,
	// block, mutex, goroutines, the execution trace): off by default, as
	// they show the process's internals and a CPU profile or trace costs
	// while it runs.
	Profiling bool
}

// Handler serves:
//
//	/metrics   Prometheus text format
//	/healthz   200 while the process is up
//	/readyz    200 once the node serves (store open, every shard it holds
//	           loaded, listeners accepting), else 503 and the reason
//	/api/      the JSON API (api.go, openapi.json)
//	/debug/pprof/  Go's profiles, when Config.Profiling is set
//	/          the web page
func Handler(cfg Config) http.Handler {
	mux := http.NewServeMux()
	if cfg.API != nil {
		mux.Handle("/api/", cfg.API.Handler())
	}
	if cfg.Page != nil {
		mux.Handle("/", cfg.Page)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	if cfg.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Ready != nil {
			if err := cfg.Ready(); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}
