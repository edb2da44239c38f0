package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func start(t *testing.T, dir string) *node.Node {
	t.Helper()
	n, err := node.Start(node.Config{KafkaListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func stop(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func admin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// A crash between a topic's deletion and the deletion of its groups'
// offsets leaves offsets behind; the next start removes them, so that a
// topic re-created under the same name starts with none, as Kafka.
func TestStartDropsOffsetsOfDeletedTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	n := start(t, dir)
	adm := admin(t, n.KafkaAddr())
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "gone", "kept"); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.AddOffset("gone", 0, 5, -1)
	offsets.AddOffset("kept", 0, 7, -1)
	resp, err := adm.CommitOffsets(ctx, "g", offsets)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	stop(t, n)

	// The crash window, reproduced: the topic is deleted (and created
	// again) behind the coordinator's back.
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log, err := topics.Open(topics.Config{Dir: filepath.Join(dir, "topics"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Delete("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Create("gone", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	n = start(t, dir)
	defer stop(t, n)
	got, err := admin(t, n.KafkaAddr()).FetchOffsets(ctx, "g")
	if err != nil || got.Error() != nil {
		t.Fatalf("fetch: %v %v", err, got.Error())
	}
	if o, ok := got.Lookup("gone", 0); ok && o.At >= 0 {
		t.Errorf("the re-created topic has the old topic's offset %d", o.At)
	}
	if o, ok := got.Lookup("kept", 0); !ok || o.At != 7 {
		t.Errorf("the other topic's offset is %+v (found %v), want 7", o, ok)
	}
}

// The node runs the share coordinator, with as many share-state shards
// as group shards in a new data directory; the count is the data
// directory's from then on, whatever a later start configures.
func TestShareCoordinatorShardsKept(t *testing.T) {
	dir := t.TempDir()
	cfg := node.Config{KafkaListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0", DataDir: dir}
	cfg.Groups.Shards = 3
	n, err := node.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sc := n.ShareCoordinator(); sc == nil || sc.Shards() != 3 || sc.Ready() != nil {
		t.Fatalf("share coordinator %v", sc)
	}
	stop(t, n)
	cfg.ShareStateShards = 8
	if n, err = node.Start(cfg); err != nil {
		t.Fatal(err)
	}
	defer stop(t, n)
	if got := n.ShareCoordinator().Shards(); got != 3 {
		t.Fatalf("%d share-state shards after a start configured with 8, want the data directory's 3", got)
	}
	if got := len(n.ShareCoordinator().Held()); got != 3 {
		t.Fatalf("%d share-state shards served", got)
	}
}
