package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfigs are a topic's explicit configs as kadm describes them.
func topicConfigs(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == 1 { // DYNAMIC_TOPIC_CONFIG
			out[c.Key] = c.MaybeValue()
		}
	}
	return out
}

func sameConfigs(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: configs %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: configs %v, want %v", what, got, want)
		}
	}
}

// TestAlterConfigsKadm: franz-go's kadm changes a topic's configs with
// IncrementalAlterConfigs (SET and APPEND) and replaces them with
// AlterConfigs, against the real binary; the change survives a kill -9
// and a restart.
func TestAlterConfigsKadm(t *testing.T) {
	dir := t.TempDir()
	p := testkit.StartBinary(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000")}, "orders"); err != nil {
		t.Fatal(err)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
	}, "orders")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("incremental alter: %v %v", err, rs)
	}
	sameConfigs(t, "after the incremental alter", topicConfigs(t, adm, "orders"), map[string]string{"retention.ms": "7200000", "cleanup.policy": "delete,compact"})
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: kadm.StringPtr("60000")}}, "orders")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter (whole state): %v %v", err, rs)
	}
	sameConfigs(t, "after AlterConfigs", topicConfigs(t, adm, "orders"), map[string]string{"segment.ms": "60000"})
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such", Value: kadm.StringPtr("1")}}, "orders")
	if err != nil || rs[0].Err == nil {
		t.Fatalf("an unknown config was accepted: %v %v", err, rs)
	}
	cl.Close()

	p.Kill()
	p = testkit.StartBinary(t, dir)
	cl, err = kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sameConfigs(t, "after kill -9 and a restart", topicConfigs(t, kadm.NewClient(cl), "orders"), map[string]string{"segment.ms": "60000"})
}

// TestAlterConfigsSarama: Sarama's ClusterAdmin (AlterConfig is
// AlterConfigs, IncrementalAlterConfig IncrementalAlterConfigs) and its
// DescribeConfigs read back what it set.
func TestAlterConfigsSarama(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	adm, err := sarama.NewClusterAdmin([]string{n.KafkaAddr()}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic("sarama-cfg", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	v := "3600000"
	if err := adm.AlterConfig(sarama.TopicResource, "sarama-cfg", map[string]*string{"retention.ms": &v}, false); err != nil {
		t.Fatalf("alter config: %v", err)
	}
	c := "compact"
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, "sarama-cfg", map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &c},
	}, false); err != nil {
		t.Fatalf("incremental alter config: %v", err)
	}
	results, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: "sarama-cfg"}}, sarama.DescribeConfigsOptions{})
	if err != nil || len(results) != 1 || results[0].ErrorCode != sarama.ErrNoError {
		t.Fatalf("describe configs: %v %+v", err, results)
	}
	got := map[string]string{}
	for _, e := range results[0].Configs {
		if !e.Default {
			got[e.Name] = e.Value
		}
	}
	sameConfigs(t, "sarama", got, map[string]string{"retention.ms": "3600000", "cleanup.policy": "compact"})
	bad := "soon"
	if err := adm.AlterConfig(sarama.TopicResource, "sarama-cfg", map[string]*string{"retention.ms": &bad}, false); err == nil {
		t.Fatal("retention.ms=soon accepted")
	}
}

// TestAlterConfigsConfluent: librdkafka's IncrementalAlterConfigs through
// confluent-kafka-go's admin client.
func TestAlterConfigsConfluent(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), confluentTimeout)
	defer cancel()
	logs := newRdLog()
	defer logs.close()
	adm, err := kafka.NewAdminClient(rdConfig(n.KafkaAddr(), "cohort-e2e-configs", logs, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: "rd-cfg", NumPartitions: 1, ReplicationFactor: 1}})
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create: %v %v", err, res)
	}
	ares, err := adm.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: "rd-cfg", Config: []kafka.ConfigEntry{
		{Name: "retention.ms", Value: "123456", IncrementalOperation: kafka.AlterConfigOpTypeSet},
		{Name: "cleanup.policy", Value: "compact", IncrementalOperation: kafka.AlterConfigOpTypeAppend},
	}}})
	if err != nil || ares[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("incremental alter: %v %v", err, ares)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sameConfigs(t, "librdkafka", topicConfigs(t, kadm.NewClient(cl), "rd-cfg"), map[string]string{"retention.ms": "123456", "cleanup.policy": "delete,compact"})
	logs.reportProblems(t)
}

// TestLogAppendTimeFranz: a topic with message.timestamp.type set to
// LogAppendTime (by IncrementalAlterConfigs) hands franz-go consumers the
// broker's append time, marked as such, whatever the producer stamped.
func TestLogAppendTimeFranz(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumeTopics("stamped"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "stamped"); err != nil {
		t.Fatal(err)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: kadm.StringPtr("LogAppendTime")}}, "stamped")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %v", err, rs)
	}
	before := time.Now().Add(-time.Second)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "stamped", Value: []byte("v"), Timestamp: old}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if r := recs[0]; r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before) || r.Timestamp.After(time.Now().Add(time.Second)) {
		t.Fatalf("timestamp %v (type %d), want the append time, after %v", r.Timestamp, r.Attrs.TimestampType(), before)
	}
}

