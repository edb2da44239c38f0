package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/coordinator/groups"
)

// listAnswer is GET /api/v1/groups.
type listAnswer struct {
	Groups     []admin.GroupSummary `json:"groups"`
	Total      int                  `json:"total"`
	NextCursor string               `json:"next_cursor"`
	Partial    bool                 `json:"partial"`
	Totals     admin.ListTotals     `json:"totals"`
}

func getList(t *testing.T, h http.Handler, query string) listAnswer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/groups?"+query, nil))
	var l listAnswer
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &l) != nil {
		t.Fatalf("?%s: %d %s", query, rec.Code, rec.Body)
	}
	return l
}

// pageAll pages through the list with query and limit, and returns the
// groups as org/group in the order given, checking that every page but
// the last is full and says how many match.
func pageAll(t *testing.T, h http.Handler, query string, limit int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the cursor never ends")
		}
		q := query + "&limit=" + fmt.Sprint(limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		l := getList(t, h, q)
		for _, g := range l.Groups {
			out = append(out, g.Org+"/"+g.Group)
		}
		if l.NextCursor == "" {
			if len(out) != l.Total {
				t.Errorf("?%s: paged %d groups, total says %d", query, len(out), l.Total)
			}
			return out
		}
		if len(l.Groups) != limit {
			t.Errorf("?%s: a page of %d before the end, limit %d", query, len(l.Groups), limit)
		}
		cursor = l.NextCursor
	}
}

