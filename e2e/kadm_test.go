package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKadmAdmin drives franz-go's admin client through the broker admin
// APIs Cohort serves: create (and validate-only), list, metadata, configs
// of topics and the broker, start/end/by-time offsets, partition growth
// and deletion, with Kafka's errors where they apply.
func TestKadmAdmin(t *testing.T) {
	n := testkit.StartNode(t, node.Config{DefaultPartitions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.MetadataMinAge(10*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Validate-only creates nothing; a real create does, with its configs.
	if r, err := adm.ValidateCreateTopics(ctx, 3, 1, nil, "adm-a"); err != nil || r["adm-a"].Err != nil {
		t.Fatalf("validate create: %v %v", err, r["adm-a"].Err)
	}
	if td, err := adm.ListTopics(ctx); err != nil || td.Has("adm-a") {
		t.Fatalf("validate-only created the topic (err %v)", err)
	}
	retention := "3600000"
	cr, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, "adm-a")
	if err != nil || cr["adm-a"].Err != nil {
		t.Fatalf("create: %v %v", err, cr["adm-a"].Err)
	}
	cr, _ = adm.CreateTopics(ctx, -1, -1, nil, "adm-b", "adm-a")
	if cr["adm-b"].Err != nil || cr["adm-b"].NumPartitions != 2 {
		t.Errorf("create with defaults: %+v, want 2 partitions (--default-partitions)", cr["adm-b"])
	}
	if !errors.Is(cr["adm-a"].Err, kerr.TopicAlreadyExists) {
		t.Errorf("second create: %v, want TOPIC_ALREADY_EXISTS", cr["adm-a"].Err)
	}
	if r, _ := adm.CreateTopics(ctx, topics.MaxPartitions+1, 1, nil, "adm-huge"); !errors.Is(r["adm-huge"].Err, kerr.InvalidPartitions) {
		t.Errorf("%d partitions: %v, want INVALID_PARTITIONS", topics.MaxPartitions+1, r["adm-huge"].Err)
	}
	if r, _ := adm.CreateTopics(ctx, 1, 3, nil, "adm-rf"); !errors.Is(r["adm-rf"].Err, kerr.InvalidReplicationFactor) {
		t.Errorf("replication factor 3: %v, want INVALID_REPLICATION_FACTOR", r["adm-rf"].Err)
	}

	// Metadata: one broker, which leads everything; stable topic ids.
	md, err := adm.Metadata(ctx, "adm-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 0 || md.Controller != 0 {
		t.Errorf("brokers %+v controller %d", md.Brokers, md.Controller)
	}
	ta := md.Topics["adm-a"]
	if len(ta.Partitions) != 3 || ta.ID == (kadm.TopicID{}) {
		t.Errorf("topic adm-a: %d partitions, id %v", len(ta.Partitions), ta.ID)
	}

	// Every group and transactional id is coordinated here.
	for name, fc := range adm.FindGroupCoordinators(ctx, "orders-app", "billing") {
		if fc.Err != nil || fc.NodeID != 0 || fmt.Sprintf("%s:%d", fc.Host, fc.Port) != n.KafkaAddr() {
			t.Errorf("coordinator of group %s: %+v, want node 0 at %s", name, fc, n.KafkaAddr())
		}
	}
	for name, fc := range adm.FindTxnCoordinators(ctx, "txn-1") {
		if fc.Err != nil || fc.NodeID != 0 || fmt.Sprintf("%s:%d", fc.Host, fc.Port) != n.KafkaAddr() {
			t.Errorf("coordinator of transactional id %s: %+v, want node 0 at %s", name, fc, n.KafkaAddr())
		}
	}

	// Configs: the explicit one is dynamic, the rest are defaults.
	rc, err := adm.DescribeTopicConfigs(ctx, "adm-a")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On("adm-a", nil)
	if err != nil || cfg.Err != nil {
		t.Fatalf("describe topic configs: %v %v", err, cfg.Err)
	}
	got := map[string]kadm.Config{}
	for _, c := range cfg.Configs {
		got[c.Key] = c
	}
	if c := got["retention.ms"]; c.MaybeValue() != "3600000" || c.Source != 1 {
		t.Errorf("retention.ms = %q source %v, want 3600000 from DYNAMIC_TOPIC_CONFIG", c.MaybeValue(), c.Source)
	}
	if c := got["max.message.bytes"]; c.MaybeValue() != "1048588" {
		t.Errorf("max.message.bytes = %q, want Kafka's default 1048588", c.MaybeValue())
	}
	bc, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil || len(bc) != 1 || bc[0].Err != nil || len(bc[0].Configs) == 0 {
		t.Fatalf("describe broker configs: %v %+v", err, bc)
	}
	if rc, _ := adm.DescribeTopicConfigs(ctx, "adm-missing"); len(rc) != 1 || !errors.Is(rc[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("configs of a missing topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", rc)
	}

	// Offsets: start, end and by time after producing to partition 1.
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Topic: "adm-a", Partition: 1, Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "adm-a")
	if err != nil {
		t.Fatal(err)
	}
	starts, err := adm.ListStartOffsets(ctx, "adm-a")
	if err != nil {
		t.Fatal(err)
	}
	at, err := adm.ListOffsetsAfterMilli(ctx, base.Add(4500*time.Millisecond).UnixMilli(), "adm-a")
	if err != nil {
		t.Fatal(err)
	}
	const p = 1
	for part := int32(0); part < 3; part++ {
		want := int64(0)
		if part == p {
			want = 10
		}
		if e, _ := ends.Lookup("adm-a", part); e.Offset != want {
			t.Fatalf("end offset of partition %d: %d, want %d", part, e.Offset, want)
		}
	}
	if s, _ := starts.Lookup("adm-a", p); s.Offset != 0 {
		t.Errorf("start offset %d, want 0", s.Offset)
	}
	if a, _ := at.Lookup("adm-a", p); a.Offset != 5 {
		t.Errorf("offset after %v: %d, want 5 (the first record at or after it)", base.Add(4500*time.Millisecond), a.Offset)
	}

	// Grow, refuse to shrink, delete.
	if r, err := adm.UpdatePartitions(ctx, 5, "adm-a"); err != nil || r["adm-a"].Err != nil {
		t.Fatalf("grow to 5: %v %v", err, r["adm-a"].Err)
	}
	if r, _ := adm.UpdatePartitions(ctx, 4, "adm-a"); !errors.Is(r["adm-a"].Err, kerr.InvalidPartitions) {
		t.Errorf("shrink: %v, want INVALID_PARTITIONS", r["adm-a"].Err)
	}
	if r, _ := adm.UpdatePartitions(ctx, topics.MaxPartitions+1, "adm-a"); !errors.Is(r["adm-a"].Err, kerr.InvalidPartitions) {
		t.Errorf("grow past the cap: %v, want INVALID_PARTITIONS", r["adm-a"].Err)
	}
	if md, _ := adm.Metadata(ctx, "adm-a"); len(md.Topics["adm-a"].Partitions) != 5 {
		t.Errorf("after grow: %d partitions, want 5", len(md.Topics["adm-a"].Partitions))
	}
	if r, err := adm.DeleteTopics(ctx, "adm-a", "adm-b"); err != nil || r["adm-a"].Err != nil || r["adm-b"].Err != nil {
		t.Fatalf("delete: %v %+v", err, r)
	}
	if r, _ := adm.DeleteTopics(ctx, "adm-a"); !errors.Is(r["adm-a"].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("second delete: %v, want UNKNOWN_TOPIC_OR_PARTITION", r["adm-a"].Err)
	}
	if td, err := adm.ListTopics(ctx); err != nil || td.Has("adm-a") || td.Has("adm-b") {
		t.Errorf("deleted topics still listed (err %v)", err)
	}
}
