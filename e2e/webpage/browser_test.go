package web_test

// The page in a real browser (headless Chromium) against a fake of the
// admin API that serves canned answers of the API's shapes; e2e's
// TestWebPage runs it against a real node and real consumers.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cohort-dev/cohort/admin/web"
	"github.com/cohort-dev/cohort/e2e/webtest"
)

type obj = map[string]any

// fakeAPI serves /api/v1/... from canned data that a test changes.
type fakeAPI struct {
	mu       sync.Mutex
	down     bool  // drop every API connection, as an unreachable node
	timeline []obj // of group "orders", newest first
	requests int
	// org, if set, is the caller's organisation in the node's answer,
	// as the API gives it to a caller who is not an operator.
	org string
	// cluster are the cluster events, newest first; nil: a single node.
	cluster []obj
	// nodes are the cluster's nodes (GET /api/v1/cluster), unanswered
	// those the groups list lacks; groups of the list are coordinated by
	// coordinators[group]. Cluster mode only.
	nodes, unanswered []obj
	coordinators      map[string]int
	// failGroup makes a group's page answer with the status and error,
	// as a node does when the group's coordinator did not answer (502)
	// or its shard has none (503).
	failGroup map[string]int
	// extra adds groups g000, g001, … to the list, OK and with lags 0,
	// 1, …, to page through.
	extra int
	// queries are the groups list's query strings, in the order asked.
	queries []url.Values
}

// nasty is a group name that must show as text and survive the URL.
const nasty = `<img src=x onerror="document.title='pwned'">/a?b#c&d%2F`

func trend(now time.Time, lags ...int) []obj {
	var out []obj
	for i, l := range lags {
		out = append(out, obj{"at": now.Add(time.Duration(i-len(lags)) * 5 * time.Second).Format(time.RFC3339), "lag": l})
	}
	return out
}

func rebalance(now time.Time, gen int, cause, member string, moved int) obj {
	return obj{
		"started_at": now.Add(-time.Duration(100-gen) * time.Second).Format(time.RFC3339Nano), "completed_at": now.Format(time.RFC3339Nano),
		"in_progress": false, "duration_ms": 420 + gen, "generation": gen, "protocol": "cooperative-sticky", "cause": cause,
		"reason": "", "member_id": member, "members_before": 2, "members": 3, "restarts": 0,
		"member_events":    []obj{{"at": now.Format(time.RFC3339Nano), "kind": cause, "member_id": member}},
		"phases":           obj{"join_ms": 300, "sync_ms": 20.5, "revocation_ms": 90, "assignment_ms": 0.25},
		"partitions_moved": moved,
	}
}

func members(n int) []obj {
	var out []obj
	for i := 0; i < n; i++ {
		var ps []int
		for p := i; p < 6; p += n {
			ps = append(ps, p)
		}
		out = append(out, obj{
			"member_id": fmt.Sprintf("consumer-%d-5f8a9c", i+1), "instance_id": "", "client_id": fmt.Sprintf("consumer-%d", i+1),
			"host": "/127.0.0.1", "member_epoch": 0, "assignment": []obj{{"topic": "events", "partitions": ps}},
		})
	}
	return out
}

// topicConfigs are a topic's configs as the API gives them, with those
// in set made on the topic.
func topicConfigs(set map[string]string) []obj {
	var out []obj
	for _, c := range []struct {
		name, def string
		enforced  bool
	}{{"cleanup.policy", "delete", false}, {"max.message.bytes", "1048588", true}, {"retention.ms", "604800000", false}} {
		v, src := c.def, "default"
		if s, ok := set[c.name]; ok {
			v, src = s, "topic"
		}
		out = append(out, obj{"name": c.name, "value": v, "source": src, "enforced": c.enforced})
	}
	return out
}

func (f *fakeAPI) groups(now time.Time) []obj {
	gs := []obj{
		{"group": "orders", "tenant": "", "cgp_id": "cgp_4f1c", "rrl": "rrl:cohort:group/orders", "type": "classic",
			"protocol_type": "consumer", "state": "Stable", "members": 3, "total_lag": 1234, "status": "WARN",
			"time_to_clear_seconds": 95.0, "lag_trend": trend(now, 800, 900, 1000, 1100, 1200, 1234)},
		{"group": nasty, "tenant": "acme", "cgp_id": "cgp_9", "rrl": "rrl:cohort:acme/group/x", "type": "consumer",
			"protocol_type": "consumer", "state": "Empty", "members": 0, "total_lag": 0, "status": "",
			"time_to_clear_seconds": nil, "lag_trend": []obj{}},
		{"group": "jobs", "tenant": "", "cgp_id": "cgp_5", "rrl": "rrl:cohort:group/jobs", "type": "share",
			"protocol_type": "share", "state": "Stable", "members": 2, "total_lag": 10, "status": "OK",
			"time_to_clear_seconds": 0.0, "lag_trend": trend(now, 12, 11, 10),
			"share": shareCounts(9, 2, 5, 1, 1, 1)},
	}
	for _, g := range gs {
		if n, ok := f.coordinators[g["group"].(string)]; ok {
			g["coordinator"] = n
		}
	}
	return gs
}

