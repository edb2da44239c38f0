package e2e

// Organisations on the admin HTTP listener of a real node: two
// organisations, acme and globex, both with a group named orders (made
// through the coordinator in each tenant), and the default organisation's
// own orders. The operator (the admin token, or a super user with its
// password) sees all three; alice (acme) and bob (globex), with their
// SCRAM passwords over HTTP Basic, see only their organisation's: in the
// groups list, one group's page, its timeline, /metrics and the web page.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/e2e/webtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"

	dto "github.com/prometheus/client_model/go"
)

const orgsToken = "op-token"

// orgsNode is a node with acme (alice) and globex (bob), the super user
// ops, and a group orders in each of acme, globex and the default
// organisation, each with its own committed offset on topic events.
type orgsNode struct {
	*testkit.SecureNode
	http string
	spec *openAPISpec
}

// orgsCaller is how a request authenticates: a bearer token, a user's
// password, or nothing.
type orgsCaller struct{ token, user, pass string }

var (
	asOperator = orgsCaller{token: orgsToken}
	asAlice    = orgsCaller{user: "alice", pass: "alice-pw"}
	asBob      = orgsCaller{user: "bob", pass: "bob-pw"}
	asOps      = orgsCaller{user: "ops", pass: "ops-pw"}
)

func startOrgsNode(t *testing.T) *orgsNode {
	t.Helper()
	n := testkit.StartSecureNode(t, node.Config{
		HTTPListen: "127.0.0.1:0", AdminToken: orgsToken, SuperUsers: []string{"User:ops"},
		LagSampleInterval: 50 * time.Millisecond,
	}, map[string]string{"alice": "alice-pw", "bob": "bob-pw", "ops": "ops-pw"})
	on := &orgsNode{SecureNode: n, http: n.HTTPAddr()}
	code, body, _ := on.send(t, asOperator, "GET", "/api/v1/openapi.json", "")
	if code != 200 {
		t.Fatalf("openapi.json: %d", code)
	}
	on.spec = &openAPISpec{}
	if err := json.Unmarshal([]byte(body), on.spec); err != nil {
		t.Fatal(err)
	}
	for _, org := range []string{"acme", "globex"} {
		on.do(t, asOperator, "POST", "/api/v1/orgs", `{"name":"`+org+`"}`, http.StatusCreated, nil)
	}
	on.do(t, asOperator, "PUT", "/api/v1/orgs/acme/members/User:alice", "", 200, nil)
	on.do(t, asOperator, "PUT", "/api/v1/orgs/globex/members/"+url.PathEscape("User:bob"), "", 200, nil)

	// Topics are each organisation's own: events in the default one, and
	// acme's and globex's, made by their members.
	extCreateTopic(t, n.Addr("PLAINTEXT"), "events", 1)
	for user, pass := range map[string]string{"alice": "alice-pw", "bob": "bob-pw"} {
		cl, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", user, pass)...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "events")
		cancel()
		cl.Close()
		if err != nil || r.Err != nil {
			t.Fatalf("%s: create events: %v %v", user, err, r.Err)
		}
	}
	for tenant, off := range map[string]int64{"": 1, "acme": 10, "globex": 20} {
		commitIn(t, n.Coordinator(), tenant, "orders", off)
	}
	// The groups list answers from the lag sampler: wait for it to have
	// read all three.
	testkit.Eventually(t, 10*time.Second, "the sampler reads the three groups", func() bool {
		var l struct{ Groups []map[string]any }
		on.do(t, asOperator, "GET", "/api/v1/groups", "", 200, &l)
		return len(l.Groups) == 3
	})
	return on
}

// commitIn commits offset for partition 0 of events as group in tenant,
// through the coordinator, as a connection of that tenant's principal
// would.
func commitIn(t *testing.T, co *coordinator.Coordinator, tenant, group string, offset int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation = group, -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, ok := co.Handle(ctx, coordinator.Request{Msg: req, Tenant: tenant, ClientID: "test"})().(*kmsg.OffsetCommitResponse)
	if !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("commit in %q: unexpected answer %+v", tenant, resp)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("commit in %q: %v", tenant, err)
	}
}

