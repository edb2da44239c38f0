package txn_test

// The tenancy property (issue 15) for the transaction coordinator: three
// tenants (organisations) use the same transactional ids on one shard,
// interleaved at random, with timeouts, markers and restarts. Each
// tenant's every answer must be exactly what it gets on a shard of its
// own given the same requests at the same times: no tenant's
// InitProducerId fences another's producer, no abort or commit reaches
// another's transaction, and DescribeTransactions and ListTransactions
// show only the tenant's own.

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/txn"
)

func TestPropertyTenancy(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 25
	}
	for seed := range uint64(seeds) {
		if msg := runTenancy(t, seed); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
}

func runTenancy(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 848))
	tenants := []string{"", "acme", "globex"}
	ids := []string{"tx-a", "tx-b"}
	shared := newHarness(t)
	alone := map[string]*harness{}
	for _, tn := range tenants {
		alone[tn] = newHarness(t)
	}
	all := func(f func(h *harness)) {
		f(shared)
		for _, tn := range tenants {
			f(alone[tn])
		}
	}
	// pairs are the requests sent to both: the shared shard's id and the
	// tenant's own shard's, with what was asked, for the message.
	type pair struct {
		tenant     string
		sh, own    machine.RequestID
		what       string
		step       int
		checkedOut bool
	}
	var pairs []*pair
	// producer is the last producer id and epoch a tenant's Init got for
	// an id, from its own shard.
	type key struct{ tenant, id string }
	producer := map[key]txn.Result{}
	nextPID := int64(1000)
	send := func(step int, tenant, what string, cmd any) *pair {
		p := &pair{tenant: tenant, sh: shared.send(cmd), own: alone[tenant].send(cmd), what: what, step: step}
		pairs = append(pairs, p)
		return p
	}
	for step := range 250 {
		tn := tenants[rng.IntN(len(tenants))]
		id := ids[rng.IntN(len(ids))]
		cur := producer[key{tn, id}]
		epoch := cur.ProducerEpoch
		if rng.IntN(8) == 0 {
			epoch-- // a stale producer, now and then
		}
		switch op := rng.IntN(12); {
		case op < 2:
			nextPID++
			p := send(step, tn, "init "+id, txn.InitCmd{Tenant: tn, TxnID: id, TimeoutMs: 20000, ProducerID: -1, ProducerEpoch: -1, NewProducerID: nextPID})
			if r, ok := alone[tn].result(p.own); ok && r.Code == 0 {
				producer[key{tn, id}] = r
			}
		case op < 5:
			parts := []txn.TP{{Topic: "events", Partition: int32(rng.IntN(3))}}
			send(step, tn, "add partitions "+id, txn.AddPartitionsCmd{Tenant: tn, TxnID: id, ProducerID: cur.ProducerID, ProducerEpoch: epoch, Partitions: parts})
		case op < 6:
			send(step, tn, "add group "+id, txn.AddGroupCmd{Tenant: tn, TxnID: id, ProducerID: cur.ProducerID, ProducerEpoch: epoch, Group: "orders"})
		case op < 8:
			send(step, tn, "end "+id, txn.EndCmd{Tenant: tn, TxnID: id, ProducerID: cur.ProducerID, ProducerEpoch: epoch, Commit: rng.IntN(2) == 0})
		case op < 9:
			send(step, tn, "describe", txn.DescribeCmd{Tenant: tn, TxnIDs: ids})
			send(step, tn, "list", txn.ListCmd{Tenant: tn})
		case op < 10:
			all(func(h *harness) { h.completeMarkers() })
		case op < 11:
			d := time.Duration(rng.IntN(30)) * time.Second
			all(func(h *harness) { h.advance(d) })
		default:
			all(func(h *harness) { h.restart() })
		}
		for _, p := range pairs {
			if p.checkedOut {
				continue
			}
			a, aok := shared.replies[p.sh]
			b, bok := alone[p.tenant].replies[p.own]
			if aok != bok {
				return fmt.Sprintf("step %d: tenant %q's %s (step %d): answered on the shared shard %v, on its own %v", step, p.tenant, p.what, p.step, aok, bok)
			}
			if !aok {
				continue
			}
			if !reflect.DeepEqual(a, b) {
				return fmt.Sprintf("step %d: tenant %q's %s (step %d): shared shard answers %+v, its own %+v", step, p.tenant, p.what, p.step, a, b)
			}
			p.checkedOut = true
		}
	}
	return ""
}