// list answers the groups list's query as the API does: filtered by q
// (in the name), status and type, sorted by name, lag or status (worst
// first, one not evaluated before an OK one), paged by limit; the
// cursor here is the offset of the page in the list.
func (f *fakeAPI) list(now time.Time, q url.Values) obj {
	all := f.groups(now)
	for i := range f.extra {
		all = append(all, obj{"group": fmt.Sprintf("g%03d", i), "tenant": "", "type": "consumer", "protocol_type": "consumer",
			"state": "Stable", "members": 1, "total_lag": i, "status": "OK", "lag_trend": []obj{}})
	}
	in := func(param, v string) bool {
		return q.Get(param) == "" || slices.Contains(strings.Split(q.Get(param), ","), v)
	}
	var gs []obj
	for _, g := range all {
		st := cmp.Or(g["status"].(string), "UNKNOWN")
		if strings.Contains(strings.ToLower(g["group"].(string)), strings.ToLower(q.Get("q"))) && in("status", st) && in("type", g["type"].(string)) {
			gs = append(gs, g)
		}
	}
	worst := []string{"ERR", "STOP", "STALL", "WARN", "", "OK"}
	slices.SortStableFunc(gs, func(a, b obj) int {
		var by int
		switch q.Get("sort") {
		case "lag":
			by = cmp.Compare(b["total_lag"].(int), a["total_lag"].(int))
		case "status":
			by = cmp.Compare(slices.Index(worst, a["status"].(string)), slices.Index(worst, b["status"].(string)))
		}
		return cmp.Or(by, cmp.Compare(a["tenant"].(string), b["tenant"].(string)), cmp.Compare(a["group"].(string), b["group"].(string)))
	})
	limit, start := 1000, 0
	if s := q.Get("limit"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	if c := q.Get("cursor"); c != "" {
		start, _ = strconv.Atoi(c)
	}
	members, lag, notOK := 0, 0, 0
	for _, g := range gs {
		members += g["members"].(int)
		lag += g["total_lag"].(int)
		if s := g["status"].(string); s != "" && s != "OK" {
			notOK++
		}
	}
	resp := obj{"total": len(gs), "sampled_at": now.Format(time.RFC3339Nano), "totals": obj{"members": members, "lag": lag, "not_ok": notOK}}
	end := min(len(gs), start+limit)
	resp["groups"] = append([]obj{}, gs[min(start, end):end]...)
	if end < len(gs) {
		resp["next_cursor"] = strconv.Itoa(end)
	}
	return resp
}

// lastQuery is the groups list's last query string.
func (f *fakeAPI) lastQuery() url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[len(f.queries)-1]
}

// shareCounts are a share group's records in flight by state.
func shareCounts(inFlight, available, acquired, acknowledged, archived, redelivered int) obj {
	return obj{"in_flight": inFlight, "available": available, "acquired": acquired, "acknowledged": acknowledged,
		"archived": archived, "redelivered": redelivered}
}

