package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareLedger is what share consumers saw and what the broker confirmed:
// per record key, the highest delivery count seen, and whether its
// acceptance or rejection was confirmed (sent, answered without error,
// and FlushAcks returned).
type shareLedger struct {
	mu       sync.Mutex
	seen     map[int]int32 // key → highest delivery count
	part     map[int]int32 // key → its partition
	accepted map[int]bool  // confirmed
	rejected map[int]bool  // confirmed
	released map[int]int32 // confirmed release: the count released at
	// sent are settlements sent whose answer never came (the broker
	// was killed): the broker may have applied them or not.
	sent map[int]bool
	// when is when each key's settlement was confirmed, for the
	// violations' messages.
	when      map[int]time.Time
	late      []string // violations: a settled record delivered again
	lowCounts []string // violations: a redelivery with a lower count
}

func newShareLedger() *shareLedger {
	return &shareLedger{seen: map[int]int32{}, part: map[int]int32{}, accepted: map[int]bool{}, rejected: map[int]bool{}, released: map[int]int32{}, sent: map[int]bool{}, when: map[int]time.Time{}}
}

// consume runs a share consumer of group on addr until ctx ends or stop
// says so: it rejects every key divisible by 7 and accepts the rest,
// releases every key divisible by 11 the first time it comes, flushing
// after each poll and recording what was confirmed. A record delivered
// again after its acceptance or rejection was confirmed is a violation;
// so is one delivered with a lower delivery count than before, or after a
// confirmed release with a count no higher than the released delivery's.
func (l *shareLedger) consume(ctx context.Context, t *testing.T, seeds []string, group, topic string, stop func() bool) {
	var ackErr error
	var errMu sync.Mutex
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("cohort-e2e-share-crash"),
		kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.ShareMaxRecords(50),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if err := rs.Error(); err != nil {
				errMu.Lock()
				ackErr = err
				errMu.Unlock()
			}
		}))
	if err != nil {
		t.Error(err)
		return
	}
	// Closing sends the last acknowledgements and leaves; with the
	// broker killed that waits on retries, which need not hold the
	// test up.
	defer func() { go cl.Close() }()
	for ctx.Err() == nil && !stop() {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pollCtx, 50)
		cancel()
		// The client may send this poll's acknowledgements with its
		// next fetch, before FlushAcks: an error reported from now on
		// may be theirs.
		errMu.Lock()
		ackErr = nil
		errMu.Unlock()
		var acc, rej, rel []int
		var relAt []int32
		fs.EachRecord(func(r *kgo.Record) {
			k, err := strconv.Atoi(string(r.Key))
			if err != nil {
				t.Errorf("record key %q", r.Key)
				return
			}
			l.mu.Lock()
			if l.accepted[k] || l.rejected[k] {
				l.late = append(l.late, fmt.Sprintf("key %d of partition %d (offset %d) delivered again (count %d) at %s, after its settlement was confirmed at %s",
					k, r.Partition, r.Offset, r.DeliveryCount(), time.Now().Format("15:04:05.000"), l.when[k].Format("15:04:05.000")))
			}
			if prev := l.seen[k]; r.DeliveryCount() < prev {
				l.lowCounts = append(l.lowCounts, fmt.Sprintf("key %d delivered with count %d after %d", k, r.DeliveryCount(), prev))
			}
			if c, ok := l.released[k]; ok && r.DeliveryCount() <= c {
				l.lowCounts = append(l.lowCounts, fmt.Sprintf("key %d delivered with count %d after its release at %d", k, r.DeliveryCount(), c))
			}
			l.seen[k] = max(l.seen[k], r.DeliveryCount())
			l.part[k] = r.Partition
			_, wasReleased := l.released[k]
			l.mu.Unlock()
			if k%11 == 0 && !wasReleased && r.DeliveryCount() == 1 {
				r.Ack(kgo.AckRelease)
				rel, relAt = append(rel, k), append(relAt, r.DeliveryCount())
			} else if k%7 == 0 {
				r.Ack(kgo.AckReject)
				rej = append(rej, k)
			} else {
				r.Ack(kgo.AckAccept)
				acc = append(acc, k)
			}
		})
		if len(acc)+len(rej)+len(rel) == 0 {
			continue
		}
		flushCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := cl.FlushAcks(flushCtx)
		cancel()
		errMu.Lock()
		confirmed := err == nil && ackErr == nil
		errMu.Unlock()
		if !confirmed {
			t.Logf("acknowledgements of %d records not confirmed: flush %v, callback %v", len(acc)+len(rej), err, ackErr)
			l.mu.Lock()
			for _, k := range append(acc, rej...) {
				l.sent[k] = true
			}
			l.mu.Unlock()
			continue
		}
		l.mu.Lock()
		now := time.Now()
		for _, k := range append(acc, rej...) {
			l.when[k] = now
		}
		for _, k := range acc {
			l.accepted[k] = true
		}
		for _, k := range rej {
			l.rejected[k] = true
		}
		for i, k := range rel {
			l.released[k] = relAt[i]
		}
		l.mu.Unlock()
	}
}

