package topics

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/memstore"
)

// clusterNode is one node of a test cluster: its own Dir, the shared store.
type clusterNode struct {
	log *Log
	dir string
}

// newCluster opens one Log per node id over one shared store, each with its
// own Dir, all seeing every node as live; each runs a global unit of its own on
// the store, shared, as cluster mode does.
func newCluster(t *testing.T, ids ...int32) (store.Store, []clusterNode) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	var nodes []clusterNode
	for _, id := range ids {
		dir := filepath.Join(t.TempDir(), "topics")
		l, err := Open(Config{Dir: dir, Store: st, NodeID: id, Nodes: func() []int32 { return ids }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		nodes = append(nodes, clusterNode{log: l, dir: dir})
	}
	return st, nodes
}

func mustRefresh(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Refresh(); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
}

func partitionDirExists(t *testing.T, n clusterNode, id [16]byte, i int) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(n.dir, hex.EncodeToString(id[:]), strconv.Itoa(i)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// checkLocal checks that n opened exactly the partitions it leads, and has
// data directories for those alone.
func checkLocal(t *testing.T, n clusterNode, tp *Topic) {
	t.Helper()
	if len(tp.Leaders) != len(tp.Partitions) {
		t.Fatalf("%d leaders for %d partitions", len(tp.Leaders), len(tp.Partitions))
	}
	for i, p := range tp.Partitions {
		local := tp.Leaders[i] == n.log.NodeID()
		if (p != nil) != local {
			t.Errorf("node %d, partition %d led by %d: opened %v", n.log.NodeID(), i, tp.Leaders[i], p != nil)
		}
		if got := partitionDirExists(t, n, tp.ID, i); got != local {
			t.Errorf("node %d, partition %d led by %d: data dir exists %v", n.log.NodeID(), i, tp.Leaders[i], got)
		}
	}
}

// TestClusterTopicLifecycle: a topic created on one node is seen by the
// other after Refresh, with each node holding the partitions it leads;
// growing on the other node places the new partitions on both; deleting
// removes both nodes' data.
func TestClusterTopicLifecycle(t *testing.T) {
	_, nodes := newCluster(t, 1, 2)
	a, b := nodes[0], nodes[1]

	created, err := a.log.Create("orders", 4, map[string]string{"segment.bytes": "2048"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 2, 1, 2}; !slices.Equal(created.Leaders, want) {
		t.Fatalf("leaders %v, want %v", created.Leaders, want)
	}
	checkLocal(t, a, created)
	if b.log.Topic("orders") != nil {
		t.Fatal("node 2 sees the topic before Refresh")
	}
	v := b.log.Version()
	mustRefresh(t, b.log)
	seen := b.log.Topic("orders")
	if seen == nil || seen.ID != created.ID || !slices.Equal(seen.Leaders, created.Leaders) || seen.Configs["segment.bytes"] != "2048" {
		t.Fatalf("node 2 sees %+v, want id %x leaders %v", seen, created.ID, created.Leaders)
	}
	if b.log.TopicByID(created.ID) != seen {
		t.Error("TopicByID differs from Topic")
	}
	checkLocal(t, b, seen)
	if b.log.Version() == v {
		t.Error("Version unchanged by a Refresh that added a topic")
	}
	v = b.log.Version()
	mustRefresh(t, b.log)
	if b.log.Version() != v || b.log.Topic("orders") != seen {
		t.Error("a Refresh with nothing changed changed the log")
	}

	// Data written on node 2 stays across a grow made on node 2 and
	// refreshed on node 1.
	mustAppend(t, seen.Partitions[1], plainBatch(t, 3, "x"))
	if err := b.log.Grow("orders", 6, false); err != nil {
		t.Fatal(err)
	}
	grownB := b.log.Topic("orders")
	if want := []int32{1, 2, 1, 2, 1, 2}; !slices.Equal(grownB.Leaders, want) {
		t.Fatalf("leaders after grow %v, want %v", grownB.Leaders, want)
	}
	if grownB.Partitions[1] != seen.Partitions[1] {
		t.Error("grow reopened an existing partition")
	}
	checkLocal(t, b, grownB)
	p0 := a.log.Topic("orders").Partitions[0]
	mustRefresh(t, a.log)
	grownA := a.log.Topic("orders")
	if len(grownA.Partitions) != 6 || grownA.Partitions[0] != p0 {
		t.Fatalf("node 1 after Refresh: %d partitions, partition 0 reused %v", len(grownA.Partitions), grownA.Partitions[0] == p0)
	}
	checkLocal(t, a, grownA)
	if _, hw := grownB.Partitions[1].Offsets(); hw != 3 {
		t.Errorf("high watermark %d after grow, want 3", hw)
	}

	// Delete on node 2; node 1 drops its data on Refresh.
	if err := b.log.Delete("orders"); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.log == a.log {
			mustRefresh(t, n.log)
		}
		if n.log.Topic("orders") != nil || n.log.TopicByID(created.ID) != nil {
			t.Errorf("node %d still has the topic", n.log.NodeID())
		}
		if _, err := os.Stat(filepath.Join(n.dir, hex.EncodeToString(created.ID[:]))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("node %d kept the deleted topic's data: %v", n.log.NodeID(), err)
		}
	}
	if _, err := p0.Append(plainBatch(t, 1, "late"), 0); !errors.Is(err, ErrDeleted) {
		t.Errorf("append to a partition deleted elsewhere: %v, want ErrDeleted", err)
	}
}

// TestClusterRecreatedElsewhere: a topic deleted and created again on
// another node between two Refreshes is replaced, data and all.
func TestClusterRecreatedElsewhere(t *testing.T) {
	_, nodes := newCluster(t, 1, 2)
	a, b := nodes[0], nodes[1]
	first, err := a.log.Create("t", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	mustRefresh(t, b.log)
	if err := a.log.Delete("t"); err != nil {
		t.Fatal(err)
	}
	second, err := a.log.Create("t", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	mustRefresh(t, b.log)
	got := b.log.Topic("t")
	if got == nil || got.ID != second.ID || b.log.TopicByID(first.ID) != nil {
		t.Fatalf("node 2 has %+v, want id %x", got, second.ID)
	}
	if _, err := os.Stat(filepath.Join(b.dir, hex.EncodeToString(first.ID[:]))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old topic's data kept: %v", err)
	}
	checkLocal(t, b, got)
}

// TestClusterConcurrentCreate: nodes creating the same topics at once end
// with one topic id each; every other attempt is ErrTopicExists.
func TestClusterConcurrentCreate(t *testing.T) {
	_, nodes := newCluster(t, 1, 2, 3)
	const topicsN = 20
	var wg sync.WaitGroup
	wins := make([][]*Topic, len(nodes))
	errs := make([][]error, len(nodes))
	for i, n := range nodes {
		wins[i] = make([]*Topic, topicsN)
		errs[i] = make([]error, topicsN)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range topicsN {
				wins[i][k], errs[i][k] = n.log.Create("t"+strconv.Itoa(k), 3, nil, false)
			}
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		mustRefresh(t, n.log)
	}
	for k := range topicsN {
		var winner *Topic
		for i := range nodes {
			switch err := errs[i][k]; {
			case err == nil && winner != nil:
				t.Errorf("topic %d created twice: ids %x and %x", k, winner.ID, wins[i][k].ID)
			case err == nil:
				winner = wins[i][k]
			case !errors.Is(err, ErrTopicExists):
				t.Errorf("topic %d on node %d: %v", k, i, err)
			}
		}
		if winner == nil {
			t.Fatalf("topic %d created by no node", k)
		}
		for _, n := range nodes {
			got := n.log.Topic(winner.Name)
			if got == nil || got.ID != winner.ID {
				t.Errorf("node %d has %s as %+v, want id %x", n.log.NodeID(), winner.Name, got, winner.ID)
				continue
			}
			checkLocal(t, n, got)
		}
	}
}

// TestClusterPlacement: leaders go to the node leading the fewest
// partitions, so single-partition topics alternate and a lopsided start
// is evened out.
func TestClusterPlacement(t *testing.T) {
	_, nodes := newCluster(t, 1, 2)
	a := nodes[0].log
	var got []int32
	for i := range 4 {
		tp, err := a.Create("single"+strconv.Itoa(i), 1, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tp.Leaders...)
	}
	if want := []int32{1, 2, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("single-partition leaders %v, want %v", got, want)
	}
	if _, err := a.CreateAssigned("lopsided", []int32{1, 1, 1}, nil, false); err != nil {
		t.Fatal(err)
	}
	tp, err := a.Create("evens", 4, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// Node 1 leads 5, node 2 leads 2: three to node 2, then alternate.
	if want := []int32{2, 2, 2, 1}; !slices.Equal(tp.Leaders, want) {
		t.Errorf("leaders %v, want %v", tp.Leaders, want)
	}
	if err := a.GrowAssigned("evens", 6, []int32{2, 2}, false); err != nil {
		t.Fatal(err)
	}
	if got := a.Topic("evens").Leaders; !slices.Equal(got, []int32{2, 2, 2, 1, 2, 2}) {
		t.Errorf("leaders after an assigned grow %v", got)
	}
	if err := a.GrowAssigned("evens", 8, []int32{2}, false); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("grow by 2 with one leader: %v, want ErrInvalidPartitions", err)
	}
}

// TestLegacyRecordFormat: a version-1 topic record of a version before
// the global unit (JSON under "topic/", written by a single node) means
// every partition is node 0's: after the upgrade another node id opens
// none of them, and node 0 opens both.
func TestLegacyRecordFormat(t *testing.T) {
	st := memstore.New(memstore.Options{})
	id := [16]byte{1, 2, 3}
	var b store.Batch
	b.Put([]byte("topic/t"), []byte(`{"v":1,"name":"t","id":"`+hex.EncodeToString(id[:])+`","partitions":2}`))
	if err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	other, err := Open(Config{Dir: filepath.Join(t.TempDir(), "other"), Store: st, NodeID: 1, Nodes: func() []int32 { return []int32{0, 1} }})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	seen := other.Topic("t")
	if seen == nil || seen.ID != id || !slices.Equal(seen.Leaders, []int32{0, 0}) || seen.Partitions[0] != nil || seen.Partitions[1] != nil {
		t.Fatalf("node 1 reads the v1 record as %+v", seen)
	}
	single, err := Open(Config{Dir: filepath.Join(t.TempDir(), "single"), Store: st, Nodes: func() []int32 { return []int32{0, 1} }})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if tp := single.Topic("t"); tp == nil || tp.Partitions[0] == nil || tp.Partitions[1] == nil {
		t.Fatalf("node 0 does not open its partitions: %+v", tp)
	}
}

// TestClusterHooks: ReserveProducerIDs and ClusterID replace the stored
// reservation and cluster id.
func TestClusterHooks(t *testing.T) {
	st := memstore.New(memstore.Options{})
	var asked []int64
	next := int64(5000)
	l, err := Open(Config{Dir: t.TempDir(), Store: st, ClusterID: "shared-id", ReserveProducerIDs: func(n int64) (int64, error) {
		asked = append(asked, n)
		first := next
		next += n
		return first, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.ClusterID() != "shared-id" {
		t.Errorf("cluster id %q", l.ClusterID())
	}
	if _, err := st.Get([]byte("meta/cluster-id")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a cluster id was stored: %v", err)
	}
	for i := range producerIDBlock + 1 {
		id, err := l.NextProducerID()
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(5000 + i); id != want {
			t.Fatalf("producer id %d, want %d", id, want)
		}
	}
	if !slices.Equal(asked, []int64{producerIDBlock, producerIDBlock}) {
		t.Errorf("reservations %v", asked)
	}
	if _, err := st.Get([]byte("meta/next-producer-id")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a reservation was stored: %v", err)
	}
}

// TestClusterRefreshRetriesFailedOpen: a partition a Refresh could not
// open is left out (the rest of the topic is served) and retried by the
// next Refresh, though the record did not change.
func TestClusterRefreshRetriesFailedOpen(t *testing.T) {
	_, nodes := newCluster(t, 1, 2)
	a, b := nodes[0], nodes[1]
	tp, err := a.log.Create("t", 4, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// A file where node 2's partition 1 directory belongs.
	topicDir := filepath.Join(b.dir, hex.EncodeToString(tp.ID[:]))
	if err := os.MkdirAll(topicDir, 0o755); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(topicDir, "1")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.log.Refresh(); err == nil {
			t.Fatal("Refresh opened a partition over a file")
		}
		got := b.log.Topic("t")
		if got == nil || got.Partitions[1] != nil || got.Partitions[3] == nil {
			t.Fatalf("after a failed open: %+v", got)
		}
	}
	p3 := b.log.Topic("t").Partitions[3]
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	mustRefresh(t, b.log)
	got := b.log.Topic("t")
	if got.Partitions[1] == nil || got.Partitions[3] != p3 {
		t.Fatalf("after the retry: partition 1 open %v, partition 3 reused %v", got.Partitions[1] != nil, got.Partitions[3] == p3)
	}
	checkLocal(t, b, got)
	v := b.log.Version()
	mustRefresh(t, b.log)
	if b.log.Version() != v {
		t.Error("Refresh after a successful retry changed the log")
	}
}

// TestClusterSync: Sync reads one topic from the shared store, found or
// gone, without a full Refresh.
func TestClusterSync(t *testing.T) {
	_, nodes := newCluster(t, 1, 2)
	a, b := nodes[0], nodes[1]
	tp, err := a.log.Create("t", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.log.Sync("t")
	if err != nil || got == nil || got.ID != tp.ID || b.log.Topic("t") != got {
		t.Fatalf("Sync: %+v %v", got, err)
	}
	checkLocal(t, b, got)
	if err := a.log.Delete("t"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.log.Sync("t"); err != nil || got != nil || b.log.TopicByID(tp.ID) != nil {
		t.Fatalf("Sync after delete: %+v %v", got, err)
	}
}
