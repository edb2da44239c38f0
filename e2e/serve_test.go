package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestServeLifecycle runs the real binary: it logs where it listens and
// where its data is, refuses a second server on the same data dir, exits
// 0 on SIGTERM after flushing, and finds its data again on restart.
func TestServeLifecycle(t *testing.T) {
	dir := t.TempDir()
	p := testkit.StartBinary(t, dir, "--default-partitions", "3")
	if !strings.Contains(p.Log(), "data_dir="+dir) {
		t.Errorf("start-up line does not say where the data is:\n%s", p.Log())
	}

	// A second server on the same directory must fail at start, clearly.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testkit.Binary(t), "serve", "--kafka-listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--data-dir", dir).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("second server on the same data dir: err=%v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "data directory is in use") {
		t.Errorf("second server's message does not say the data dir is in use:\n%s", out)
	}

	// Produce with acks=1 (not fsynced per request): a graceful stop must
	// still flush it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("life"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	want := makeRecs("life", 300, time.Now())
	for i := range want {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Key: want[i].Key, Value: want[i].Value, Timestamp: want[i].Timestamp}).First()
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		want[i].Partition, want[i].Offset, want[i].Headers = r.Partition, r.Offset, nil
	}
	cl.Close()
	if code := p.Stop(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit code %d, want 0\n%s", code, p.Log())
	}
	if !strings.Contains(p.Log(), "msg=stopped") {
		t.Errorf("no shutdown log line:\n%s", p.Log())
	}

	// Restart on the same directory: everything is there.
	p2 := testkit.StartBinary(t, dir)
	got := franzConsume(t, p2.Addr, "life", len(want))
	checkSame(t, want, got, false)
	parts := map[int32]bool{}
	for _, r := range got {
		parts[r.Partition] = true
	}
	if len(parts) != 3 {
		t.Errorf("records in %d partitions; --default-partitions 3 should have given 3", len(parts))
	}
}
