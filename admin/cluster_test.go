package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cohort-dev/cohort/admin"
)

// fakeCluster is node 1's view of a cluster: node 2 answers, node 3
// never does in time, node 4 registered no admin address, node 5 is
// gone.
type fakeCluster struct {
	nodes []admin.ClusterNode
	coord map[string]int32 // tenant/group → node; absent: no owner
	self  int32            // 0: node 1
}

func (f fakeCluster) Self() int32                { return max(f.self, 1) }
func (f fakeCluster) Nodes() []admin.ClusterNode { return f.nodes }
func (f fakeCluster) Assignment() (int64, int)   { return 7, 2 }
func (f fakeCluster) CoordinatorOf(tenant, group string) (int32, bool) {
	n, ok := f.coord[tenant+"/"+group]
	return n, ok
}

// peer is a fake node's admin API: it records what it was asked.
type peer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	asked []*http.Request
	hits  atomic.Int32
}

func newPeer(t *testing.T, h http.HandlerFunc) *peer {
	p := &peer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		p.mu.Lock()
		p.asked = append(p.asked, r)
		p.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestClusterView: node 1 answers for the cluster. Its list merges node
// 2's groups (asked with ?scope=node and the caller's Authorization
// header), says nodes 3 (no answer within PeerTimeout) and 4 (no admin
// address) did not answer, asks no gone node, and leaves out a group of
// its last sample whose shard has moved to node 2 (which lists it);
// /metrics exports only the groups node 1 coordinates. A group's detail
// is node 2's answer when node 2 coordinates it, 502 naming node 3 when
// it is node 3's, 503 when no node owns it.
func TestClusterView(t *testing.T) {
	moved := admin.GroupSummary{Group: "g0", Org: "acme", Tenant: "acme", CgpID: "cgp_acme0-on-2", Coordinator: ptr(int32(2))}
	n2 := newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/groups":
			json.NewEncoder(w).Encode(map[string]any{"groups": []admin.GroupSummary{
				{Group: "remote-g", Org: "default", CgpID: "cgp_remote", TotalLag: 42, Coordinator: ptr(int32(2))}, moved,
			}})
		case "/api/v1/groups/remote-g":
			json.NewEncoder(w).Encode(admin.GroupDetail{GroupSummary: admin.GroupSummary{Group: "remote-g", CgpID: "cgp_remote", TotalLag: 42, Coordinator: ptr(int32(2))}})
		default:
			http.NotFound(w, r)
		}
	})
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	n3 := newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-slow:
		}
	})
	n5 := newPeer(t, func(http.ResponseWriter, *http.Request) {})
	fc := fakeCluster{
		nodes: []admin.ClusterNode{
			{ID: 1, State: admin.NodeServing, Self: true, AdminURL: "http://127.0.0.1:1"},
			{ID: 2, State: admin.NodeServing, AdminURL: n2.srv.URL},
			{ID: 3, State: admin.NodeDraining, AdminURL: n3.srv.URL},
			{ID: 4, State: admin.NodeServing},
			{ID: 5, State: admin.NodeGone, AdminURL: n5.srv.URL},
		},
		coord: map[string]int32{"/g0": 1, "globex/g0": 1, "acme/g0": 2, "/remote-g": 2, "/slow-g": 3},
	}
	src := tenantsSource{groups: 1, parts: 1}
	api := admin.NewAPI(admin.APIConfig{Source: src, Cluster: fc, PeerTimeout: 300 * time.Millisecond})
	api.Sample(context.Background())
	reg := prometheus.NewRegistry()
	reg.MustRegister(api, admin.NewLag(admin.LagConfig{Source: lagOf{api, src}}))
	h := admin.Handler(admin.Config{Gatherer: reg, API: api})
	get := func(path string) (int, []byte, http.Header) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer the-callers")
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes(), rec.Header()
	}

	code, body, _ := get("/api/v1/groups")
	var l struct {
		Groups     []admin.GroupSummary `json:"groups"`
		Nodes      []admin.ClusterNode  `json:"nodes"`
		Unanswered []admin.Unanswered   `json:"unanswered"`
		Partial    bool                 `json:"partial"`
	}
	if code != 200 || json.Unmarshal(body, &l) != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	var names []string
	for _, g := range l.Groups {
		names = append(names, g.Org+"/"+g.Group+"@"+itoa(g.Coordinator)+":"+g.CgpID)
	}
	// Sorted by tenant (the default organisation's first) then name;
	// acme's g0 is node 2's.
	want := []string{"default/g0@1:cgp_0", "default/remote-g@2:cgp_remote", "acme/g0@2:cgp_acme0-on-2", "globex/g0@1:cgp_globex0"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("groups %v, want %v", names, want)
	}
	if !l.Partial || len(l.Unanswered) != 2 || l.Unanswered[0].Node != 3 || !strings.Contains(l.Unanswered[0].Error, "no answer within 300ms") ||
		l.Unanswered[0].AdminURL != n3.srv.URL || l.Unanswered[1].Node != 4 || !strings.Contains(l.Unanswered[1].Error, "no admin address") {
		t.Errorf("partial %v, unanswered %+v; want nodes 3 (timed out) and 4 (no address)", l.Partial, l.Unanswered)
	}
	if len(l.Nodes) != 5 {
		t.Errorf("nodes %+v", l.Nodes)
	}
	if n5.hits.Load() != 0 {
		t.Errorf("the gone node was asked %d times", n5.hits.Load())
	}
	n2.mu.Lock()
	first := n2.asked[0]
	n2.mu.Unlock()
	if first.URL.Query().Get("scope") != "node" || first.Header.Get("Authorization") != "Bearer the-callers" {
		t.Errorf("node 2 asked %s with Authorization %q, want scope=node and the caller's header", first.URL, first.Header.Get("Authorization"))
	}

	// This node's part alone.
	code, body, _ = get("/api/v1/groups?scope=node")
	var own struct {
		Groups  []admin.GroupSummary `json:"groups"`
		Partial *bool                `json:"partial"`
	}
	if code != 200 || json.Unmarshal(body, &own) != nil || len(own.Groups) != 2 || own.Partial != nil {
		t.Errorf("scope=node: %d %s, want node 1's two groups and no cluster fields", code, body)
	}

	// /metrics: node 1 exports its own groups, not the one that moved.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "kafka_consumergroup_members" {
			continue
		}
		for _, m := range mf.GetMetric() {
			org, group := "", ""
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "org":
					org = lp.GetValue()
				case "consumergroup":
					group = lp.GetValue()
				}
			}
			exported[org+"/"+group] = true
		}
	}
	if len(exported) != 2 || !exported["default/g0"] || !exported["globex/g0"] {
		t.Errorf("node 1 exports %v, want default/g0 and globex/g0 alone", exported)
	}

	// A group's detail from its coordinator.
	code, body, hdr := get("/api/v1/groups/remote-g")
	var d admin.GroupDetail
	if code != 200 || json.Unmarshal(body, &d) != nil || d.CgpID != "cgp_remote" || d.TotalLag != 42 || hdr.Get("X-Cohort-Answered-By") != "2" {
		t.Errorf("remote-g: %d %s", code, body)
	}
	code, body, _ = get("/api/v1/groups/slow-g")
	if code != http.StatusBadGateway || !strings.Contains(string(body), "coordinated by node 3") || !strings.Contains(string(body), "did not answer") {
		t.Errorf("slow-g: %d %s, want 502 naming node 3", code, body)
	}
	code, body, _ = get("/api/v1/groups/moving-g")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "no coordinator now") {
		t.Errorf("moving-g: %d %s, want 503", code, body)
	}
	// Asked for its part alone, node 1 does not have remote-g.
	if code, body, _ = get("/api/v1/groups/remote-g?scope=node"); code != 404 {
		t.Errorf("remote-g with scope=node: %d %s, want 404", code, body)
	}

	// The cluster's nodes.
	code, body, _ = get("/api/v1/cluster")
	var cv struct {
		Cluster bool                `json:"cluster"`
		Self    int32               `json:"self"`
		Nodes   []admin.ClusterNode `json:"nodes"`
		Epoch   int64               `json:"epoch"`
		Moving  int                 `json:"moving"`
	}
	if code != 200 || json.Unmarshal(body, &cv) != nil || !cv.Cluster || cv.Self != 1 || len(cv.Nodes) != 5 || cv.Nodes[4].State != admin.NodeGone || cv.Epoch != 7 || cv.Moving != 2 {
		t.Errorf("/api/v1/cluster: %d %s", code, body)
	}
}

func ptr[T any](v T) *T { return &v }

func itoa(p *int32) string {
	if p == nil {
		return "-"
	}
	b, _ := json.Marshal(*p)
	return string(b)
}
