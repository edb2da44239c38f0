package e2e

// The admin JSON API of the real binary, against group states real
// clients made: a group with offsets and no members, a classic group and
// a KIP-848 group consuming, a share group (KIP-932) whose consumer
// holds records, a group whose name needs escaping. Every answer is
// checked against the OpenAPI description the binary serves.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// getJSON GETs an API route, checks its status and decodes its body, and
// checks the body against the route's schema in the served OpenAPI
// description.
func getJSON(t *testing.T, spec *openAPISpec, addr, path string, wantCode int, out any) {
	t.Helper()
	code, body := httpGet(t, "http://"+addr+path)
	if code != wantCode {
		t.Fatalf("GET %s: %d %s, want %d", path, code, body, wantCode)
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("GET %s: not JSON: %v: %s", path, err, body)
	}
	if spec != nil {
		if err := spec.check(path, wantCode, v); err != nil {
			t.Fatalf("GET %s: answer does not match openapi.json: %v\n%s", path, err, body)
		}
	}
	if out != nil {
		if err := json.Unmarshal([]byte(body), out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
}

// openAPISpec is the part of an OpenAPI 3.0 document the check reads.
type openAPISpec struct {
	Paths map[string]map[string]struct {
		Responses map[string]struct {
			Content map[string]struct {
				Schema *schema `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Nullable             bool               `json:"nullable"`
	Required             []string           `json:"required"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	Enum                 []any              `json:"enum"`
	AdditionalProperties any                `json:"additionalProperties"`
}

// check validates v, the answer of path with code, against the route's
// schema: every required property present, no property the schema does
// not declare (unless additionalProperties), types and enums.
func (s *openAPISpec) check(path string, code int, v any) error {
	u, _ := url.Parse(path)
	segs := strings.Split(u.EscapedPath(), "/")
	for route, ops := range s.Paths {
		rsegs := strings.Split(route, "/")
		if len(rsegs) != len(segs) {
			continue
		}
		match := true
		for i := range rsegs {
			if rsegs[i] != segs[i] && !strings.HasPrefix(rsegs[i], "{") {
				match = false
			}
		}
		if !match {
			continue
		}
		resp, ok := ops["get"].Responses[fmt.Sprint(code)]
		if !ok {
			return fmt.Errorf("route %s declares no %d answer", route, code)
		}
		c, ok := resp.Content["application/json"]
		if !ok || c.Schema == nil {
			return fmt.Errorf("route %s %d declares no JSON schema", route, code)
		}
		return s.validate("$", c.Schema, v)
	}
	return fmt.Errorf("no route in openapi.json matches %s", path)
}

func (s *openAPISpec) validate(at string, sc *schema, v any) error {
	if sc.Ref != "" {
		name := strings.TrimPrefix(sc.Ref, "#/components/schemas/")
		ref, ok := s.Components.Schemas[name]
		if !ok {
			return fmt.Errorf("%s: unknown $ref %s", at, sc.Ref)
		}
		return s.validate(at, ref, v)
	}
	if v == nil {
		if sc.Nullable {
			return nil
		}
		return fmt.Errorf("%s: null, not nullable", at)
	}
	if len(sc.Enum) > 0 && !slices.Contains(sc.Enum, v) {
		return fmt.Errorf("%s: %v not in %v", at, v, sc.Enum)
	}
	switch sc.Type {
	case "object", "":
		obj, ok := v.(map[string]any)
		if !ok {
			if sc.Type == "" {
				return nil
			}
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		for _, r := range sc.Required {
			if _, ok := obj[r]; !ok {
				return fmt.Errorf("%s: required %q missing", at, r)
			}
		}
		for k, pv := range obj {
			ps, ok := sc.Properties[k]
			if !ok {
				if sc.AdditionalProperties == true {
					continue
				}
				return fmt.Errorf("%s: %q is not declared", at, k)
			}
			if err := s.validate(at+"."+k, ps, pv); err != nil {
				return err
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", at, v)
		}
		for i, e := range arr {
			if err := s.validate(fmt.Sprintf("%s[%d]", at, i), sc.Items, e); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want a string", at, v)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("%s: %T, want a number", at, v)
		}
		if sc.Type == "integer" && f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want an integer", at, f)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want a boolean", at, v)
		}
	}
	return nil
}

// The API's answers, as far as the test reads them.
type apiGroup struct {
	Group              string   `json:"group"`
	CgpID              string   `json:"cgp_id"`
	RRL                string   `json:"rrl"`
	Type               string   `json:"type"`
	State              string   `json:"state"`
	TotalLag           int64    `json:"total_lag"`
	Status             string   `json:"status"`
	TimeToClearSeconds *float64 `json:"time_to_clear_seconds"`
	LagTrend           []struct {
		Lag int64 `json:"lag"`
	} `json:"lag_trend"`
	Share *apiShareCounts `json:"share"`
	// Cluster mode: the group's coordinator, and when its sampler read
	// what is shown.
	Coordinator *int32     `json:"coordinator"`
	SampledAt   *time.Time `json:"sampled_at"`
}

// apiShareCounts are a share group's records in flight by state.
type apiShareCounts struct {
	InFlight     int64 `json:"in_flight"`
	Available    int64 `json:"available"`
	Acquired     int64 `json:"acquired"`
	Acknowledged int64 `json:"acknowledged"`
	Archived     int64 `json:"archived"`
	Redelivered  int64 `json:"redelivered"`
}

type apiGroupDetail struct {
	apiGroup
	Members []struct {
		MemberID    string `json:"member_id"`
		ClientID    string `json:"client_id"`
		MemberEpoch *int32 `json:"member_epoch"`
		Assignment  []struct {
			Topic      string  `json:"topic"`
			Partitions []int32 `json:"partitions"`
		} `json:"assignment"`
	} `json:"members"`
	Balancer        string `json:"balancer"`
	Generation      *int32 `json:"generation"`
	Epoch           *int32 `json:"epoch"`
	AssignmentEpoch *int32 `json:"assignment_epoch"`
	Partitions      []struct {
		Topic           string `json:"topic"`
		Partition       int32  `json:"partition"`
		CommittedOffset int64  `json:"committed_offset"`
		LogEndOffset    int64  `json:"log_end_offset"`
		Lag             *int64 `json:"lag"`
		MemberID        string `json:"member_id"`
		Status          string `json:"status"`
		// A share group's.
		MemberIDs []string `json:"member_ids"`
		Share     *struct {
			StartOffset int64 `json:"start_offset"`
			EndOffset   int64 `json:"end_offset"`
			apiShareCounts
		} `json:"share"`
	} `json:"partitions"`
}

var cgpID = regexp.MustCompile(`^cgp_[0-9A-HJKMNP-TV-Z]{26}$`)

func TestAdminAPI(t *testing.T) {
	// A share consumer's held records stay acquired for the whole test.
	p := testkit.StartBinary(t, t.TempDir(), "--group-initial-rebalance-delay", "100ms", "--lag-sample-interval", "100ms",
		"--group-share-record-lock-duration", "10m")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var spec openAPISpec
	getJSON(t, nil, p.HTTPAddr, "/api/v1/openapi.json", 200, &spec)
	if len(spec.Paths) < 5 {
		t.Fatalf("openapi.json has %d paths", len(spec.Paths))
	}

	// Three partitions of 10 records; the group "idle" committed 3, 5
	// and 10 and has no member.
	extCreateTopic(t, p.Addr, "api", 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for part := range int32(3) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "api", Partition: part, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	for _, g := range []string{"idle", "Team/Orders v2"} {
		offs := kadm.Offsets{}
		for part, at := range []int64{3, 5, 10} {
			offs.Add(kadm.Offset{Topic: "api", Partition: int32(part), At: at})
		}
		resp, err := adm.CommitOffsets(ctx, g, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %s: %v", g, err)
		}
	}
	member := func(group string, consumer bool) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(p.Addr), kgo.ClientID("api-" + group), kgo.ConsumerGroup(group), kgo.ConsumeTopics("api"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond), kgo.AutoCommitInterval(100 * time.Millisecond)}
		if consumer {
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
		}
		return pollingMember(ctx, t, opts...)
	}
	classic := member("live-classic", false)
	defer classic.Close()
	kip848 := member("live-848", true)
	defer kip848.Close()

	// A share group (KIP-932) whose consumer holds records: partition 0
	// with start offset 10, in flight to 16, 4 acquired, 1 acknowledged,
	// 1 archived, 1 redelivered and a lag of 4; partition 1 with start
	// offset 4, nothing in flight and no lag (testkit.ShareInFlight).
	extCreateTopic(t, p.Addr, "api-share", 2)
	testkit.ShareInFlight(ctx, t, p.Addr, "live-share", "api-share", "api-live-share")
	shareWant := apiShareCounts{InFlight: 6, Acquired: 4, Acknowledged: 1, Archived: 1, Redelivered: 1}

	// The list: every group, with a cgp_ id and an RRL; the live groups
	// caught up; the idle one STOPped (lag, no commit for a window).
	var list struct {
		Groups []apiGroup `json:"groups"`
	}
	byName := map[string]apiGroup{}
	testkit.Eventually(t, 60*time.Second, "the live groups at lag 0 and OK, idle STOP, the share group's released record held again", func() bool {
		getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups", 200, &list)
		clear(byName)
		for _, g := range list.Groups {
			byName[g.Group] = g
		}
		sh := byName["live-share"].Share
		return byName["live-classic"].Status == "OK" && byName["live-classic"].TotalLag == 0 &&
			byName["live-848"].Status == "OK" && byName["live-848"].TotalLag == 0 && byName["idle"].Status == "STOP" &&
			sh != nil && *sh == shareWant
	})
	for name, want := range map[string]struct {
		typ, state, rrl string
		lag             int64
	}{
		"idle":           {"classic", "Empty", "default/consumer-groups/idle", 12},
		"Team/Orders v2": {"classic", "Empty", "default/consumer-groups/team-orders-v2", 12},
		"live-classic":   {"classic", "Stable", "default/consumer-groups/live-classic", 0},
		"live-848":       {"consumer", "Stable", "default/consumer-groups/live-848", 0},
		"live-share":     {"share", "Stable", "default/consumer-groups/live-share", 4},
	} {
		g := byName[name]
		if g.Type != want.typ || g.State != want.state || g.RRL != want.rrl || g.TotalLag != want.lag || !cgpID.MatchString(g.CgpID) {
			t.Errorf("group %q: %+v, want type %s state %s rrl %s lag %d and a cgp_ id", name, g, want.typ, want.state, want.rrl, want.lag)
		}
		if len(g.LagTrend) == 0 || g.LagTrend[len(g.LagTrend)-1].Lag != want.lag {
			t.Errorf("group %q: lag trend %+v, want it to end at %d", name, g.LagTrend, want.lag)
		}
	}
	if c := byName["live-classic"].TimeToClearSeconds; c == nil || *c != 0 {
		t.Errorf("live-classic: time to clear %v, want 0", c)
	}
	if c := byName["idle"].TimeToClearSeconds; c != nil {
		t.Errorf("idle: time to clear %v, want none (it consumes nothing)", *c)
	}
	for name, g := range byName {
		if (g.Share != nil) != (name == "live-share") {
			t.Errorf("group %q: share counts %+v, want them for the share group only", name, g.Share)
		}
	}

	// One group: the idle one's partitions, lag and status.
	var idle apiGroupDetail
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/idle", 200, &idle)
	if len(idle.Partitions) != 3 || len(idle.Members) != 0 || idle.CgpID != byName["idle"].CgpID {
		t.Fatalf("idle: %+v", idle)
	}
	for i, want := range []int64{7, 5, 0} {
		pt := idle.Partitions[i]
		wantStatus := "STOP"
		if want == 0 {
			wantStatus = "OK"
		}
		if pt.Partition != int32(i) || pt.CommittedOffset != []int64{3, 5, 10}[i] || pt.LogEndOffset != 10 || pt.Lag == nil || *pt.Lag != want || pt.Status != wantStatus {
			t.Errorf("idle partition %d: %+v, want lag %d status %s", i, pt, want, wantStatus)
		}
	}
	// An escaped name.
	var team apiGroupDetail
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/"+url.PathEscape("Team/Orders v2"), 200, &team)
	if team.Group != "Team/Orders v2" || team.TotalLag != 12 {
		t.Errorf("escaped group: %+v", team.apiGroup)
	}

	// The classic group: one member holding all three partitions.
	var live apiGroupDetail
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/live-classic", 200, &live)
	if len(live.Members) != 1 || live.Generation == nil || *live.Generation < 1 || live.Balancer == "" {
		t.Fatalf("live-classic: %+v", live)
	}
	m := live.Members[0]
	if m.ClientID != "api-live-classic" || len(m.Assignment) != 1 || len(m.Assignment[0].Partitions) != 3 {
		t.Errorf("live-classic member: %+v", m)
	}
	for _, pt := range live.Partitions {
		if pt.MemberID != m.MemberID || pt.CommittedOffset != 10 || pt.Lag == nil || *pt.Lag != 0 {
			t.Errorf("live-classic partition: %+v", pt)
		}
	}

	// The KIP-848 group: epochs, and the member's epoch and assignment.
	var k apiGroupDetail
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/live-848", 200, &k)
	if k.Epoch == nil || k.AssignmentEpoch == nil || *k.Epoch < 1 || len(k.Members) != 1 || k.Members[0].MemberEpoch == nil ||
		*k.Members[0].MemberEpoch != *k.AssignmentEpoch || len(k.Members[0].Assignment) != 1 || len(k.Members[0].Assignment[0].Partitions) != 3 {
		t.Errorf("live-848: %+v", k)
	}
	// The share group: its member, each partition's members, start
	// offset, records in flight by state and lag (KIP-1226).
	var sg apiGroupDetail
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/live-share", 200, &sg)
	if sg.Type != "share" || sg.State != "Stable" || sg.Balancer != "simple" || sg.Epoch == nil || sg.AssignmentEpoch == nil || sg.Generation != nil ||
		sg.TotalLag != 4 || sg.Share == nil || *sg.Share != shareWant || len(sg.Members) != 1 || len(sg.Partitions) != 2 {
		t.Fatalf("live-share: %+v", sg)
	}
	sm := sg.Members[0]
	if sm.ClientID != "api-live-share" || sm.MemberEpoch == nil || *sm.MemberEpoch != *sg.AssignmentEpoch ||
		len(sm.Assignment) != 1 || sm.Assignment[0].Topic != "api-share" || !slices.Equal(sm.Assignment[0].Partitions, []int32{0, 1}) {
		t.Errorf("live-share member: %+v", sm)
	}
	for i, want := range []struct {
		start, end, lag, logEnd int64
		counts                  apiShareCounts
	}{{10, 16, 4, 16, shareWant}, {4, 4, 0, 4, apiShareCounts{}}} {
		pt := sg.Partitions[i]
		if pt.Topic != "api-share" || pt.Partition != int32(i) || !slices.Equal(pt.MemberIDs, []string{sm.MemberID}) || pt.MemberID != "" ||
			pt.CommittedOffset != -1 || pt.LogEndOffset != want.logEnd || pt.Lag == nil || *pt.Lag != want.lag || pt.Share == nil ||
			pt.Share.StartOffset != want.start || pt.Share.EndOffset != want.end || pt.Share.apiShareCounts != want.counts {
			t.Errorf("live-share partition %d: %+v %+v, want start %d end %d lag %d %+v", i, pt, pt.Share, want.start, want.end, want.lag, want.counts)
		}
	}

	// Each live group's timeline: the rebalance its one member's join
	// caused, completed, in the group's generation or epoch.
	for name, gen := range map[string]int32{"live-classic": *live.Generation, "live-848": *k.Epoch, "live-share": *sg.Epoch} {
		var tl struct {
			Rebalances []struct {
				Cause      string `json:"cause"`
				MemberID   string `json:"member_id"`
				Generation int32  `json:"generation"`
				InProgress bool   `json:"in_progress"`
				Members    int    `json:"members"`
			} `json:"rebalances"`
		}
		getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/"+name+"/timeline", 200, &tl)
		if len(tl.Rebalances) == 0 {
			t.Fatalf("%s: empty timeline", name)
		}
		r := tl.Rebalances[0]
		if r.Cause != "member-joined" || r.MemberID == "" || r.Generation != gen || r.InProgress || r.Members != 1 {
			t.Errorf("%s: last rebalance %+v, want member-joined, completed, generation %d, 1 member", name, r, gen)
		}
	}
	var idleTL struct {
		Rebalances []any `json:"rebalances"`
	}
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/idle/timeline", 200, &idleTL)
	if idleTL.Rebalances == nil || len(idleTL.Rebalances) != 0 {
		t.Errorf("idle: timeline %v, want []", idleTL.Rebalances)
	}

	var nd struct {
		Mode        string `json:"mode"`
		Version     string `json:"version"`
		ShardsTotal int    `json:"shards_total"`
		ShardsHeld  []int  `json:"shards_held"`
		KafkaAddr   string `json:"kafka_addr"`
		Store       struct {
			Kind string `json:"kind"`
		} `json:"store"`
	}
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/node", 200, &nd)
	if nd.Mode != "single" || nd.Version == "" || nd.ShardsTotal < 1 || len(nd.ShardsHeld) != nd.ShardsTotal || nd.KafkaAddr != p.Addr || nd.Store.Kind != "pebble" {
		t.Errorf("node: %+v", nd)
	}

	// Topics: ours, and __consumer_offsets, internal, a partition per
	// shard, holding at least the 12 commits.
	var topics struct {
		Topics []struct {
			Name       string `json:"name"`
			Internal   bool   `json:"internal"`
			Partitions []struct {
				LogEndOffset int64 `json:"log_end_offset"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/topics", 200, &topics)
	seen := map[string]bool{}
	for _, tp := range topics.Topics {
		seen[tp.Name] = true
		var ends int64
		for _, pt := range tp.Partitions {
			ends += pt.LogEndOffset
		}
		switch tp.Name {
		case "__consumer_offsets":
			if !tp.Internal || len(tp.Partitions) != nd.ShardsTotal || ends < 12 {
				t.Errorf("__consumer_offsets: internal %v, %d partitions, %d records; want internal, one partition per shard, the 12 commits at least", tp.Internal, len(tp.Partitions), ends)
			}
		case "api":
			if tp.Internal || len(tp.Partitions) != 3 || ends != 30 {
				t.Errorf("topic api: %+v, want 3 partitions of 10", tp)
			}
		case "api-share":
			if tp.Internal || len(tp.Partitions) != 2 || ends != 20 {
				t.Errorf("topic api-share: %+v, want 2 partitions of 16 and 4 records", tp)
			}
		default:
			if tp.Internal {
				t.Errorf("topic %s internal", tp.Name)
			}
		}
	}
	if !seen["api"] || !seen["__consumer_offsets"] {
		t.Errorf("topics: %+v", topics)
	}

	// What is not there.
	getJSON(t, &spec, p.HTTPAddr, "/api/v1/groups/nobody", 404, nil)
	getJSON(t, nil, p.HTTPAddr, "/api/v1/nothing", 404, nil)

	// The status as a metric.
	mfs := scrape(t, p.HTTPAddr)
	if got := sample(mfs, "cohort_consumergroup_status", map[string]string{"consumergroup": "idle", "status": "STOP"}); got != 1 {
		t.Errorf("cohort_consumergroup_status{idle,STOP} = %v, want 1", got)
	}
	if got := sample(mfs, "cohort_consumergroup_time_to_clear_seconds", map[string]string{"consumergroup": "live-classic"}); got != 0 {
		t.Errorf("cohort_consumergroup_time_to_clear_seconds{live-classic} = %v, want 0", got)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"cohort_groups", map[string]string{"type": "classic", "state": "Empty"}, 2},
		{"cohort_groups", map[string]string{"type": "classic", "state": "Stable"}, 1},
		{"cohort_groups", map[string]string{"type": "consumer", "state": "Stable"}, 1},
		{"cohort_groups", map[string]string{"type": "share", "state": "Stable"}, 1},
		{"cohort_sharegroup_start_offset", map[string]string{"sharegroup": "live-share", "topic": "api-share", "partition": "0"}, 10},
		{"cohort_sharegroup_lag", map[string]string{"sharegroup": "live-share", "topic": "api-share", "partition": "0"}, 4},
		{"cohort_sharegroup_lag_sum", map[string]string{"sharegroup": "live-share", "topic": "api-share"}, 4},
		{"cohort_sharegroup_records_in_flight", map[string]string{"sharegroup": "live-share", "topic": "api-share", "state": "acquired"}, 4},
		{"cohort_sharegroup_records_in_flight", map[string]string{"sharegroup": "live-share", "topic": "api-share", "state": "archived"}, 1},
		{"cohort_sharegroup_records_redelivered", map[string]string{"sharegroup": "live-share", "topic": "api-share"}, 1},
		{"cohort_offsets", nil, 12},
		{"cohort_pending_members", nil, 0},
		{"cohort_consumergroup_generation", map[string]string{"consumergroup": "live-classic", "type": "classic"}, float64(*live.Generation)},
		{"cohort_consumergroup_generation", map[string]string{"consumergroup": "live-848", "type": "consumer"}, float64(*k.Epoch)},
		{"cohort_connections_refused_total", nil, 0},
	} {
		if got := sample(mfs, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := sample(mfs, "cohort_connections_open", nil); got < 4 {
		t.Errorf("cohort_connections_open = %v, want at least the 4 clients'", got)
	}
}