// do sends a request as c and checks its status; out, if set, gets the
// JSON answer. A GET's answer is checked against openapi.json.
func (on *orgsNode) do(t *testing.T, c orgsCaller, method, path, body string, wantCode int, out any) string {
	t.Helper()
	code, got, _ := on.send(t, c, method, path, body)
	if code != wantCode {
		t.Fatalf("%s %s as %+v: %d %s, want %d", method, path, c.user, code, got, wantCode)
	}
	if strings.HasPrefix(path, "/api/") && got != "" {
		var v any
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Fatalf("%s %s: not JSON: %v: %s", method, path, err, got)
		}
		if method == "GET" {
			if err := on.spec.check(path, code, v); err != nil {
				t.Fatalf("GET %s: answer does not match openapi.json: %v\n%s", path, err, got)
			}
		}
	}
	if out != nil {
		if err := json.Unmarshal([]byte(got), out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return got
}

func (on *orgsNode) send(t *testing.T, c orgsCaller, method, path, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+on.http+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.user != "":
		req.SetBasicAuth(c.user, c.pass)
	}
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

type orgsGroup struct {
	Group, Org, Tenant, RRL string
	CgpID                   string `json:"cgp_id"`
	Partitions              []struct {
		CommittedOffset int64 `json:"committed_offset"`
	}
}

func (on *orgsNode) groups(t *testing.T, c orgsCaller, query string) []orgsGroup {
	t.Helper()
	var l struct{ Groups []orgsGroup }
	on.do(t, c, "GET", "/api/v1/groups"+query, "", 200, &l)
	sort.Slice(l.Groups, func(i, j int) bool { return l.Groups[i].Org < l.Groups[j].Org })
	return l.Groups
}

func TestAdminOrgsScoping(t *testing.T) {
	on := startOrgsNode(t)

	// The operator sees the three orders, each with its own id and RRL.
	all := on.groups(t, asOperator, "")
	var rrls, ids []string
	for _, g := range all {
		if g.Group != "orders" {
			t.Errorf("operator sees group %q", g.Group)
		}
		rrls, ids = append(rrls, g.RRL), append(ids, g.CgpID)
	}
	if want := []string{"acme/consumer-groups/orders", "default/consumer-groups/orders", "globex/consumer-groups/orders"}; !slices.Equal(rrls, want) {
		t.Errorf("operator's RRLs %q, want %q", rrls, want)
	}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != 3 || !strings.HasPrefix(ids[0], "cgp_") {
		t.Errorf("cgp_ ids %q, want 3 distinct", ids)
	}
	// A super user with its password is an operator too; ?org= narrows,
	// ?tenant= is its older spelling.
	if got := on.groups(t, asOps, ""); len(got) != 3 {
		t.Errorf("super user sees %d groups, want 3", len(got))
	}
	if got := on.groups(t, asOperator, "?org=globex"); len(got) != 1 || got[0].Org != "globex" {
		t.Errorf("operator ?org=globex: %+v", got)
	}
	if got := on.groups(t, asOperator, "?tenant="); len(got) != 1 || got[0].Org != "default" || got[0].Tenant != "" {
		t.Errorf("operator ?tenant=: %+v", got)
	}

	// alice and bob see their organisation's orders only, by list, by
	// name and by timeline.
	for _, c := range []struct {
		who      orgsCaller
		org      string
		offset   int64
		otherOrg string
	}{{asAlice, "acme", 10, "globex"}, {asBob, "globex", 20, "acme"}} {
		got := on.groups(t, c.who, "")
		if len(got) != 1 || got[0].Org != c.org || got[0].RRL != c.org+"/consumer-groups/orders" {
			t.Errorf("%s's groups %+v, want %s's orders alone", c.who.user, got, c.org)
		}
		if got := on.groups(t, c.who, "?org="+c.org); len(got) != 1 {
			t.Errorf("%s ?org=%s: %d groups", c.who.user, c.org, len(got))
		}
		var d orgsGroup
		on.do(t, c.who, "GET", "/api/v1/groups/orders", "", 200, &d)
		if d.Org != c.org || len(d.Partitions) != 1 || d.Partitions[0].CommittedOffset != c.offset {
			t.Errorf("%s's orders: %+v, want %s's, committed at %d", c.who.user, d, c.org, c.offset)
		}
		on.do(t, c.who, "GET", "/api/v1/groups/orders/timeline", "", 200, nil)
		// Another organisation, named: forbidden; a group only another
		// organisation has: missing, as one nobody has.
		for _, path := range []string{"/api/v1/groups?org=" + c.otherOrg, "/api/v1/groups/orders?org=" + c.otherOrg, "/api/v1/groups/orders/timeline?tenant=" + c.otherOrg, "/api/v1/groups?org=default"} {
			on.do(t, c.who, "GET", path, "", http.StatusForbidden, nil)
		}
		// Operator routes.
		on.do(t, c.who, "GET", "/api/v1/orgs", "", http.StatusForbidden, nil)
		on.do(t, c.who, "POST", "/api/v1/orgs", `{"name":"evil"}`, http.StatusForbidden, nil)
		on.do(t, c.who, "PUT", "/api/v1/orgs/"+c.otherOrg+"/members/User:"+c.who.user, "", http.StatusForbidden, nil)
		on.do(t, c.who, "GET", "/api/v1/topics", "", http.StatusForbidden, nil)
		var n struct {
			Org   string
			Store map[string]any
		}
		on.do(t, c.who, "GET", "/api/v1/node", "", 200, &n)
		if n.Org != c.org || n.Store["path"] != nil {
			t.Errorf("%s's node: %+v, want org %s and no store path", c.who.user, n, c.org)
		}
	}
	commitIn(t, on.Coordinator(), "globex", "globex-only", 5)
	testkit.Eventually(t, 10*time.Second, "the sampler reads globex-only", func() bool { return len(on.groups(t, asBob, "")) == 2 })
	missing := on.do(t, asAlice, "GET", "/api/v1/groups/globex-only", "", http.StatusNotFound, nil)
	nobody := on.do(t, asAlice, "GET", "/api/v1/groups/nobody-has-it", "", http.StatusNotFound, nil)
	if strings.Replace(missing, "globex-only", "nobody-has-it", 1) != nobody {
		t.Errorf("another organisation's group answers %q, a missing one %q: they must not differ", missing, nobody)
	}
	on.do(t, asAlice, "GET", "/api/v1/groups/globex-only/timeline", "", http.StatusNotFound, nil)

	// A wrong password is refused, with a Basic challenge for browsers,
	// never taken as an anonymous operator.
	code, _, hdr := on.send(t, orgsCaller{user: "alice", pass: "wrong"}, "GET", "/api/v1/groups", "")
	if code != http.StatusUnauthorized || !slices.ContainsFunc(hdr.Values("WWW-Authenticate"), func(v string) bool { return strings.HasPrefix(v, "Basic ") }) {
		t.Errorf("wrong password: %d %q, want 401 with a Basic challenge", code, hdr.Values("WWW-Authenticate"))
	}
	if code, _, _ := on.send(t, orgsCaller{user: "mallory", pass: "x"}, "GET", "/api/v1/groups", ""); code != http.StatusUnauthorized {
		t.Errorf("unknown user: %d, want 401", code)
	}
	if code, _, _ := on.send(t, orgsCaller{}, "GET", "/api/v1/groups", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", code)
	}
}

// metricOrgs scrapes /metrics as c and returns, per family, the org
// label values present ("-" for a series without one).
func (on *orgsNode) metricOrgs(t *testing.T, c orgsCaller) map[string][]string {
	t.Helper()
	code, body, _ := on.send(t, c, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics as %s: %d %s", c.user, code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string][]string{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[name] = append(out[name], orgLabel(m))
		}
		slices.Sort(out[name])
		out[name] = slices.Compact(out[name])
	}
	return out
}

