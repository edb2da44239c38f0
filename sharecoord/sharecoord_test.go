package sharecoord_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/clocktest"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRestartKeepsWhatWasAnswered: acknowledgements, rejections and
// releases answered on a host over Pebble are there after the store is
// closed and opened again (a restart); so are acquisitions: records
// acquired and not acknowledged are still their member's, which can
// acknowledge them, and come back one delivery on once it leaves;
// acknowledged and rejected ones are never delivered again.
// Partitions spread over the shards.
func TestRestartKeepsWhatWasAnswered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	// open starts a host on the store; stop stops both.
	open := func() (h *sharecoord.Host, stop func()) {
		st, err := pebble.Open(dir, pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		u, err := coordinator.StartGlobal(coordinator.GlobalConfig{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		if h, err = sharecoord.Start(sharecoord.Config{Store: st, Shards: 4, Global: u}); err != nil {
			t.Fatal(err)
		}
		return h, func() {
			h.Close()
			u.Close()
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	h, stop := open()
	l := plog{end: 100, batch: 10}
	const parts = 8
	for p := range int32(parts) {
		k := key("g", p)
		if got := render(fetch(t, h, k, "m1", l, 30, sharestate.Limits{})); got != "0-29/1" {
			t.Fatalf("partition %d: first fetch %s", p, got)
		}
		ack(t, h, k, "m1", 0, 9, sharestate.AckAccept)
		ack(t, h, k, "m1", 10, 14, sharestate.AckReject)
		ack(t, h, k, "m1", 15, 19, sharestate.AckRelease)
		// 15-19 again, at delivery 2; 20-29 stay acquired.
		if got := render(fetch(t, h, k, "m1", l, 5, sharestate.Limits{})); got != "15-19/2" {
			t.Fatalf("partition %d: second fetch %s", p, got)
		}
	}
	shards := map[int]bool{}
	for p := range int32(parts) {
		shards[h.ShardFor(key("g", p))] = true
	}
	if len(shards) < 2 {
		t.Fatalf("%d partitions fell on %d shard", parts, len(shards))
	}
	stop()

	h, stop = open()
	defer stop()
	for p := range int32(parts) {
		k := key("g", p)
		ds := h.Describe(context.Background(), sharestate.DescribeCmd{Partitions: []sharestate.Key{k}})
		if len(ds) != 1 || ds[0].Code != 0 || ds[0].StartOffset != 15 {
			t.Fatalf("partition %d after the restart: %+v", p, ds)
		}
		// m1's locks were written: 15-19 (delivery 2) and 20-29 are
		// still its, and another member gets the rest.
		if got := render(fetch(t, h, k, "m2", l, 100, sharestate.Limits{})); got != "30-99/1" {
			t.Fatalf("partition %d: fetch after the restart %s", p, got)
		}
		ack(t, h, k, "m1", 20, 24, sharestate.AckAccept)
		// m1 leaves: what it still held comes back one delivery on.
		if r := h.Release(context.Background(), sharestate.ReleaseCmd{Group: "g", Member: "m1", Partitions: []sharestate.Key{k}}); r.Code != 0 {
			t.Fatalf("partition %d: release: %v", p, r.Code)
		}
		if got := render(fetch(t, h, k, "m3", l, 100, sharestate.Limits{})); got != "15-19/3 25-29/2" {
			t.Fatalf("partition %d: fetch after m1 left %s", p, got)
		}
	}
}

// TestShardCountIsDurable: the first start stores its shard count in the
// global unit's meta, which later starts use whatever they configure;
// a data directory of an older version, which has a group coordinator
// count and no share-state count, gets one at its first start.
func TestShardCountIsDurable(t *testing.T) {
	st := memstore.New(memstore.Options{})
	// An older data directory: the meta holds the coordinator's count.
	u := startGlobal(t, st)
	if v, err := st.Get(record.MetaKey(record.MetaShareStateShards)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("share-state shard count before the first start: %q, %v", v, err)
	}
	h := startHost(t, sharecoord.Config{Store: st, Shards: 3, Global: u})
	if h.Shards() != 3 {
		t.Fatalf("first start: %d shards", h.Shards())
	}
	h.Close()
	if v, err := st.Get(record.MetaKey(record.MetaShareStateShards)); err != nil || v == nil {
		t.Fatalf("share-state shard count not stored: %q, %v", v, err)
	}
	h = startHost(t, sharecoord.Config{Store: st, Shards: 8, Global: u})
	if h.Shards() != 3 {
		t.Fatalf("second start configured with 8: %d shards, want the stored 3", h.Shards())
	}
	if err := h.Ready(); err != nil {
		t.Fatal(err)
	}
	if _, err := sharecoord.Start(sharecoord.Config{Store: st, Shards: sharecoord.MaxShards + 1}); err == nil {
		t.Fatal("a start with too many shards succeeded")
	}
}

// TestKeys: Kafka's share coordinator key parses into the partition it
// names, a group with colons included; partitions spread over shards.
func TestKeys(t *testing.T) {
	id := base64.RawURLEncoding.EncodeToString(topicID[:])
	for _, tc := range []struct {
		key  string
		want sharestate.Key
		ok   bool
	}{
		{"g:" + id + ":3", key("g", 3), true},
		{"a:b:" + id + ":0", key("a:b", 0), true},
		{":" + id + ":0", sharestate.Key{}, false},
		{"g:" + id, sharestate.Key{}, false},
		{"g:" + id + ":-1", sharestate.Key{}, false},
		{"g:" + id + ":x", sharestate.Key{}, false},
		{"g:notanid:1", sharestate.Key{}, false},
	} {
		got, err := sharecoord.ParseKey("", tc.key)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKey(%q) = %+v, %v", tc.key, got, err)
		}
	}
	h := startHost(t, sharecoord.Config{Store: memstore.New(memstore.Options{}), Shards: 16, Standby: true})
	count := map[int]int{}
	for g := range 50 {
		for p := range int32(20) {
			count[h.ShardFor(key(fmt.Sprint("g", g), p))]++
		}
	}
	for s := range 16 {
		if count[s] < 1000/16/2 {
			t.Errorf("shard %d got %d of 1000 partitions: %v", s, count[s], count)
		}
	}
}

// TestNotServedHere: a host holding no shard (cluster mode, another
// node's shards) answers every command NOT_COORDINATOR in its own
// answer type; a shard loaded serves.
func TestNotServedHere(t *testing.T) {
	h := startHost(t, sharecoord.Config{Store: memstore.New(memstore.Options{}), Shards: 2, Standby: true})
	ctx := context.Background()
	k := key("g", 0)
	nc := kerr.NotCoordinator.Code
	if n := h.Next(ctx, sharestate.NextCmd{Key: k}); n.Code != nc || n.Offset != -1 {
		t.Errorf("Next: %+v", n)
	}
	if a := h.Acquire(ctx, sharestate.AcquireCmd{Key: k, Member: "m"}); a.Code != nc {
		t.Errorf("Acquire: %+v", a)
	}
	if r := h.Ack(ctx, sharestate.AckCmd{Key: k, Member: "m"}); r.Code != nc {
		t.Errorf("Ack: %+v", r)
	}
	if r := h.Release(ctx, sharestate.ReleaseCmd{Group: "g", Member: "m", Partitions: []sharestate.Key{k}}); r.Code != nc {
		t.Errorf("Release: %+v", r)
	}
	if r := h.Alter(ctx, sharestate.AlterCmd{Key: k}); r.Code != nc {
		t.Errorf("Alter: %+v", r)
	}
	if r := h.Delete(ctx, sharestate.DeleteCmd{Key: k}); r.Code != nc {
		t.Errorf("Delete: %+v", r)
	}
	k1 := key("g", 1)
	for h.ShardFor(k1) == h.ShardFor(k) {
		k1.Partition++
	}
	if err := h.Load(h.ShardFor(k1)); err != nil {
		t.Fatal(err)
	}
	if !h.Holds(h.ShardFor(k1)) || h.Holds(h.ShardFor(k)) {
		t.Fatalf("held %v", h.Held())
	}
	fetch(t, h, k1, "m", plog{end: 10, batch: 10}, 10, sharestate.Limits{})
	ds := h.Describe(ctx, sharestate.DescribeCmd{Partitions: []sharestate.Key{k, k1}})
	if len(ds) != 2 || ds[0].Key != k || ds[0].Code != nc || ds[1].Key != k1 || ds[1].Code != 0 || ds[1].EndOffset != 10 {
		t.Fatalf("Describe across a shard served and one not: %+v", ds)
	}
	if ds := h.Describe(ctx, sharestate.DescribeCmd{Group: "g"}); len(ds) != 1 || ds[0].Key != k1 {
		t.Fatalf("Describe of the group on the shards held here: %+v", ds)
	}
}

// TestLimitsBounded: a command's in-flight limit is capped at
// MaxRecordLocks, whatever the group's config asks for.
func TestLimitsBounded(t *testing.T) {
	h := startHost(t, sharecoord.Config{Store: memstore.New(memstore.Options{}), MaxRecordLocks: 10})
	l := plog{end: 100, batch: 5}
	k := key("g", 0)
	huge := sharestate.Limits{MaxInFlight: 1 << 30}
	if got := render(fetch(t, h, k, "m", l, 100, huge)); got != "0-9/1" {
		t.Fatalf("acquired %s with an in-flight limit of 1<<30 and MaxRecordLocks 10", got)
	}
	if n := h.Next(context.Background(), sharestate.NextCmd{Key: k, Limits: huge}); !n.Full {
		t.Fatalf("Next at the capped limit: %+v", n)
	}
}

// TestWatch: a watch is signalled when one of its partitions has records
// available again or room under the in-flight limit — a lock expiring,
// a release acknowledged, a member's records given back, an
// acknowledgement — and when its shard is unloaded; not for another
// partition's change; and leaves nothing behind.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := startHost(t, sharecoord.Config{Store: memstore.New(memstore.Options{}), Shards: 2, Clock: clock,
		Machine: sharestate.Config{Limits: sharestate.Limits{LockDuration: time.Second, MaxInFlight: 10}}})
	l := plog{end: 10, batch: 10}
	k, other := key("g", 0), key("g", 1)
	fetch(t, h, other, "m1", l, 10, sharestate.Limits{})

	// A lock expires: its records are available again.
	if got := render(fetch(t, h, k, "m1", l, 10, sharestate.Limits{})); got != "0-9/1" {
		t.Fatalf("fetch %s", got)
	}
	w := h.Watch(k)
	if got := render(fetch(t, h, k, "m2", l, 10, sharestate.Limits{})); got != "" {
		t.Fatalf("fetch with every record acquired: %s", got)
	}
	ack(t, h, other, "m1", 0, 9, sharestate.AckAccept)
	if !quiet(w) {
		t.Fatal("signalled by another partition's acknowledgement")
	}
	clock.Advance(time.Second)
	if !signalled(w, 10*time.Second) {
		t.Fatal("not signalled when the locks expired")
	}
	w.Stop()
	if got := render(fetch(t, h, k, "m2", l, 10, sharestate.Limits{})); got != "0-9/2" {
		t.Fatalf("fetch after the expiry %s", got)
	}

	// A release, and a member's records given back.
	w = h.Watch(k)
	ack(t, h, k, "m2", 0, 1, sharestate.AckRelease)
	if quiet(w) {
		t.Fatal("not signalled by a release")
	}
	w.Stop()
	w = h.Watch(k)
	if r := h.Release(ctx, sharestate.ReleaseCmd{Group: "g", Member: "m2", Partitions: []sharestate.Key{k}}); r.Code != 0 {
		t.Fatal(kerr.ErrorForCode(r.Code))
	}
	if quiet(w) {
		t.Fatal("not signalled when a member's records were given back")
	}
	w.Stop()

	// The in-flight limit: an acceptance makes room.
	fetch(t, h, k, "m3", l, 10, sharestate.Limits{})
	w = h.Watch(k)
	if n := h.Next(ctx, sharestate.NextCmd{Key: k, Log: sharestate.Log{Latest: 20}}); !n.Full {
		t.Fatalf("Next at the in-flight limit: %+v", n)
	}
	ack(t, h, k, "m3", 0, 4, sharestate.AckAccept)
	if quiet(w) {
		t.Fatal("not signalled by an acceptance under the in-flight limit")
	}
	w.Stop()

	// The shard goes: the watch of a partition on it is signalled, one
	// of the other shard's is not.
	ko := key("g", 2)
	for h.ShardFor(ko) == h.ShardFor(k) {
		ko.Partition++
	}
	w, wo := h.Watch(k), h.Watch(ko)
	h.Unload(h.ShardFor(k))
	if quiet(w) || !quiet(wo) {
		t.Fatal("unloading the shard did not signal its partition's watch alone")
	}
	if n := h.Next(ctx, sharestate.NextCmd{Key: k}); n.Code != kerr.NotCoordinator.Code {
		t.Fatalf("Next after the unload: %+v", n)
	}
	w.Stop()
	wo.Stop()

	// What is left: nothing.
	var many []sharestate.Key
	for p := range int32(1000) {
		many = append(many, key("many", p))
	}
	w = h.Watch(many...)
	if h.Watching() != 1000 {
		t.Fatalf("%d entries for a watch of 1000 partitions", h.Watching())
	}
	w.Stop()
	w.Stop()
	if h.Watching() != 0 || h.WatchedPartitions() != 0 {
		t.Fatalf("%d entries and %d partitions left after Stop", h.Watching(), h.WatchedPartitions())
	}
	// Closing wakes every watch.
	w = h.Watch(ko)
	h.Close()
	if quiet(w) {
		t.Fatal("not signalled at Close")
	}
}

