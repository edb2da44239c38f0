package admin_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/timeline"
)

// TestClusterEventsRoute: /api/v1/cluster/events lists the timeline's
// cluster events, for every caller; outside cluster mode, none.
func TestClusterEventsRoute(t *testing.T) {
	get := func(api *admin.API) map[string]any {
		t.Helper()
		rec := httptest.NewRecorder()
		api.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/cluster/events", nil))
		if rec.Code != 200 {
			t.Fatalf("GET /api/v1/cluster/events: %d %s", rec.Code, rec.Body)
		}
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	single := get(admin.NewAPI(admin.APIConfig{Source: tenantsSource{}}))
	if single["cluster"] != false || len(single["events"].([]any)) != 0 {
		t.Errorf("single node: %v", single)
	}
	tl := timeline.New(timeline.Options{})
	tl.Cluster(observe.ClusterEvent{Kind: observe.NodeJoined, Node: 3, Serving: 3})
	tl.Cluster(observe.ClusterEvent{Kind: observe.NodeLost, Node: 3, Reason: "lease expired or revoked", Serving: 2})
	got := get(admin.NewAPI(admin.APIConfig{Source: tenantsSource{}, ClusterEvents: func() any { return tl.ClusterEvents() }}))
	evs := got["events"].([]any)
	if got["cluster"] != true || len(evs) != 2 || evs[0].(map[string]any)["event"] != "lost" || evs[0].(map[string]any)["serving"] != 2.0 {
		t.Errorf("cluster: %v", got)
	}
	// Every property is one the API's description declares.
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string       `json:"required"`
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
		Paths map[string]any `json:"paths"`
	}
	rec := httptest.NewRecorder()
	admin.NewAPI(admin.APIConfig{Source: tenantsSource{}}).Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if err := json.Unmarshal(rec.Body.Bytes(), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Paths["/api/v1/cluster/events"] == nil {
		t.Error("openapi.json does not describe /api/v1/cluster/events")
	}
	sc := spec.Components.Schemas["ClusterEvent"]
	for k := range evs[0].(map[string]any) {
		if sc.Properties[k] == nil {
			t.Errorf("property %q not in openapi.json's ClusterEvent", k)
		}
	}
	for _, k := range sc.Required {
		if _, ok := evs[1].(map[string]any)[k]; !ok {
			t.Errorf("required property %q missing from %v", k, evs[1])
		}
	}
}