// shareDetail is share group jobs' page: two members that share
// partitions 0 and 1 of tasks (a share group's partitions may have
// several members, KIP-932), and partition 2, fetched once and
// unassigned since; partition 3 assigned to one and never fetched. The
// lags are KIP-1226's: the log end less the start offset less the
// records acknowledged or archived.
func shareDetail(d obj, now time.Time) obj {
	ms := []obj{
		{"member_id": "share-b", "client_id": "worker-2", "host": "/10.0.0.2", "member_epoch": 4,
			"assignment": []obj{{"topic": "tasks", "partitions": []int{0, 1}}}},
		{"member_id": "share-a", "client_id": "worker-1", "host": "/10.0.0.1", "member_epoch": 4,
			"assignment": []obj{{"topic": "tasks", "partitions": []int{0, 1, 3}}}},
	}
	part := func(p int, members []string, share obj, lag any) obj {
		o := obj{"topic": "tasks", "partition": p, "committed_offset": -1, "log_start_offset": 0, "log_end_offset": 100,
			"lag": lag, "member_id": "", "member_ids": members, "status": "OK", "time_to_clear_seconds": nil, "lag_history": trend(now, 3, 2)}
		if share != nil {
			o["share"] = share
		}
		return o
	}
	withStart := func(start, end int, counts obj) obj {
		out := obj{"start_offset": start, "end_offset": end, "state_epoch": 0}
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
	d["members"], d["balancer"], d["epoch"], d["assignment_epoch"] = ms, "simple", 4, 4
	d["partitions"] = []obj{
		part(0, []string{"share-a", "share-b"}, withStart(90, 97, shareCounts(7, 1, 4, 1, 1, 1)), 8),
		part(1, []string{"share-a", "share-b"}, withStart(98, 100, shareCounts(2, 1, 1, 0, 0, 0)), 2),
		part(2, []string{}, withStart(100, 100, shareCounts(0, 0, 0, 0, 0, 0)), 0),
		part(3, []string{"share-a"}, nil, nil),
	}
	d["timeline"] = []obj{}
	d["configs"] = []obj{}
	return d
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	send := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/v1/node", func(w http.ResponseWriter, r *http.Request) {
		n := obj{"version": "cohort 0.9.0 (go1.26.8 linux/amd64)", "node_id": "1", "mode": "single", "started_at": "2026-01-02T03:04:05Z",
			"uptime_seconds": 3725, "kafka_addr": "127.0.0.1:9092", "shards_total": 16, "shards_held": []int{},
			"store": obj{"kind": "pebble"}}
		if f.org != "" {
			n["org"] = f.org
		}
		send(w, 200, n)
	})
	mux.HandleFunc("GET /api/v1/groups", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		q := r.URL.Query()
		f.queries = append(f.queries, q)
		resp := f.list(time.Now(), q)
		if f.cluster != nil {
			resp["nodes"], resp["unanswered"], resp["partial"] = f.nodes, append([]obj{}, f.unanswered...), len(f.unanswered) > 0
		}
		send(w, 200, resp)
	})
	mux.HandleFunc("GET /api/v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.cluster == nil {
			send(w, 200, obj{"cluster": false, "nodes": []obj{{"id": 0, "state": "serving", "self": true, "leader": true, "kafka_addr": "127.0.0.1:9092", "shards": []int{}}}})
			return
		}
		send(w, 200, obj{"cluster": true, "self": 1, "leader": 2, "nodes": f.nodes})
	})
	mux.HandleFunc("GET /api/v1/groups/{group}", func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		name, tenant := r.PathValue("group"), r.URL.Query().Get("tenant")
		var g obj
		for _, s := range f.groups(now) {
			if s["group"] == name && s["tenant"] == tenant {
				g = s
			}
		}
		if g == nil {
			send(w, 404, obj{"error": fmt.Sprintf("group %q not found", name)})
			return
		}
		f.mu.Lock()
		code := f.failGroup[name]
		f.mu.Unlock()
		switch code {
		case 502:
			send(w, 502, obj{"error": fmt.Sprintf("group %q is coordinated by node 3 (http://10.0.0.3:8080), which did not answer: connection refused", name)})
			return
		case 503:
			send(w, 503, obj{"error": fmt.Sprintf("group %q of organisation default has no coordinator now: its shard is moving to another node (try again shortly)", name)})
			return
		}
		d := obj{}
		for k, v := range g {
			d[k] = v
		}
		if name == "jobs" {
			send(w, 200, shareDetail(d, now))
			return
		}
		if name != "orders" {
			d["members"], d["partitions"], d["timeline"] = []obj{}, []obj{}, []obj{}
			d["epoch"], d["assignment_epoch"], d["balancer"] = 0, 0, "uniform"
			send(w, 200, d)
			return
		}
		var parts []obj
		ms := members(3)
		for p := 0; p < 6; p++ {
			lag := 100 + 50*p
			part := obj{"topic": "events", "partition": p, "committed_offset": 1000, "committed_at": now.Format(time.RFC3339Nano),
				"log_start_offset": 0, "log_end_offset": 1000 + lag, "lag": lag, "member_id": ms[p%3]["member_id"], "status": "WARN",
				"time_to_clear_seconds": 30.0, "lag_history": trend(now, lag/2, lag/2, lag*3/4, lag)}
			if p == 5 { // never committed: no lag
				part["committed_offset"], part["lag"], part["status"], part["lag_history"] = -1, nil, "", []obj{}
				delete(part, "committed_at")
			}
			parts = append(parts, part)
		}
		d["members"], d["partitions"], d["balancer"], d["generation"] = ms, parts, "cooperative-sticky", 7
		d["configs"] = []obj{
			{"name": "consumer.heartbeat.interval.ms", "value": "6000", "source": "cluster"},
			{"name": "consumer.session.timeout.ms", "value": "50000", "source": "group"},
			{"name": "share.auto.offset.reset", "value": "latest", "source": "default"},
		}
		f.mu.Lock()
		d["timeline"] = append([]obj(nil), f.timeline...)
		f.mu.Unlock()
		send(w, 200, d)
	})
	mux.HandleFunc("GET /api/v1/cluster/events", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		evs := append([]obj{}, f.cluster...)
		f.mu.Unlock()
		send(w, 200, obj{"cluster": f.cluster != nil, "events": evs})
	})
	mux.HandleFunc("GET /api/v1/topics", func(w http.ResponseWriter, r *http.Request) {
		var ps []obj
		for p := 0; p < 6; p++ {
			part := obj{"partition": p, "leader": 1, "log_start_offset": 0, "log_end_offset": 1100 + 50*p}
			if f.cluster != nil {
				// Partitions 4 and 5 are led by node 3, which is gone.
				part["leader_alive"] = p < 4
				if p >= 4 {
					part["leader"], part["log_start_offset"], part["log_end_offset"] = 3, -1, -1
				}
			}
			ps = append(ps, part)
		}
		send(w, 200, obj{"topics": []obj{
			{"name": "events", "internal": false, "partitions": ps, "configs": topicConfigs(map[string]string{"retention.ms": "3600000"})},
			{"name": "__consumer_offsets", "internal": true, "partitions": []obj{{"partition": 0, "leader": 1, "log_start_offset": 0, "log_end_offset": 42}},
				"configs": topicConfigs(map[string]string{"cleanup.policy": "compact"})},
		}})
	})
	mux.Handle("/", web.Handler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down := f.down
		f.requests++
		f.mu.Unlock()
		if down && strings.HasPrefix(r.URL.Path, "/api/") {
			panic(http.ErrAbortHandler) // the connection closes unanswered
		}
		mux.ServeHTTP(w, r)
	})
}

