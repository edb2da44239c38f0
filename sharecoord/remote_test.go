package sharecoord_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
)

// wire is a Remote between hosts in one process: shards not held by the
// asking host are node 2's, and a command sent there is run by its host.
type wire struct {
	to    *sharecoord.Host
	down  atomic.Bool
	sent  atomic.Int64
	owner func(i int) bool
}

func (w *wire) Owner(i int) (int32, bool) { return 2, w.owner(i) }

func (w *wire) Send(ctx context.Context, node int32, tenant string, cmd []byte) ([]byte, error) {
	if w.down.Load() {
		return nil, errors.New("connection refused")
	}
	w.sent.Add(1)
	return w.to.RunForwarded(ctx, tenant, cmd)
}

// TestRemote: a host that serves no shard (a partition leader in cluster
// mode) runs every command on the node serving its shard: what it
// acquires, acknowledges and releases there is what that node's host
// then says; Describe and Release naming no partitions reach it; the
// tenant travels; a node that cannot be reached is NOT_COORDINATOR; and
// a forwarded command is never forwarded again.
func TestRemote(t *testing.T) {
	st, err := pebble.Open(filepath.Join(t.TempDir(), "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	owner := startHost(t, sharecoord.Config{Store: st, Shards: 4})
	leader := startHost(t, sharecoord.Config{Store: st, Shards: 4, Standby: true})
	w := &wire{to: owner, owner: func(int) bool { return true }}
	leader.SetRemote(w)

	l := plog{end: 20, batch: 5}
	k := key("g", 0)
	k.Tenant = "acme"
	lim := sharestate.Limits{}
	if got := render(fetch(t, leader, k, "m1", l, 10, lim)); got != "0-9/1" {
		t.Fatalf("acquired %q through the leader", got)
	}
	ack(t, leader, k, "m1", 0, 4, sharestate.AckAccept)
	if r := leader.Release(context.Background(), sharestate.ReleaseCmd{Tenant: "acme", Group: "g", Member: "m1"}); r.Code != 0 {
		t.Fatalf("release: %v", kerr.ErrorForCode(r.Code))
	}
	// The owner's own view: 0-4 acknowledged, 5-9 released, for acme.
	if got := render(fetch(t, owner, k, "m2", l, 20, lim)); got != "5-9/2 10-19/1" {
		t.Fatalf("the owner then acquired %q", got)
	}
	ds := leader.Describe(context.Background(), sharestate.DescribeCmd{Tenant: "acme", Group: "g"})
	if len(ds) != 1 || ds[0].Key != k || ds[0].StartOffset != 5 || ds[0].EndOffset != 20 {
		t.Fatalf("described through the leader: %+v", ds)
	}
	if ds := owner.Describe(context.Background(), sharestate.DescribeCmd{Group: "g"}); len(ds) != 0 {
		t.Fatalf("the default organisation's g has state: %+v", ds)
	}
	if w.sent.Load() == 0 {
		t.Fatal("nothing was forwarded")
	}

	// A forwarded command runs only where it lands: sent to the leader,
	// which does not serve the shard, it is answered NOT_COORDINATOR
	// there rather than sent on to the owner.
	asker := startHost(t, sharecoord.Config{Store: st, Shards: 4, Standby: true})
	asker.SetRemote(&wire{to: leader, owner: func(int) bool { return true }})
	if n := asker.Next(context.Background(), sharestate.NextCmd{Key: k, Log: sharestate.Log{Latest: 20, AtTime: -1}}); n.Code != kerr.NotCoordinator.Code {
		t.Fatalf("a forwarded command at a node without the shard: %+v", n)
	}

	// A shard still held here but given to another node by the
	// cluster (its unload not done yet) is not served from here: the
	// command is refused rather than answered from what may be stale.
	owner.SetRemote(&wire{to: owner, owner: func(int) bool { return true }})
	if n := asker2(t, st, owner).Next(context.Background(), sharestate.NextCmd{Key: k, Log: sharestate.Log{Latest: 20, AtTime: -1}}); n.Code != kerr.NotCoordinator.Code {
		t.Fatalf("a shard the cluster gave away answered: %+v", n)
	}
	owner.SetRemote(&wire{to: owner, owner: func(int) bool { return false }})

	w.down.Store(true)
	if n := leader.Next(context.Background(), sharestate.NextCmd{Key: k, Log: sharestate.Log{Latest: 20, AtTime: -1}}); n.Code != kerr.NotCoordinator.Code {
		t.Fatalf("an unreachable owner: %+v", n)
	}
}

// asker2 is a host serving nothing whose commands all go to to.
func asker2(t *testing.T, st *pebble.Store, to *sharecoord.Host) *sharecoord.Host {
	h := startHost(t, sharecoord.Config{Store: st, Shards: 4, Standby: true})
	h.SetRemote(&wire{to: to, owner: func(int) bool { return true }})
	return h
}
