package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranzProduceConsume: franz-go's idempotent producer writes 12,500
// records over 4 partitions, a fifth of them with each compression codec;
// a direct (groupless) consumer reads back exactly those records.
func TestFranzProduceConsume(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const topic = "franz"
	adm, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	want := franzProduce(t, n.KafkaAddr(), topic, makeRecs("franz", 12500, time.Now().Add(-time.Hour)))
	got := franzConsume(t, n.KafkaAddr(), topic, len(want))
	checkSame(t, want, got, false)
	parts := map[int32]bool{}
	for _, r := range got {
		parts[r.Partition] = true
	}
	if len(parts) != 4 {
		t.Errorf("records in %d partitions, want 4", len(parts))
	}
}