func (f *fakeAPI) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// TestPageInBrowser opens the page in headless Chromium against the fake
// API and checks what a person would look at: the groups overview, one
// group's members, lag and timeline, a new rebalance appearing without a
// reload, the banner while the API is unreachable and its going away, a
// share group's records in flight and the partitions its members share,
// a hostile group name shown as text, and the topics.
func TestPageInBrowser(t *testing.T) {
	now := time.Now()
	f := &fakeAPI{timeline: []obj{
		rebalance(now, 7, "member-joined", "consumer-3-5f8a9c", 2),
		rebalance(now, 6, "metadata-changed", "", -1),
	}, cluster: []obj{
		{"at": now.Add(-time.Second).Format(time.RFC3339Nano), "event": "lost", "node": 3, "kafka": "10.0.0.3:9092", "reason": "lease expired or revoked", "serving": 2, "draining": 0, "suspended": 0},
		{"at": now.Add(-time.Minute).Format(time.RFC3339Nano), "event": "joined", "node": 1, "self": true, "kafka": "10.0.0.1:9092", "serving": 3, "draining": 0, "suspended": 0},
	}, nodes: []obj{
		{"id": 1, "state": "serving", "self": true, "leader": false, "kafka_addr": "10.0.0.1:9092", "admin_url": "http://10.0.0.1:8080", "shards": []int{0, 1, 2, 3, 4, 5}},
		{"id": 2, "state": "serving", "self": false, "leader": true, "kafka_addr": "10.0.0.2:9092", "admin_url": "http://10.0.0.2:8080", "rack": "b", "shards": []int{6, 7, 8, 9, 10}},
		{"id": 3, "state": "gone", "self": false, "leader": false, "kafka_addr": "10.0.0.3:9092", "admin_url": "http://10.0.0.3:8080", "shards": []int{}},
		{"id": 4, "state": "draining", "self": false, "leader": false, "kafka_addr": "10.0.0.4:9092", "admin_url": "http://10.0.0.4:8080", "shards": []int{11, 12, 13, 14, 15}},
	}, unanswered: []obj{
		{"node": 4, "admin_url": "http://10.0.0.4:8080", "error": "Get \"http://10.0.0.4:8080/api/v1/groups?scope=node\": context deadline exceeded"},
	}, coordinators: map[string]int{"orders": 1, "jobs": 2, nasty: 1}}
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	b := webtest.Start(t)

	b.Open(srv.URL + "/")
	b.Wait("the group row", `document.querySelector('tr[data-group="orders"]')`)
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=group-row]')].map(r => r.dataset.group)`); len(got) != 3 || got[0] != "orders" || got[1] != nasty || got[2] != "jobs" {
		t.Errorf("group rows %q, want orders first (WARN), then %q (not evaluated), then jobs (OK)", got, nasty)
	}
	// In the API's order: the page asks for one page, worst status first.
	if q := f.lastQuery(); q.Get("limit") != "100" || q.Get("sort") != "status" || q.Has("cursor") {
		t.Errorf("the overview asked for the groups with %q, want limit=100&sort=status", q.Encode())
	}
	row := `document.querySelector('tr[data-group="orders"]')`
	if got := webtest.Eval[string](b, row+`.querySelector('[data-testid=members]').textContent`); got != "3" {
		t.Errorf("orders members cell %q, want 3", got)
	}
	if got := webtest.Eval[string](b, row+`.querySelector('[data-testid=total-lag]').textContent`); got != "1,234" {
		t.Errorf("orders total lag cell %q, want 1,234", got)
	}
	if got := webtest.Eval[string](b, row+`.querySelector('[data-testid=status]').textContent`); got != "WARN" {
		t.Errorf("orders status %q, want WARN", got)
	}
	if got := webtest.Eval[int](b, row+`.querySelector('[data-testid=sparkline]').querySelectorAll('polyline').length`); got != 1 {
		t.Errorf("orders lag trend: %d lines, want 1", got)
	}
	if got := webtest.Eval[string](b, `document.getElementById('node').textContent`); !strings.Contains(got, "node 1") || !strings.Contains(got, "pebble") {
		t.Errorf("header %q, want the node's summary", got)
	}
	// The version as the node gives it, with no "v" in front.
	if got := webtest.Eval[string](b, `document.getElementById('node').textContent`); !strings.HasPrefix(got, "cohort 0.9.0 (go1.26.8 linux/amd64) · ") {
		t.Errorf("header %q, want it to open with the node's version as given", got)
	}
	// The cluster's node events under the groups, newest first.
	b.Wait("the cluster events", `document.querySelectorAll('[data-testid=cluster-event]').length === 2`)
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=cluster-event]')].map(r => r.dataset.event + ' ' + r.dataset.node)`); fmt.Sprint(got) != "[lost 3 joined 1]" {
		t.Errorf("cluster event rows %q, want lost 3, joined 1", got)
	}
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=cluster-summary]').textContent`); got != "2 nodes serving · 0 draining" {
		t.Errorf("cluster summary %q", got)
	}
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=cluster-event]').textContent`); !strings.Contains(got, "lease expired or revoked") || !strings.Contains(got, "10.0.0.3:9092") {
		t.Errorf("the lost node's row reads %q", got)
	}
	// The whole cluster's groups, each with its coordinator.
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=group-row]')].map(r => r.dataset.group.slice(0, 6) + '@' + r.querySelector('[data-testid=coordinator]').textContent)`); fmt.Sprint(got) != "[orders@1 <img s@1 jobs@2]" {
		t.Errorf("groups and coordinators %q", got)
	}
	// The node that did not answer, named with why.
	b.Wait("the partial banner", `!document.querySelector('[data-testid=partial]').hidden`)
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=partial] [data-testid=unanswered]')].map(li => li.textContent)`); len(got) != 1 ||
		!strings.HasPrefix(got[0], `node 4 did not answer: Get "http://10.0.0.4:8080/api/v1/groups?scope=node": context deadline exceeded`) {
		t.Errorf("unanswered nodes %q", got)
	}
	// Every node with its state; the gone one marked; the leader and
	// this node said.
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=cluster-node]')].map(r => [r.dataset.node, r.querySelector('[data-testid=node-state]').textContent,
		r.querySelector('[data-testid=self]') ? 'self' : '-', r.querySelector('[data-testid=leader]') ? 'leader' : '-', r.querySelector('code').textContent,
		r.querySelector('[data-testid=shards]').textContent, r.classList.contains('node-down') ? 'down' : 'up'].join(' '))`); fmt.Sprint(got) !=
		"[1 serving self - 10.0.0.1:9092 6 up 2 serving - leader 10.0.0.2:9092 5 up 3 gone - - 10.0.0.3:9092 0 down 4 draining - - 10.0.0.4:9092 5 up]" {
		t.Errorf("cluster nodes (id, state, self, leader, kafka, shards, marked) %q", got)
	}
	// The nodes come above the events.
	if !webtest.Eval[bool](b, `!!(document.querySelector('[data-testid=cluster-nodes]').compareDocumentPosition(document.querySelector('[data-testid=cluster-event]')) & Node.DOCUMENT_POSITION_FOLLOWING)`) {
		t.Errorf("the cluster's nodes are not above its events")
	}
	b.Screenshot("overview")
	// Every node answers again: the banner goes.
	f.set(func() { f.unanswered = nil })
	b.Wait("the partial banner gone", `document.querySelector('[data-testid=partial]').hidden`)

	// One group's page, reached by its link.
	b.Click(`tr[data-group="orders"] a`)
	b.Wait("3 members", `document.querySelectorAll('[data-testid=member]').length === 3`)
	if got := webtest.Eval[string](b, `location.hash`); got != "#/groups/orders" {
		t.Errorf("group page at %q", got)
	}
	if got := webtest.Eval[[]int](b, `[...document.querySelectorAll('[data-testid=lag]')].map(c => +c.dataset.value)`); len(got) != 6 || got[0] != 100 {
		t.Errorf("partition lags %v, want 6 starting at 100", got)
	}
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=partition][data-partition="5"] [data-testid=lag]').textContent`); got != "—" {
		t.Errorf("lag of a partition never committed shows %q, want a dash", got)
	}
	if got := webtest.Eval[int](b, `document.querySelectorAll('[data-testid=assignment-grid] td.owned').length`); got != 6 {
		t.Errorf("assignment grid: %d owned cells, want 6", got)
	}
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=rrl]').textContent`); got != "rrl:cohort:group/orders" {
		t.Errorf("RRL %q", got)
	}
	if got := webtest.Eval[string](b, `document.querySelector('dl.facts [data-testid=coordinator]').textContent`); got != "node 1" {
		t.Errorf("coordinated by %q, want node 1", got)
	}
	// Its configs, with where each is set; its own highlighted.
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=config]')].map(r => r.dataset.config + '=' + r.querySelector('[data-testid=config-value]').textContent + ' ' + r.querySelector('.badge').textContent + (r.classList.contains('explicit') ? ' explicit' : ''))`); fmt.Sprint(got) != "[consumer.heartbeat.interval.ms=6000 cluster consumer.session.timeout.ms=50000 group explicit share.auto.offset.reset=latest default]" {
		t.Errorf("group config rows %q", got)
	}
	b.Wait("2 rebalances", `document.querySelectorAll('[data-testid=rebalance]').length === 2`)
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=rebalance]').textContent`); !strings.Contains(got, "member-joined") ||
		!strings.Contains(got, "consumer-3-5f8a9c") || !strings.Contains(got, "2 partitions moved") || !strings.Contains(got, "join 300 ms") ||
		!strings.Contains(got, "assignment 0.3 ms") || !strings.Contains(got, "2 → 3 members") || !strings.Contains(got, "1 member event") {
		t.Errorf("newest rebalance reads %q", got)
	}

	// A rebalance shows up without a reload, on top; a person's opened
	// member events stay open across the redraw.
	b.Click(`[data-testid=rebalance][data-generation="7"] details summary`)
	f.set(func() {
		f.timeline = append([]obj{rebalance(time.Now(), 8, "member-left", "consumer-2-5f8a9c", 3)}, f.timeline...)
	})
	b.Wait("the new rebalance on top", `document.querySelectorAll('[data-testid=rebalance]').length === 3 &&
		document.querySelector('[data-testid=rebalance]').dataset.generation === '8'`)
	if !webtest.Eval[bool](b, `document.querySelector('[data-testid=rebalance][data-generation="7"] details').open`) {
		t.Errorf("the opened member events closed on redraw")
	}
	b.Screenshot("group")

	// The group's coordinator stops answering the node asked (502): the
	// page says so over the group as last read, and recovers.
	f.set(func() { f.failGroup = map[string]int{"orders": 502} })
	b.Wait("the coordinator's failure", `!document.querySelector('[data-testid=group-unavailable]').hidden`)
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=group-unavailable]').textContent`); !strings.Contains(got, "coordinator did not answer") ||
		!strings.Contains(got, "coordinated by node 3 (http://10.0.0.3:8080), which did not answer: connection refused") {
		t.Errorf("502 notice reads %q", got)
	}
	if got := webtest.Eval[int](b, `document.querySelectorAll('[data-testid=member]').length`); got != 3 {
		t.Errorf("while the coordinator does not answer the page shows %d members, want the last 3", got)
	}
	if !webtest.Eval[bool](b, `document.getElementById('api-error').hidden`) {
		t.Errorf("a group's 502 shows as the API being unreachable")
	}
	b.Screenshot("group-502")
	f.set(func() { f.failGroup = nil })
	b.Wait("the notice gone", `document.querySelector('[data-testid=group-unavailable]').hidden`)

	// The API goes away and comes back: a banner, then none.
	f.set(func() { f.down = true })
	b.Wait("the unreachable banner", `!document.getElementById('api-error').hidden`)
	if got := webtest.Eval[int](b, `document.querySelectorAll('[data-testid=member]').length`); got != 3 {
		t.Errorf("while the API is down the page shows %d members, want the last 3", got)
	}
	b.Screenshot("unreachable")
	f.set(func() { f.down = false })
	b.Wait("the banner gone", `document.getElementById('api-error').hidden && !document.getElementById('view').classList.contains('stale')`)

	// A hostile name is text: its row, its link, its page.
	b.Open(srv.URL + "/#/")
	b.Wait("the rows", `document.querySelectorAll('[data-testid=group-row]').length === 3`)
	b.Click(`tr[data-tenant="acme"] a`)
	b.Wait("the hostile group's page", `document.querySelector('[data-testid=no-rebalances]')`)
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=group-name]').firstChild.textContent`); got != nasty {
		t.Errorf("group name shows %q, want %q", got, nasty)
	}
	if got := webtest.Eval[int](b, `document.images.length + document.querySelectorAll('img').length`); got != 0 {
		t.Errorf("%d img elements: a name became markup", got)
	}
	if got := webtest.Eval[string](b, `document.title`); got == "pwned" {
		t.Errorf("title %q: a name ran as code", got)
	}

	// A share group (KIP-932): its records in flight on the overview, a
	// dash for the others; on its page, partitions shared by two
	// members in the grid and the share partitions' table, a partition
	// never fetched without a start offset or counts.
	b.Open(srv.URL + "/#/")
	b.Wait("the share group's row", `document.querySelector('tr[data-group="jobs"] [data-testid=in-flight]')`)
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=group-row]')].map(r => r.lastChild.textContent)`); fmt.Sprint(got) != "[— — 9 (5 acquired, 1 archived)]" {
		t.Errorf("in-flight cells %q", got)
	}
	if got := webtest.Eval[string](b, `document.querySelector('tr[data-group="jobs"] .badge').textContent`); got != "share" {
		t.Errorf("jobs' type %q", got)
	}
	b.Click(`tr[data-group="jobs"] a`)
	b.Wait("the share partitions", `document.querySelectorAll('[data-testid=share-partitions] [data-testid=partition]').length === 4`)
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=member]')].map(r => r.querySelector('td').textContent + ' ' + r.dataset.member + ' ' + r.querySelector('td:nth-child(6)').textContent + ' ' + r.querySelector('td:nth-child(7)').textContent)`); fmt.Sprint(got) != "[M1 share-a 4 3 M2 share-b 4 2]" {
		t.Errorf("members (label, id, epoch, assigned) %q", got)
	}
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=assignment-grid] tbody tr')].map(r => r.dataset.partition + ':' + [...r.querySelectorAll('td')].map(c => c.className || '-').join(','))`); fmt.Sprint(got) != "[0:owned,owned,- 1:owned,owned,- 2:-,-,unowned 3:owned,-,-]" {
		t.Errorf("assignment grid (partition: M1, M2, unassigned) %q", got)
	}
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=share-partitions] [data-testid=partition]')].map(r =>
		[...r.querySelectorAll('td')].slice(2, 12).map(c => c.textContent).join(' '))`); fmt.Sprint(got) != "[M1 M2 90 100 8 7 1 4 1 1 1 M1 M2 98 100 2 2 1 1 0 0 0 — 100 100 0 0 0 0 0 0 0 M1 — 100 — — — — — — —]" {
		t.Errorf("share partitions (members, start, log end, lag, in flight, available, acquired, acknowledged, archived, redelivered) %q", got)
	}
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('dl.facts div')].map(d => d.textContent)`); !slices.Contains(got, "Epoch4 (assignment 4)") ||
		!slices.Contains(got, "In flight9") || !slices.Contains(got, "Acquired5") || !slices.Contains(got, "Archived1") || !slices.Contains(got, "Redelivered1") {
		t.Errorf("share group facts %q", got)
	}
	b.Screenshot("share-group")

	// An unknown group says so.
	b.Open(srv.URL + "/#/groups/nobody")
	b.Wait("not found", `document.querySelector('[data-testid=not-found]')`)

	// A group whose shard has no coordinator now (503), opened afresh:
	// a message, not a blank page.
	f.set(func() { f.failGroup = map[string]int{"jobs": 503} })
	b.Open(srv.URL + "/#/groups/jobs")
	b.Wait("no coordinator now", `!document.querySelector('[data-testid=group-unavailable]').hidden`)
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=group-unavailable]').textContent`); !strings.Contains(got, "no coordinator now") || !strings.Contains(got, "its shard is moving") {
		t.Errorf("503 notice reads %q", got)
	}
	f.set(func() { f.failGroup = nil })
	b.Wait("the share group once it has a coordinator", `document.querySelector('[data-testid=group-unavailable]').hidden &&
		document.querySelectorAll('[data-testid=share-partitions] [data-testid=partition]').length === 4`)

	// Topics, internal ones on request.
	b.Open(srv.URL + "/#/topics")
	b.Wait("the topic's partitions", `document.querySelectorAll('[data-topic=events] [data-testid=topic-partition]').length === 6`)
	// Partitions led by the gone node 3 say so; their offsets are
	// unknown.
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-topic=events] [data-testid=topic-partition]')].map(r => r.querySelector('[data-testid=leader]').textContent +
		(r.querySelector('.leader-down') ? '!' : '') + ' ' + r.querySelector('[data-testid=log-end]').textContent)`); fmt.Sprint(got) != "[1 1,100 1 1,150 1 1,200 1 1,250 3 (gone)! — 3 (gone)! —]" {
		t.Errorf("events' leaders and log ends %q", got)
	}
	if got := webtest.Eval[int](b, `document.querySelectorAll('[data-testid=topic]').length`); got != 1 {
		t.Errorf("%d topics shown, want 1 (internal ones hidden)", got)
	}
	// The summary counts what is listed, not the hidden internal topic.
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=topics-summary]').textContent`); got != "1 topic · 6 partitions" {
		t.Errorf("topics summary %q, want 1 topic · 6 partitions", got)
	}
	// Its configs, folded: the summary names the one it sets; opened,
	// every one, that one highlighted, the enforced one marked.
	if got := webtest.Eval[string](b, `document.querySelector('[data-topic=events] [data-testid=topic-configs] summary').textContent`); got != "Configs: 1 setretention.ms=3600000" {
		t.Errorf("events' configs summary %q", got)
	}
	b.Click(`[data-topic=events] [data-testid=topic-configs] summary`)
	b.Wait("the configs opened", `document.querySelector('[data-topic=events] [data-testid=topic-configs]').open`)
	if got := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-topic=events] [data-testid=config]')].map(r => r.dataset.config + '=' + r.querySelector('[data-testid=config-value]').textContent + ' ' + r.dataset.source + ' ' + r.querySelector('[data-testid=enforced]').textContent + (r.classList.contains('explicit') ? ' explicit' : ''))`); fmt.Sprint(got) != "[cleanup.policy=delete default stored only max.message.bytes=1048588 default ✓ enforced retention.ms=3600000 topic stored only explicit]" {
		t.Errorf("events' config rows %q", got)
	}
	b.Click(`[data-testid=show-internal]`)
	b.Wait("the internal topic", `document.querySelector('[data-topic=__consumer_offsets]')`)
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=topics-summary]').textContent`); got != "2 topics · 7 partitions" {
		t.Errorf("topics summary with internal topics %q, want 2 topics · 7 partitions", got)
	}
	if !webtest.Eval[bool](b, `document.querySelector('[data-topic=events] [data-testid=topic-configs]').open`) {
		t.Errorf("the opened configs closed on redraw")
	}
	b.Screenshot("topics")
	b.NoProblems()
}

