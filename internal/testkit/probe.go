package testkit

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// CommitProbe commits an ever-growing offset of partition 0 of a topic for
// one group, every Every, as a raw client with no retries of its own:
// FindCoordinator, then OffsetCommit (v8, a simple commit) to the node
// named; on any error it looks the coordinator up again. It records when
// each commit was acknowledged, so a test or benchmark can see how long a
// group was unavailable (cluster failover, restarts) and that every
// acknowledged commit survived. It stops at the test's end, or after 5
// minutes.
type CommitProbe struct {
	Group, Topic string
	cl           *kgo.Client
	stop, done   chan struct{}

	mu     sync.Mutex
	acks   []time.Time
	acked  int64
	maxGap time.Duration
	errs   map[string]int
}

// StartCommitProbe starts a probe through seeds, committing every every.
func StartCommitProbe(t testing.TB, seeds []string, group, topic string, every time.Duration) *CommitProbe {
	t.Helper()
	// The probe commits by name, at v8: kgo would otherwise send the
	// highest version the node serves, v10, which names topics by id.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 8)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("cohort-probe"),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.MaxVersions(versions))
	if err != nil {
		t.Fatal(err)
	}
	p := &CommitProbe{Group: group, Topic: topic, cl: cl, stop: make(chan struct{}), done: make(chan struct{}), acked: -1, errs: map[string]int{}}
	go p.run(every)
	t.Cleanup(p.Close)
	return p
}

// Close stops the probe; calling it again does nothing.
func (p *CommitProbe) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.cl.Close()
}

func (p *CommitProbe) run(every time.Duration) {
	defer close(p.done)
	deadline := time.Now().Add(5 * time.Minute)
	coord := int32(-1)
	for offset := int64(1); time.Now().Before(deadline); {
		select {
		case <-p.stop:
			return
		case <-time.After(every):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := p.attempt(ctx, &coord, offset)
		cancel()
		if err != nil {
			p.fail(err)
			coord = -1
			p.cl.ForceMetadataRefresh()
			continue
		}
		p.ack(offset)
		offset++
	}
}

// attempt finds the coordinator if *coord is not known, and commits.
func (p *CommitProbe) attempt(ctx context.Context, coord *int32, offset int64) error {
	if *coord < 0 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = p.Group
		resp, err := req.RequestWith(ctx, p.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return wrap("FindCoordinator", err)
		}
		*coord = resp.NodeID
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation = p.Group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = p.Topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p.cl.Broker(int(*coord)))
	if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	return wrap("OffsetCommit", err)
}

type probeErr struct {
	api string
	err error
}

func (e probeErr) Error() string { return e.api + ": " + e.err.Error() }

func wrap(api string, err error) error {
	if err == nil {
		return nil
	}
	return probeErr{api, err}
}

func (p *CommitProbe) fail(err error) {
	s := err.Error()
	// Keep the kind, not the address.
	if i := strings.Index(s, "dial tcp"); i >= 0 {
		s = s[:i] + "dial tcp ..."
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs[s]++
}

func (p *CommitProbe) ack(offset int64) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.acks); n > 0 {
		p.maxGap = max(p.maxGap, now.Sub(p.acks[n-1]))
	}
	p.acks = append(p.acks, now)
	p.acked = offset
}

// Commits is the number of commits acknowledged so far.
func (p *CommitProbe) Commits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// FirstAckAfter returns when the first commit after t was acknowledged,
// waiting for it up to within.
func (p *CommitProbe) FirstAckAfter(t time.Time, within time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(within)
	for {
		p.mu.Lock()
		i, _ := slices.BinarySearchFunc(p.acks, t, func(a, t time.Time) int { return a.Compare(t) })
		var at time.Time
		if i < len(p.acks) {
			at = p.acks[i]
		}
		p.mu.Unlock()
		if !at.IsZero() {
			return at, true
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ResetGap starts measuring the longest gap between acknowledgements
// afresh.
func (p *CommitProbe) ResetGap() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maxGap = 0
}

// Report returns the highest acknowledged offset (-1: none), the longest
// gap between two acknowledgements since the last ResetGap, and the
// errors seen, by kind.
func (p *CommitProbe) Report() (acked int64, gap time.Duration, errs map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked, p.maxGap, maps.Clone(p.errs)
}