// TestListPages: the list filters, sorts and pages on the server; paging
// through any order with any page size gives every matching group once,
// in order.
func TestListPages(t *testing.T) {
	src := tenantsSource{groups: 30, parts: 1}
	h := tenantsHandler(src)
	all := getList(t, h, "")
	if all.Total != 90 || len(all.Groups) != 90 || all.NextCursor != "" {
		t.Fatalf("the whole list: total %d, %d groups, cursor %q", all.Total, len(all.Groups), all.NextCursor)
	}
	var names, keys []string
	for _, g := range all.Groups {
		names = append(names, g.Org+"/"+g.Group)
		keys = append(keys, g.Tenant+"\x00"+g.Group)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("not by tenant then name: %v", names)
	}
	for _, limit := range []int{1, 7, 30, 89} {
		if got := pageAll(t, h, "", limit); !slices.Equal(got, names) {
			t.Errorf("paged by %d: %v", limit, got)
		}
	}
	// By lag: globex's (29 each), then acme's (19), then the default's
	// (9); by name within.
	byLag := pageAll(t, h, "sort=lag", 8)
	want := slices.Concat(filter(names, "globex/"), filter(names, "acme/"), filter(names, "default/"))
	if !slices.Equal(byLag, want) {
		t.Errorf("by lag: %v, want %v", byLag, want)
	}
	if got := pageAll(t, h, "sort=status", 11); len(got) != 90 {
		t.Errorf("by status: %d groups", len(got))
	}
	// Filters.
	if got := pageAll(t, h, "q=G1", 4); len(got) != 33 || !allContain(got, "/g1") {
		t.Errorf("q=G1: %v, want g1 and g10-g19 of each organisation", got)
	}
	if l := getList(t, h, "type=consumer,share"); l.Total != 0 {
		t.Errorf("type=consumer,share: %d", l.Total)
	}
	if l := getList(t, h, "state=Empty&type=classic"); l.Total != 90 {
		t.Errorf("state=Empty: %d", l.Total)
	}
	// A state lowercased matches too, as given exactly; another case,
	// or a state no group type has, matches nothing.
	for q, want := range map[string]int{"state=empty": 90, "state=stable,empty": 90, "state=EMPTY": 0, "state=Gone": 0} {
		if l := getList(t, h, q); l.Total != want {
			t.Errorf("%s: %d, want %d", q, l.Total, want)
		}
	}
	if l := getList(t, h, "org=acme&q=g2&limit=5"); l.Total != 11 || len(l.Groups) != 5 || l.Groups[0].Org != "acme" || l.Totals.Lag != 11*19 {
		t.Errorf("org=acme&q=g2: total %d, totals %+v, %+v; want 11 groups of lag 19 each", l.Total, l.Totals, l.Groups)
	}
	// Bad parameters: 400, saying why.
	for _, q := range []string{"limit=0", "limit=10001", "limit=x", "sort=size", "cursor=!!", "type=simple", "status=BAD"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/groups?"+q, nil))
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"error"`) {
			t.Errorf("?%s: %d %s, want 400", q, rec.Code, rec.Body)
		}
	}
}

func filter(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func allContain(names []string, s string) bool {
	for _, n := range names {
		if !strings.Contains(n, s) {
			return false
		}
	}
	return true
}

// namedSource has the default organisation's groups of the given names,
// each committed at offset lag[name] short of events/0's end, 100.
type namedSource struct{ lag map[string]int64 }

func (s namedSource) Node() admin.NodeInfo { return admin.NodeInfo{} }
func (s namedSource) Inspect(context.Context) ([]groups.Summary, error) {
	var out []groups.Summary
	for name, lag := range s.lag {
		out = append(out, groups.Summary{Group: name, ID: "cgp_" + name, Type: groups.ClassicGroup, State: groups.StateEmpty,
			Offsets: groups.MakeOffsets([]groups.OffsetSummary{{Topic: "events", Offset: 100 - lag}})})
	}
	return out, nil
}
func (s namedSource) InspectGroup(context.Context, string, string) (groups.Summary, bool, error) {
	return groups.Summary{}, false, nil
}
func (s namedSource) Handle(context.Context, string, kmsg.Request) kmsg.Response { return nil }
func (s namedSource) GroupConfigs(string, string) []admin.GroupConfig            { return nil }
func (s namedSource) Topics() []admin.TopicInfo {
	return []admin.TopicInfo{{Name: "events", Partitions: []admin.PartitionInfo{{LogEndOffset: 100}}}}
}

// TestListPagesAcrossNodes: two nodes' real APIs, each coordinating
// half the groups; paging through node 1's list, in each order and with
// a filter, gives the cluster's groups once each, in order, as one
// node's list of them all would.
func TestListPagesAcrossNodes(t *testing.T) {
	lags := [2]map[string]int64{{}, {}}
	coord := map[string]int32{}
	everything := map[string]int64{}
	for i := range 40 {
		name := fmt.Sprintf("grp-%02d", i)
		lag := int64((i * 7) % 13)
		lags[i%2][name], coord["/"+name], everything[name] = lag, int32(i%2+1), lag
	}
	start := func(src namedSource, cl admin.ClusterSource) http.Handler {
		api := admin.NewAPI(admin.APIConfig{Source: src, Cluster: cl})
		api.Sample(context.Background())
		return admin.Handler(admin.Config{Gatherer: nil, API: api})
	}
	var nodes []admin.ClusterNode
	n2 := httptest.NewServer(nil)
	t.Cleanup(n2.Close)
	nodes = []admin.ClusterNode{{ID: 1, State: admin.NodeServing, Self: true}, {ID: 2, State: admin.NodeServing, AdminURL: n2.URL}}
	n2.Config.Handler = start(namedSource{lags[1]}, fakeCluster{nodes: nodes, coord: coord, self: 2})
	h1 := start(namedSource{lags[0]}, fakeCluster{nodes: nodes, coord: coord})
	one := start(namedSource{everything}, nil) // a single node with every group
	for _, query := range []string{"sort=name", "sort=lag", "sort=status", "q=grp-1", "sort=lag&q=3"} {
		want := pageAll(t, one, query, 1000)
		for _, limit := range []int{1, 3, 10} {
			if got := pageAll(t, h1, query, limit); !slices.Equal(got, want) {
				t.Errorf("?%s by %d across nodes: %v, want %v", query, limit, got, want)
			}
		}
	}
	var lagSum int64
	for _, lag := range everything {
		lagSum += lag
	}
	if l := getList(t, h1, "limit=5"); l.Partial || l.Total != 40 || l.Totals.Lag != lagSum {
		t.Errorf("total %d, totals %+v, partial %v; want 40 from both nodes, lag %d", l.Total, l.Totals, l.Partial, lagSum)
	}
}