// TestPageSearchesAndPages checks that the overview leaves searching,
// filtering, sorting and paging to the API (an estate may have a million
// groups): it asks for one page with the person's query, says how many
// match and which it shows, pages on with the answer's cursor and back
// to the first page without one, and keeps the query over a reload.
func TestPageSearchesAndPages(t *testing.T) {
	f := &fakeAPI{extra: 250}
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	b := webtest.Start(t)
	summary := `document.querySelector('[data-testid=groups-summary]').textContent`
	rows := `[...document.querySelectorAll('[data-testid=group-row]')].map(r => r.dataset.group)`
	// query fails unless the list's last query string is want (encoded,
	// so in key order).
	query := func(what, want string) {
		t.Helper()
		if got := f.lastQuery().Encode(); got != want {
			t.Errorf("%s: the page asked with %q, want %q", what, got, want)
		}
	}
	// choose picks an option of a select as a person does: its value
	// changes, then the change event.
	choose := func(id, value string) {
		t.Helper()
		webtest.Eval[bool](b, fmt.Sprintf(`(s => { s.value = %q; return s.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid=%s]'))`, value, id))
	}
	disabled := func(id string) bool {
		return webtest.Eval[bool](b, fmt.Sprintf(`document.querySelector('[data-testid=%s]').disabled`, id))
	}

	b.Open(srv.URL + "/")
	b.Wait("the first page", summary+` === '253 groups · showing 1–100'`)
	query("first page", "limit=100&sort=status")
	// The totals are the server's, over all 253 groups, not the page's.
	b.Wait("the totals of every group", `document.querySelector('[data-testid=groups-totals]').textContent === '255 members · total lag 32,369 · 1 not OK'`)
	if got := webtest.Eval[[]string](b, rows); len(got) != 100 || got[0] != "orders" || got[2] != "g000" {
		t.Errorf("first page's rows %q…, want 100 from orders, %q, g000", got[:min(3, len(got))], nasty)
	}
	if !disabled("prev") || disabled("next") {
		t.Errorf("first page: Previous disabled %v, Next disabled %v; want Previous only", disabled("prev"), disabled("next"))
	}

	// Next asks for the page after, with the cursor of the answer; the
	// poll asks again for that page, cursor and all.
	b.Click(`[data-testid=next]`)
	b.Wait("the second page", summary+` === '253 groups · showing 101–200' && `+rows+`[0] === 'g098'`)
	query("second page", "cursor=100&limit=100&sort=status")
	asked := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.queries)
	}
	n := asked()
	for deadline := time.Now().Add(webtest.Timeout); asked() == n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no poll of the second page within %v", webtest.Timeout)
		}
	}
	query("the poll of the second page", "cursor=100&limit=100&sort=status")
	b.Click(`[data-testid=next]`)
	b.Wait("the last page", summary+` === '253 groups · showing 201–253' && `+rows+`[0] === 'g198'`)
	query("last page", "cursor=200&limit=100&sort=status")
	if !disabled("next") {
		t.Errorf("Next enabled on the last page")
	}
	b.Click(`[data-testid=prev]`)
	b.Wait("the second page again", summary+` === '253 groups · showing 101–200' && `+rows+`[0] === 'g098'`)
	query("second page again", "cursor=100&limit=100&sort=status")
	b.Click(`[data-testid=prev]`)
	b.Wait("the first page again", summary+` === '253 groups · showing 1–100' && `+rows+`[0] === 'orders'`)
	query("first page again", "limit=100&sort=status")

	// Typing searches on the server, from the first page.
	b.Click(`[data-testid=next]`)
	b.Wait("the second page", summary+` === '253 groups · showing 101–200'`)
	b.Do("type g2", chromedp.SendKeys(chromedp.CSS(`[data-testid=group-filter]`), "g2"))
	b.Wait("the groups named g2…", summary+` === '50 groups · showing 1–50'`)
	query("search", "limit=100&q=g2&sort=status")
	if !disabled("prev") || !disabled("next") {
		t.Errorf("one page of results: Previous disabled %v, Next disabled %v; want both", disabled("prev"), disabled("next"))
	}
	choose("group-sort", "lag")
	b.Wait("largest lag first", rows+`[0] === 'g249'`)
	query("sort", "limit=100&q=g2&sort=lag")

	// The query is in the address: a reload keeps it.
	if got := webtest.Eval[string](b, `location.hash`); got != "#/?sort=lag&q=g2" {
		t.Errorf("address %q, want the query in it", got)
	}
	b.Do("reload", chromedp.Reload())
	b.Wait("the query after a reload", summary+` === '50 groups · showing 1–50' && `+rows+`[0] === 'g249'`)
	query("after a reload", "limit=100&q=g2&sort=lag")
	if got := webtest.Eval[string](b, `document.querySelector('[data-testid=group-filter]').value + ' ' + document.querySelector('[data-testid=group-sort]').value`); got != "g2 lag" {
		t.Errorf("search box and sort after a reload %q, want g2 lag", got)
	}

	// The filters: none but the share group is a share group and OK.
	webtest.Eval[bool](b, `(i => { i.value = ''; return i.dispatchEvent(new Event('input')); })(document.querySelector('[data-testid=group-filter]'))`)
	b.Wait("every group again", summary+` === '253 groups · showing 1–100'`)
	choose("status-filter", "OK")
	b.Wait("the OK groups", summary+` === '251 groups · showing 1–100'`)
	choose("type-filter", "share")
	b.Wait("the OK share group", summary+` === '1 group · showing 1–1' && `+rows+`.join() === 'jobs'`)
	query("filters", "limit=100&sort=lag&status=OK&type=share")
	choose("status-filter", "STALL")
	b.Wait("no match", summary+` === '0 groups' && document.querySelector('.empty').textContent === 'No group matches.'`)
	b.NoProblems()
}

