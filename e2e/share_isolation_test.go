package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shareDrain consumes group's records of topic with a franz-go share
// consumer, accepting each, until it has want records or the wait ends;
// it returns the values, sorted.
func shareDrain(t *testing.T, addr, group, topic string, want int, wait time.Duration) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(wait)
	for len(got) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollRecords(ctx, 100)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			r.Ack(kgo.AckAccept)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.FlushAcks(ctx); err != nil {
		t.Errorf("flush: %v", err)
	}
	slices.Sort(got)
	return got
}

// TestShareGroupIsolationAndReset: a share group's configs as franz-go's
// share consumer sees them on `cohort serve`. share.isolation.level
// read_committed delivers no record of an aborted transaction and none of
// a transaction still open (it stops at the last stable offset) until it
// commits; read_uncommitted delivers them all. share.auto.offset.reset
// by_duration:PT1H starts at the first record no older than an hour.
func TestShareGroupIsolationAndReset(t *testing.T) {
	longTest(t)
	p := testkit.StartBinary(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "share-iso"
	admin, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, g := range []string{"iso-committed", "iso-uncommitted"} {
		setGroupConfig(ctx, t, admin, g, "share.auto.offset.reset", "earliest")
	}
	setGroupConfig(ctx, t, admin, "iso-committed", "share.isolation.level", "read_committed")

	txn := func(id string, values []string, commit bool) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if commit {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
		return cl
	}
	plain := func(v string) {
		if err := admin.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	plain("p0")
	aborted := txn("iso-aborted", []string{"a0", "a1", "a2"}, false)
	if err := aborted.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	aborted.Close()
	txn("iso-committed-1", []string{"c0", "c1"}, true).Close()
	open := txn("iso-open", []string{"o0", "o1"}, false)
	defer open.Close()
	plain("p1") // after the open transaction: above the last stable offset

	got := shareDrain(t, p.Addr, "iso-committed", topic, 3, 5*time.Second)
	if want := "c0 c1 p0"; strings.Join(got, " ") != want {
		t.Fatalf("read_committed while a transaction is open: %v, want %s", got, want)
	}
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got = shareDrain(t, p.Addr, "iso-committed", topic, 3, 20*time.Second)
	if want := "o0 o1 p1"; strings.Join(got, " ") != want {
		t.Fatalf("read_committed after the commit: %v, want %s", got, want)
	}
	// Drain until the nine records are in, as the other drains stop at
	// theirs: asking for ten, one more than there are, made this drain
	// run out its whole 20 s. Anything extra that read_uncommitted
	// wrongly delivered (a control record, a duplicate) comes in the same
	// fetches as the nine and still fails the comparison.
	got = shareDrain(t, p.Addr, "iso-uncommitted", topic, 9, 20*time.Second)
	if want := "a0 a1 a2 c0 c1 o0 o1 p0 p1"; strings.Join(got, " ") != want {
		t.Fatalf("read_uncommitted: %v, want %s", got, want)
	}

	// by_duration: two records two hours old, then two of now.
	const reset = "share-reset"
	for i, age := range []time.Duration{2 * time.Hour, 2 * time.Hour, 0, 0} {
		r := &kgo.Record{Topic: reset, Value: []byte{'r', byte('0' + i)}, Timestamp: time.Now().Add(-age)}
		if err := admin.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setGroupConfig(ctx, t, admin, "reset-hour", "share.auto.offset.reset", "by_duration:PT1H")
	got = shareDrain(t, p.Addr, "reset-hour", reset, 2, 20*time.Second)
	if want := "r2 r3"; strings.Join(got, " ") != want {
		t.Fatalf("by_duration:PT1H: %v, want %s", got, want)
	}
}