func orgLabel(m *dto.Metric) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == "org" {
			return lp.GetValue()
		}
	}
	return "-"
}

func TestAdminOrgsMetrics(t *testing.T) {
	on := startOrgsNode(t)
	perGroup := []string{
		"kafka_consumergroup_current_offset", "kafka_consumergroup_lag", "kafka_consumergroup_lag_sum",
		"kafka_consumergroup_current_offset_sum", "kafka_consumergroup_members",
		"cohort_consumergroup_generation", "cohort_consumergroup_status", "cohort_groups", "cohort_offsets",
	}
	var ops map[string][]string
	testkit.Eventually(t, 10*time.Second, "every tenant's lag status series", func() bool {
		ops = on.metricOrgs(t, asOperator)
		return len(ops["cohort_consumergroup_status"]) == 3
	})
	for _, f := range perGroup {
		if want := []string{"acme", "default", "globex"}; !slices.Equal(ops[f], want) {
			t.Errorf("operator's %s org labels %q, want %q", f, ops[f], want)
		}
	}
	if !slices.Equal(ops["go_goroutines"], []string{"-"}) || ops["cohort_requests_total"] == nil {
		t.Errorf("operator's scrape lacks the process's and node's series: %q, %q", ops["go_goroutines"], ops["cohort_requests_total"])
	}
	for _, c := range []struct {
		who orgsCaller
		org string
	}{{asAlice, "acme"}, {asBob, "globex"}} {
		got := on.metricOrgs(t, c.who)
		for _, f := range perGroup {
			if !slices.Equal(got[f], []string{c.org}) {
				t.Errorf("%s's %s org labels %q, want only %s", c.who.user, f, got[f], c.org)
			}
		}
		for f, orgs := range got {
			if !slices.Equal(orgs, []string{c.org}) {
				t.Errorf("%s sees %s with org labels %q", c.who.user, f, orgs)
			}
		}
	}
}

