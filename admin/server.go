package admin

import (
	"fmt"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
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
	// Caller says who a request acts for and what it may see
	// (caller.go): the JSON API and /metrics scope what they show by
	// it. Nil: every caller is an operator, as on an API without
	// authentication.
	Caller func(*http.Request) Caller
	// Profiling serves Go's profiles under /debug/pprof/ (CPU, heap,
	// block, mutex, goroutines, the execution trace): off by default, as
	// they show the process's internals and a CPU profile or trace costs
	// while it runs.
	Profiling bool
}

// Handler serves (each route scoped to the caller, Config.Caller):
//
//	/metrics   Prometheus text format: everything for an operator, the
//	           caller's organisation's series for anyone else
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
	all := promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		c := callerOf(r)
		if c.Operator {
			all.ServeHTTP(w, r)
			return
		}
		promhttp.HandlerFor(orgGatherer{cfg.Gatherer, c.Org()}, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
	if cfg.Profiling {
		// The process's internals: operators only.
		op := func(h http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if operatorOnly(w, r) {
					h(w, r)
				}
			}
		}
		mux.HandleFunc("/debug/pprof/", op(pprof.Index))
		mux.HandleFunc("/debug/pprof/cmdline", op(pprof.Cmdline))
		mux.HandleFunc("/debug/pprof/profile", op(pprof.Profile))
		mux.HandleFunc("/debug/pprof/symbol", op(pprof.Symbol))
		mux.HandleFunc("/debug/pprof/trace", op(pprof.Trace))
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
	if cfg.Caller == nil {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, withCaller(r, cfg.Caller(r)))
	})
}

// orgGatherer is what /metrics shows a caller who is not an operator:
// the series whose org label is its organisation's. Series without an
// org label (the process's, the node's, the topics') are the operator's
// alone. One registry serves everyone; the filter runs on each scrape.
type orgGatherer struct {
	g   prometheus.Gatherer
	org string
}

func (o orgGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := o.g.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		kept := mf.Metric[:0]
		for _, m := range mf.Metric {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "org" && lp.GetValue() == o.org {
					kept = append(kept, m)
					break
				}
			}
		}
		if len(kept) > 0 {
			mf.Metric = kept
			out = append(out, mf)
		}
	}
	return out, err
}
