package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