// TestDeadLettersOutliveARestart: records rejected under a dead-letter
// topic are named by DeadLetters, and named again after a restart while
// their dead letters are not written (DeadLettered not called): the
// writer gets a second chance, as Kafka's resumption of ARCHIVING
// batches. Once DeadLettered, they are archived and named no more.
func TestDeadLettersOutliveARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	open := func() (*sharecoord.Host, func()) {
		st, err := pebble.Open(dir, pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := sharecoord.Start(sharecoord.Config{Store: st, Shards: 2})
		if err != nil {
			t.Fatal(err)
		}
		return h, func() {
			h.Close()
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	named := func(h *sharecoord.Host) []sharestate.Key {
		t.Helper()
		select {
		case <-h.DeadLetters():
			return h.TakeDeadLetters()
		case <-time.After(10 * time.Second):
			t.Fatal("no dead letters named in 10 s")
			return nil
		}
	}
	h, stop := open()
	k := key("g", 0)
	l := plog{end: 10, batch: 5}
	if got := render(fetch(t, h, k, "m1", l, 10, sharestate.Limits{DeadLetter: true})); got != "0-9/1" {
		t.Fatalf("fetch %s", got)
	}
	ack(t, h, k, "m1", 0, 3, sharestate.AckReject)
	ack(t, h, k, "m1", 4, 9, sharestate.AckAccept)
	if got := named(h); len(got) != 1 || got[0] != k {
		t.Fatalf("named %v", got)
	}
	stop()

	h, stop = open()
	defer stop()
	if got := named(h); len(got) != 1 || got[0] != k {
		t.Fatalf("named after the restart %v", got)
	}
	ds := h.Describe(context.Background(), sharestate.DescribeCmd{Partitions: []sharestate.Key{k}})
	if len(ds) != 1 || ds[0].StartOffset != 0 || len(ds[0].Runs) == 0 || ds[0].Runs[0].State != record.ShareArchiving || ds[0].Runs[0].Last != 3 {
		t.Fatalf("after the restart: %+v", ds)
	}
	if r := h.DeadLettered(context.Background(), sharestate.DeadLetteredCmd{Key: k, First: 0, Last: 3}); r.Code != 0 {
		t.Fatalf("dead-lettered: %v", kerr.ErrorForCode(r.Code))
	}
	ds = h.Describe(context.Background(), sharestate.DescribeCmd{Partitions: []sharestate.Key{k}})
	if len(ds) != 1 || ds[0].StartOffset != 10 {
		t.Fatalf("after DeadLettered: %+v", ds)
	}
	select {
	case <-h.DeadLetters():
		t.Fatalf("named again: %v", h.TakeDeadLetters())
	default:
	}
}
