package loadgen

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CommitRequest is a simple commit (generation -1, no member id) of
// offset for partitions 0..partitions-1 of topic.
func CommitRequest(group, topic string, partitions int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	req.MemberID = ""
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = offset
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return req
}

// CheckCommit returns the first partition error of an OffsetCommit
// response, or an error if it does not answer every partition asked.
func CheckCommit(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) error {
	want, got := 0, 0
	for _, t := range req.Topics {
		want += len(t.Partitions)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			got++
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("OffsetCommit %s %d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	if got != want {
		return fmt.Errorf("OffsetCommit: %d partitions answered, want %d", got, want)
	}
	return nil
}

// Commits is a closed loop of simple offset commits: committer i, on
// Conns[i], commits for group Groups[i], one OffsetCommit v8 of
// partitions 0..Partitions-1 of Topic at a time, waiting for each answer
// before it sends the next.
type Commits struct {
	Conns      []*Conn
	Groups     []string // as many as Conns
	Topic      string
	Partitions int32 // partitions per OffsetCommit
}

// Warm makes the first commit of every group (which creates it), so that
// a timed run measures commits to existing groups.
func (w Commits) Warm() error {
	return Parallel(len(w.Conns), 64, func(i int) error {
		req := CommitRequest(w.Groups[i], w.Topic, w.Partitions, 0)
		resp, err := Do[*kmsg.OffsetCommitResponse](w.Conns[i], CommitVersion, req)
		if err != nil {
			return err
		}
		return CheckCommit(req, resp)
	})
}

// CommitResult is what a run of Commits did.
type CommitResult struct {
	Commits int64         // OffsetCommit requests answered without error
	Elapsed time.Duration // from the start until the last committer stopped
	// Latencies are the commits' times from send to answer, as the
	// committers saw them, sorted.
	Latencies []time.Duration
}

// Offsets is the number of offsets committed.
func (r CommitResult) Offsets(partitions int32) int64 { return r.Commits * int64(partitions) }

// Run commits until n commits are made in all (n > 0) or, with n = 0,
// until the time until; the first error stops every committer.
func (w Commits) Run(n int64, until time.Time) (CommitResult, error) {
	var (
		next      atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
		errOnce   sync.Once
		firstErr  error
		latencies = make([][]time.Duration, len(w.Conns))
	)
	more := func() (int64, bool) {
		if stop.Load() {
			return 0, false
		}
		k := next.Add(1)
		if n > 0 {
			return k, k <= n
		}
		return k, time.Now().Before(until)
	}
	t0 := time.Now()
	for i := range w.Conns {
		wg.Go(func() {
			c := w.Conns[i]
			for k, ok := more(); ok; k, ok = more() {
				req := CommitRequest(w.Groups[i], w.Topic, w.Partitions, k)
				sent := time.Now()
				resp, err := Do[*kmsg.OffsetCommitResponse](c, CommitVersion, req)
				if err == nil {
					err = CheckCommit(req, resp)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("committer %d (group %s): %w", i, w.Groups[i], err) })
					stop.Store(true)
					return
				}
				latencies[i] = append(latencies[i], time.Since(sent))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if firstErr != nil {
		return CommitResult{}, firstErr
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	return CommitResult{Commits: int64(len(all)), Elapsed: elapsed, Latencies: all}, nil
}
