package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestProfilingOptIn: Go's profiles are served only when asked for.
func TestProfilingOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := Handler(Config{Gatherer: prometheus.NewRegistry(), Profiling: on})
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; rec.Code != want {
				t.Errorf("profiling %v: GET %s answered %d, want %d", on, path, rec.Code, want)
			}
		}
	}
}
