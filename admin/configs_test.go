package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/topics"
)

// TestConfigsInAPI: the configs a Kafka client sets through
// IncrementalAlterConfigs on a real node show in the API, each with where
// it is set: a topic's in GET /api/v1/topics (with whether Cohort
// enforces it), a group's in GET /api/v1/groups/{group}, resolved from
// the group, this broker, the cluster, the node's flag or the default,
// and only for the group of the organisation asked about.
func TestConfigsInAPI(t *testing.T) {
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0",
		Groups: coordinator.Config{ConsumerHeartbeatInterval: 3 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"events", "plain"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	// The same group name in two organisations.
	for _, tenant := range []string{"", "acme"} {
		join(t, n.Coordinator(), tenant, "orders")
	}

	// Topics: events sets an enforced config and one only stored; plain
	// sets none.
	set := func(name, value string) kadm.AlterConfig { return kadm.AlterConfig{Name: name, Value: &value} }
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("max.message.bytes", "2000000"), set("retention.ms", "3600000")}, "events")
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatalf("alter events' configs: %v", err)
	}
	var list struct{ Topics []admin.TopicInfo }
	getJSON(t, n.HTTPAddr(), "/api/v1/topics", &list)
	configs := map[string]map[string]admin.TopicConfig{}
	for _, ti := range list.Topics {
		configs[ti.Name] = map[string]admin.TopicConfig{}
		for _, c := range ti.Configs {
			configs[ti.Name][c.Name] = c
		}
	}
	// Whether Cohort enforces a config is the catalog's word.
	enforced := func(name string) bool { c, _ := topics.LookupTopicConfig(name); return c.Enforced }
	for _, want := range []struct{ topic, name, value, source string }{
		{"events", "max.message.bytes", "2000000", "topic"},
		{"events", "retention.ms", "3600000", "topic"},
		{"events", "segment.bytes", "268435456", "default"},
		{"events", "unclean.leader.election.enable", "false", "default"},
		{"plain", "max.message.bytes", "1048588", "default"},
		{"plain", "retention.ms", "604800000", "default"},
		{"__consumer_offsets", "cleanup.policy", "compact", "topic"},
	} {
		w := admin.TopicConfig{Name: want.name, Value: want.value, Source: want.source, Enforced: enforced(want.name)}
		if got := configs[want.topic][want.name]; got != w {
			t.Errorf("topic %s's %s: %+v, want %+v", want.topic, want.name, got, w)
		}
	}
	for name, cs := range configs {
		if len(cs) != len(topics.TopicConfigs) {
			t.Errorf("topic %s: %d configs, want every one of the %d", name, len(cs), len(topics.TopicConfigs))
		}
	}

	// A group: its configs as they resolve, after each change.
	wantGroup := func(what, query string, want map[string]string) {
		t.Helper()
		var d struct{ Configs []admin.GroupConfig }
		getJSON(t, n.HTTPAddr(), "/api/v1/groups/orders"+query, &d)
		got := map[string]string{}
		for _, c := range d.Configs {
			got[c.Name] = c.Value + " " + c.Source
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: configs %v, want %v", what, got, want)
		}
	}
	defaults := map[string]string{
		"errors.deadletterqueue.copy.record.enable": "false default",
		"errors.deadletterqueue.topic.name":         " default",
		"share.auto.offset.reset":                   "latest default",
		"share.delivery.count.limit":                "5 default",
		"share.heartbeat.interval.ms":               "5000 default",
		"share.isolation.level":                     "read_uncommitted default",
		"share.partition.max.record.locks":          "2000 default",
		"share.record.lock.duration.ms":             "30000 default",
		"share.session.timeout.ms":                  "45000 default",
	}
	with := func(m map[string]string) map[string]string {
		for k, v := range defaults {
			m[k] = v
		}
		return m
	}
	wantGroup("as started", "", with(map[string]string{
		"consumer.heartbeat.interval.ms": "3000 node", "consumer.session.timeout.ms": "45000 node"}))

	testkit.SetConfig(t, n.KafkaAddr(), kmsg.ConfigResourceTypeGroupConfig, "orders", "consumer.session.timeout.ms", "50000")
	testkit.SetConfig(t, n.KafkaAddr(), kmsg.ConfigResourceTypeBroker, "", "group.consumer.heartbeat.interval.ms", "6000")
	wantGroup("the group's own and the cluster's", "", with(map[string]string{
		"consumer.heartbeat.interval.ms": "6000 cluster", "consumer.session.timeout.ms": "50000 group"}))
	testkit.SetConfig(t, n.KafkaAddr(), kmsg.ConfigResourceTypeBroker, "0", "group.consumer.heartbeat.interval.ms", "7000")
	wantGroup("this broker's", "", with(map[string]string{
		"consumer.heartbeat.interval.ms": "7000 broker", "consumer.session.timeout.ms": "50000 group"}))
	// acme's orders is another group: the default organisation's
	// session timeout is not its.
	wantGroup("acme's group of the same name", "?org=acme", with(map[string]string{
		"consumer.heartbeat.interval.ms": "7000 broker", "consumer.session.timeout.ms": "45000 node"}))
}

// join makes group exist in tenant: a member joins it (KIP-848) through
// the coordinator, as a connection of that tenant's principal would.
func join(t *testing.T, co *coordinator.Coordinator, tenant, group string) {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "m-"+tenant, 30000
	req.SubscribedTopicNames, req.Topics = []string{"events"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, ok := co.Handle(ctx, coordinator.Request{Msg: req, Tenant: tenant, ClientID: "test"})().(*kmsg.ConsumerGroupHeartbeatResponse)
	if !ok {
		t.Fatalf("join in %q: unexpected answer %+v", tenant, resp)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("join in %q: %v", tenant, err)
	}
}

func getJSON(t *testing.T, addr, path string, out any) {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get((&url.URL{Scheme: "http", Host: addr}).String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