func (l *shareLedger) settled() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settledLocked()
}

func (l *shareLedger) settledLocked() int { return len(l.accepted) + len(l.rejected) }

func redelivered(seen map[int]int32) int {
	n := 0
	for _, c := range seen {
		if c > 1 {
			n++
		}
	}
	return n
}

// setGroupConfig sets one config of group (IncrementalAlterConfigs on
// the GROUP resource, as franz-go's share tests do).
func setGroupConfig(ctx context.Context, t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: name, Value: kmsg.StringPtr(value)}}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("set %s of %s: %v", name, group, err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set %s of %s: %v", name, group, err)
	}
}

// TestShareGroupKill9: two franz-go share consumers (kgo.ShareGroup)
// accept and reject records of a three-partition topic on `cohort
// serve`, which is killed with -9 mid-load and started again on the same
// data; new consumers then finish the topic. Nothing whose acceptance or
// rejection the broker confirmed is delivered again, before or after the
// crash; a record delivered before the crash and not settled comes back
// with its delivery count kept (never lower); and every record is
// settled in the end.
func TestShareGroupKill9(t *testing.T) {
	longTest(t)
	dir := t.TempDir()
	// The consumers killed with the broker stay members until their
	// session times out, holding their partitions' assignment: 5 s
	// rather than Kafka's 45 s keeps the test short.
	flags := []string{"--group-share-session-timeout", "5s", "--group-share-heartbeat-interval", "1s"}
	p := testkit.StartBinary(t, dir, flags...)
	const topic, group, records = "share-crash", "share-crash-workers", 6000
	setup := func(addr string) (*kgo.Client, *kadm.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl, kadm.NewClient(cl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, adm := setup(p.Addr)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	setGroupConfig(ctx, t, cl, group, "share.auto.offset.reset", "earliest")
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("v")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	l := newShareLedger()
	runCtx, stopRun := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { l.consume(runCtx, t, []string{p.Addr}, group, topic, func() bool { return false }) })
	}
	// Kill mid-load: once a third is settled.
	deadline := time.Now().Add(time.Minute)
	for l.settled() < records/3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d records settled in a minute", l.settled())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Kill()
	before := l.settled()
	stopRun()
	wg.Wait()
	t.Logf("killed with %d of %d records settled", before, records)

	p = testkit.StartBinary(t, dir, flags...)
	runCtx, stopRun = context.WithCancel(ctx)
	defer stopRun()
	done := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		n := 0
		for k := range records {
			if l.accepted[k] || l.rejected[k] || l.sent[k] {
				n++
			}
		}
		return n >= records
	}
	for range 2 {
		wg.Go(func() { l.consume(runCtx, t, []string{p.Addr}, group, topic, done) })
	}
	deadline = time.Now().Add(90 * time.Second)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stopRun()
	wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.late {
		t.Error(v)
	}
	for _, v := range l.lowCounts {
		t.Error(v)
	}
	// A record not settled is one whose settlement was sent as the
	// broker died, and applied (so it is not delivered again); any other
	// should have come back and been settled.
	var unsettled []string
	maybe := 0
	for k := range records {
		switch {
		case l.accepted[k] || l.rejected[k]:
		case l.sent[k]:
			maybe++
		default:
			unsettled = append(unsettled, fmt.Sprintf("%d (count %d)", k, l.seen[k]))
		}
	}
	if len(unsettled) > 0 {
		t.Errorf("%d records never settled, the first: %v", len(unsettled), unsettled[:min(10, len(unsettled))])
	}
	t.Logf("%d settled, %d sent as the broker died: %d accepted, %d rejected; %d released and confirmed; %d delivered more than once", l.settledLocked(), maybe, len(l.accepted), len(l.rejected), len(l.released), redelivered(l.seen))
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("ran out of time: %v", ctx.Err())
	}
}
