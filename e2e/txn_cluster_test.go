package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cohort-dev/cohort/internal/testkit"
)

// txnOn returns n transactional ids, starting with prefix, whose
// transaction coordinator is node id (FindCoordinator key type 1).
func (c *testCluster) txnOn(adm *kadm.Client, prefix string, id int32, n int) []string {
	c.t.Helper()
	var out []string
	for i := 0; i < 2000 && len(out) < n; i++ {
		x := fmt.Sprintf("%s-%d", prefix, i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r := adm.FindTxnCoordinators(ctx, x)[x]
		cancel()
		if r.Err == nil && r.NodeID == id {
			out = append(out, x)
		}
	}
	if len(out) < n {
		c.t.Fatalf("%d transactional ids %s-* coordinated by node %d, want %d", len(out), prefix, id, n)
	}
	return out
}

// TestClusterTxnExactlyOnce is exactly-once consume-transform-produce
// across a cluster: three nodes, the input and output partitions led by
// nodes 1 and 2, the group coordinated by node 1, the workers'
// transactions by node 3, so that every transaction's markers and offsets
// travel between nodes (WriteTxnMarkers) and every transactional produce
// is verified with another node (AddPartitionsToTxn VerifyOnly). Node 3
// is killed (SIGKILL) mid-stream: its transaction units fail over to
// nodes 1 and 2, which finish or abort what it left; it then starts
// again and takes units back. The output read_committed holds every
// input exactly once.
func TestClusterTxnExactlyOnce(t *testing.T) {
	const (
		inputs     = 1500
		partitions = 4
		workers    = 3
		victim     = 3
	)
	tc := startCluster(t, 1, 3)
	adm := tc.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	tc.createTopicOn("eos-in", partitions, 1, 2)
	tc.createTopicOn("eos-out", partitions, 2, 1)
	group := tc.groupOn(adm, "eos", 1)
	ids := tc.txnOn(adm, "eos-w", victim, workers)
	seeds := tc.seeds(victim)

	prod := mustClient(t, kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("eos-in"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	producePhase := func(phase int) { produceInputs(ctx, t, prod, phase*inputs/3, (phase+1)*inputs/3) }
	producePhase(0)

	var committed atomic.Int64
	var keys requestKeys
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { txnWorker(ctx, t, seeds, id, group, stop, &committed, &keys) })
	}
	progress := func(what string) {
		t.Helper()
		start := committed.Load()
		if !testkit.WaitFor(time.Minute, func() bool { return committed.Load() >= start+5 }) {
			txnCrashDiag(ctx, t, adm, group)
			t.Fatalf("%s: %d transactions committed in a minute, want 5", what, committed.Load()-start)
		}
	}
	progress("before the kill")
	tc.node(victim).Kill()
	t.Logf("node %d killed after %d transactions", victim, committed.Load())
	producePhase(1)
	progress("after the kill")
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r := adm.FindTxnCoordinators(ctx, id)[id]
		cancel()
		if r.Err != nil || r.NodeID == victim {
			t.Fatalf("%s coordinated by node %d (%v) after the kill", id, r.NodeID, r.Err)
		}
	}
	tc.start(victim)
	tc.waitServing()
	producePhase(2)
	progress("after the restart")

	txnWaitCommitted(ctx, t, adm, group, inputs)
	close(stop)
	wg.Wait()
	txnCheckOutput(ctx, t, tc.seeds(), inputs, committed.Load())
	keys.wantTV2(t)
	t.Logf("%d inputs exactly once through %d transactions across 3 nodes, the coordinator killed once", inputs, committed.Load())
}