func TestAdminOrgsManagement(t *testing.T) {
	on := startOrgsNode(t)
	var l struct {
		Orgs []struct {
			Name    string
			Members []string
		}
	}
	on.do(t, asOperator, "GET", "/api/v1/orgs", "", 200, &l)
	if len(l.Orgs) != 3 || l.Orgs[0].Name != "default" || l.Orgs[1].Name != "acme" || !slices.Equal(l.Orgs[1].Members, []string{"User:alice"}) {
		t.Errorf("orgs %+v", l.Orgs)
	}
	for _, c := range []struct {
		method, path, body string
		code               int
		errHas             string
	}{
		{"POST", "/api/v1/orgs", `{"name":"acme"}`, http.StatusConflict, "already exists"},
		{"POST", "/api/v1/orgs", `{"name":"default"}`, http.StatusConflict, "default"},
		{"POST", "/api/v1/orgs", `{"name":"Bad_Name"}`, http.StatusBadRequest, "a-z"},
		{"POST", "/api/v1/orgs", `not json`, http.StatusBadRequest, "JSON"},
		{"DELETE", "/api/v1/orgs/acme", "", http.StatusConflict, "members"},
		{"DELETE", "/api/v1/orgs/nowhere", "", http.StatusNotFound, "no such organisation"},
		{"DELETE", "/api/v1/orgs/default", "", http.StatusBadRequest, "default"},
		{"PUT", "/api/v1/orgs/nowhere/members/User:carol", "", http.StatusNotFound, "no such organisation"},
		{"PUT", "/api/v1/orgs/acme/members/carol", "", http.StatusBadRequest, "Type:name"},
		{"DELETE", "/api/v1/orgs/acme/members/User:bob", "", http.StatusNotFound, "not a member"},
		{"DELETE", "/api/v1/orgs/default/members/User:bob", "", http.StatusBadRequest, "default"},
	} {
		got := on.do(t, asOperator, c.method, c.path, c.body, c.code, nil)
		var e struct{ Error string }
		if json.Unmarshal([]byte(got), &e); !strings.Contains(e.Error, c.errHas) {
			t.Errorf("%s %s: error %q, want it to mention %q", c.method, c.path, e.Error, c.errHas)
		}
	}
	// Moving alice to globex: she sees globex's orders at once.
	on.do(t, asOperator, "PUT", "/api/v1/orgs/globex/members/User:alice", "", 200, nil)
	if got := on.groups(t, asAlice, ""); len(got) != 1 || got[0].Org != "globex" {
		t.Errorf("alice moved to globex sees %+v", got)
	}
	// Out of globex: back in the default organisation.
	on.do(t, asOperator, "DELETE", "/api/v1/orgs/globex/members/User:alice", "", 200, nil)
	if got := on.groups(t, asAlice, ""); len(got) != 1 || got[0].Org != "default" {
		t.Errorf("alice back in default sees %+v", got)
	}
	on.do(t, asOperator, "DELETE", "/api/v1/orgs/acme", "", http.StatusNoContent, nil)
}

// TestWebPageOrgs opens the page in headless Chromium as alice and as
// bob, who give their passwords when the node asks (HTTP Basic, the
// credentials in the URL as a person would type them at the prompt):
// each sees their organisation's orders alone.
func TestWebPageOrgs(t *testing.T) {
	on := startOrgsNode(t)
	for _, c := range []struct {
		who orgsCaller
		org string
	}{{asAlice, "acme"}, {asBob, "globex"}} {
		t.Run(c.who.user, func(t *testing.T) {
			b := webtest.Start(t)
			b.Open("http://" + url.UserPassword(c.who.user, c.who.pass).String() + "@" + on.http + "/")
			b.Wait("the group row", `document.querySelectorAll('[data-testid=group-row]').length > 0`)
			rows := webtest.Eval[[]string](b, `[...document.querySelectorAll('[data-testid=group-row]')].map(r => r.dataset.group + '@' + r.dataset.tenant)`)
			if want := []string{"orders@" + c.org}; !slices.Equal(rows, want) {
				t.Errorf("%s's page shows %q, want %q", c.who.user, rows, want)
			}
			if got := webtest.Eval[string](b, `document.getElementById('node').textContent`); !strings.Contains(got, "organisation "+c.org) {
				t.Errorf("header %q, want it to name organisation %s", got, c.org)
			}
			b.Click(`tr[data-group="orders"] a`)
			b.Wait("the group's RRL", `document.querySelector('[data-testid=rrl]')`)
			if got := webtest.Eval[string](b, `document.querySelector('[data-testid=rrl]').textContent`); got != c.org+"/consumer-groups/orders" {
				t.Errorf("RRL %q", got)
			}
			b.NoProblems()
		})
	}
}