// TestPageWithBasicAuth opens the page as a person who signs in with a
// name and password (HTTP Basic, as an organisation's users do): the
// credentials in the address, the API asking for them on every request.
// The page reads the API with them (fetch() refuses a URL with
// credentials, so the page must not resolve its paths against its own
// address as is) and names the caller's organisation.
func TestPageWithBasicAuth(t *testing.T) {
	f := &fakeAPI{org: "acme"}
	api := f.handler()
	var mu sync.Mutex
	authed := map[string]int{} // path → requests that carried the password
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != "pw" {
			w.Header().Set("WWW-Authenticate", `Basic realm="cohort"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		authed[r.URL.Path]++
		mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	b := webtest.Start(t)
	b.Open(strings.Replace(srv.URL, "http://", "http://alice:pw@", 1) + "/")
	b.Wait("the group rows", `document.querySelectorAll('[data-testid=group-row]').length === 3`)
	if got := webtest.Eval[string](b, `document.getElementById('node').textContent`); !strings.Contains(got, "organisation acme") {
		t.Errorf("header %q, want it to name organisation acme", got)
	}
	if webtest.Eval[bool](b, `getComputedStyle(document.querySelector('[data-nav=topics]')).display !== 'none'`) {
		t.Errorf("the topics link shows to an organisation's member, whom the API refuses topics")
	}
	mu.Lock()
	if authed["/api/v1/groups"] == 0 || authed["/api/v1/node"] == 0 {
		t.Errorf("API requests with the password: %v", authed)
	}
	mu.Unlock()
	b.NoProblems()
}