// TestDynamicConfigsKadm: broker and group configs changed while the real
// binary runs. kadm sets the cluster-wide default and broker 0's own
// (IncrementalAlterConfigs) and reads them back with their sources;
// librdkafka (confluent-kafka-go's admin) sets another; franz-go sends a
// group's configs (kadm has no group helper) and the root logger's level,
// which turns the debug lines on at once. After a kill -9 and a restart
// the broker and group configs are all there and in force (a heartbeat is
// told the group's interval), and the logger is back at --log-level, as
// Kafka's.
func TestDynamicConfigsKadm(t *testing.T) {
	dir := t.TempDir()
	p := testkit.StartBinary(t, dir, "--group-consumer-heartbeat-interval", "2s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func() (*kgo.Client, *kadm.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl, kadm.NewClient(cl)
	}
	cl, adm := connect()
	set := func(name, value string) []kadm.AlterConfig {
		return []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}}
	}
	if rs, err := adm.AlterBrokerConfigs(ctx, set("group.consumer.heartbeat.interval.ms", "6000")); err != nil || rs[0].Err != nil {
		t.Fatalf("cluster default: %v %+v", err, rs)
	}
	if rs, err := adm.AlterBrokerConfigs(ctx, set("max.connections.per.ip", "500"), 0); err != nil || rs[0].Err != nil {
		t.Fatalf("broker 0: %v %+v", err, rs)
	}
	if rs, err := adm.AlterBrokerConfigs(ctx, set("log.retention.ms", "1"), 0); err == nil && rs[0].Err == nil {
		t.Fatal("a static broker config was changed")
	}

	logs := newRdLog()
	defer logs.close()
	rd, err := kafka.NewAdminClient(rdConfig(p.Addr, "cohort-e2e-dyn", logs, nil))
	if err != nil {
		t.Fatal(err)
	}
	ares, err := rd.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: "0", Config: []kafka.ConfigEntry{
		{Name: "max.connections", Value: "900", IncrementalOperation: kafka.AlterConfigOpTypeSet},
	}}})
	if err != nil || ares[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("librdkafka: %v %v", err, ares)
	}
	rd.Close()
	logs.reportProblems(t)

	incremental := func(typ kmsg.ConfigResourceType, name string, configs map[string]string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for k, v := range configs {
			e := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			e.Name, e.Value = k, kmsg.StringPtr(v)
			rr.Configs = append(rr.Configs, e)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("alter %v %s: %v %+v", typ, name, err, resp)
		}
	}
	incremental(kmsg.ConfigResourceTypeGroupConfig, "dyn", map[string]string{"consumer.heartbeat.interval.ms": "7000", "consumer.session.timeout.ms": "50000"})

	// The root logger: a connection reset is a debug line.
	reset := func() {
		nc, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte{0, 0}) // half a size: the server is reading
		nc.(*net.TCPConn).SetLinger(0)
		nc.Close()
	}
	incremental(kmsg.ConfigResourceTypeBrokerLogger, "0", map[string]string{"root": "DEBUG"})
	testkit.Eventually(t, 30*time.Second, "a debug line after root=DEBUG", func() bool {
		reset()
		return strings.Contains(p.Log(), "level=DEBUG")
	})

	check := func(when string) {
		t.Helper()
		want := map[string][2]string{
			"group.consumer.heartbeat.interval.ms": {"6000", "DYNAMIC_DEFAULT_BROKER_CONFIG"},
			"max.connections.per.ip":               {"500", "DYNAMIC_BROKER_CONFIG"},
			"max.connections":                      {"900", "DYNAMIC_BROKER_CONFIG"},
			"group.consumer.session.timeout.ms":    {"45000", "STATIC_BROKER_CONFIG"},
		}
		rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("%s: describe broker 0: %v %+v", when, err, rcs)
		}
		for _, c := range rcs[0].Configs {
			if w, ok := want[c.Key]; ok {
				if c.MaybeValue() != w[0] || c.Source.String() != w[1] {
					t.Errorf("%s: %s=%s from %v, want %s from %s", when, c.Key, c.MaybeValue(), c.Source, w[0], w[1])
				}
				delete(want, c.Key)
			}
		}
		if len(want) > 0 {
			t.Errorf("%s: not described: %v", when, want)
		}
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "dyn"
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("%s: describe group: %v %+v", when, err, resp)
		}
		got := map[string]string{}
		for _, c := range resp.Resources[0].Configs {
			if c.Source == kmsg.ConfigSourceGroupConfig {
				got[c.Name] = *c.Value
			}
		}
		sameConfigs(t, when+": group dyn", got, map[string]string{"consumer.heartbeat.interval.ms": "7000", "consumer.session.timeout.ms": "50000"})
		// In force: a member of dyn is told its group's interval, one of
		// another group the cluster default.
		for group, interval := range map[string]int32{"dyn": 7000, "other": 6000} {
			hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, "m-"+when, 30000
			hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			r, err := hb.RequestWith(ctx, cl)
			if err != nil || r.ErrorCode != 0 || r.HeartbeatIntervalMillis != interval {
				t.Errorf("%s: heartbeat of %s: %v %v interval %d, want %d", when, group, err, kerr.ErrorForCode(r.ErrorCode), r.HeartbeatIntervalMillis, interval)
			}
		}
	}
	check("while running")

	p.Kill()
	p = testkit.StartBinary(t, dir, "--group-consumer-heartbeat-interval", "2s")
	cl, adm = connect()
	check("after kill -9 and a restart")
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "0"
	req.Resources = append(req.Resources, rr)
	if resp, err := req.RequestWith(ctx, cl); err != nil || len(resp.Resources[0].Configs) != 1 || *resp.Resources[0].Configs[0].Value != "INFO" {
		t.Fatalf("the root logger after a restart: %v %+v, want INFO", err, resp)
	}
}
