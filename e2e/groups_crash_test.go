package e2e

// Committed offsets across consumers and across crashes: a group resumes
// exactly where its members committed, after they leave and after the
// server is killed with SIGKILL, and every acknowledged offset commit
// survives a kill under load.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gaResumeLog is what the consumers of one group have read of a topic:
// per partition the offsets in the order they came.
type gaResumeLog map[int32][]int64

// gaConsume polls cl until it has read at least n records (if n < 0:
// until log holds sum(ends) records), checking that every record's value
// matches its partition and offset, and adds them to log. It returns how
// many it read and, per partition, the next offset after what log held
// before the last poll (0 if nothing).
func gaConsume(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int, ends []int64, log gaResumeLog) (int, []int64) {
	t.Helper()
	var total int64
	for _, e := range ends {
		total += e
	}
	read := 0
	var beforeLast []int64
	for {
		have := int64(0)
		for _, l := range log {
			have += int64(len(l))
		}
		if (n >= 0 && read >= n) || (n < 0 && have >= total) {
			return read, beforeLast
		}
		beforeLast = log.next(len(ends))
		fs := cl.PollRecords(ctx, 25)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: %d records read, %d of %d in all: %v", topic, read, have, total, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consuming %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			if want := fmt.Sprintf("%s/%d/%d", topic, r.Partition, r.Offset); string(r.Value) != want {
				t.Fatalf("record at %s/%d@%d is %q, want %q", r.Topic, r.Partition, r.Offset, r.Value, want)
			}
			log[r.Partition] = append(log[r.Partition], r.Offset)
		})
	}
}

// next is, per partition, one past the last offset read (0 if none).
func (l gaResumeLog) next(partitions int) []int64 {
	out := make([]int64, partitions)
	for p, os := range l {
		if len(os) > 0 {
			out[p] = os[len(os)-1] + 1
		}
	}
	return out
}

// checkFrom fails unless each partition p of l holds exactly the offsets
// from[p], from[p]+1, … (nothing before from[p], nothing twice, no gap).
func (l gaResumeLog) checkFrom(t *testing.T, who string, from []int64) {
	t.Helper()
	for p, os := range l {
		for i, o := range os {
			if want := from[p] + int64(i); o != want {
				t.Fatalf("%s: partition %d: record %d read was offset %d, want %d (resuming from %d): %v", who, p, i, o, want, from[p], os[:min(len(os), 20)])
			}
		}
	}
}

// gaCommitted reads a group's committed offsets of topic, -1 where none.
func gaCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, partitions int) []int64 {
	t.Helper()
	fo, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	if err := fo.Error(); err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := make([]int64, partitions)
	for p := range out {
		out[p] = -1
		if o, ok := fo.Lookup(topic, int32(p)); ok {
			out[p] = o.At
		}
	}
	return out
}

// gaStartAt is where a consumer with no commit starts: the commit, or the
// start of the partition (franz-go's default reset offset).
func gaStartAt(committed []int64) []int64 {
	out := make([]int64, len(committed))
	for p, c := range committed {
		out[p] = max(c, 0)
	}
	return out
}

// TestGroupResume: consumers of one group take turns on a topic. The
// first reads part of it, commits explicitly and leaves (LeaveGroup on
// close); the second resumes at exactly the committed offsets, reads some
// more and leaves with franz-go's commit on close (autocommit); the third
// reads the rest from there. None sees a record before the committed
// offsets, none misses one after. Then the same across a SIGKILL of the
// real binary: a member commits, the server is killed while the member
// is still in the group, and on the restarted server the group comes back
// with its members and offsets (docs/kafka-classic-groups.md §18.3), the
// dead member expires and a new consumer resumes at the commits.
func TestGroupResume(t *testing.T) {
	t.Run("leave", func(t *testing.T) {
		const (
			topic      = "resume"
			group      = "resume-g"
			partitions = 4
			perPart    = 100
		)
		addr := startGroupNode(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cl, adm := gaAdmin(t, addr)
		if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		counts := []int{perPart, perPart, perPart, perPart}
		gaProduce(t, ctx, cl, topic, counts)
		ends := []int64{perPart, perPart, perPart, perPart}
		consumer := func(opts ...kgo.Opt) *kgo.Client {
			c, err := kgo.NewClient(append([]kgo.Opt{
				kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
				kgo.HeartbeatInterval(100 * time.Millisecond),
			}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}

		// First: read part, commit what was read, leave.
		c1 := consumer(kgo.DisableAutoCommit())
		log1 := gaResumeLog{}
		n1, _ := gaConsume(t, ctx, c1, topic, 150, ends, log1)
		log1.checkFrom(t, "first consumer", make([]int64, partitions))
		if err := c1.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		want1 := log1.next(partitions)
		c1.Close()
		got := gaCommitted(t, ctx, adm, group, topic, partitions)
		for p := range partitions {
			if w := want1[p]; (w > 0 && got[p] != w) || (w == 0 && got[p] > 0) {
				t.Fatalf("after the first consumer: committed %v, want %v (what it read)", got, want1)
			}
		}
		if d := gaDescribe(t, ctx, adm, group); d.State != "Empty" || len(d.Members) != 0 {
			t.Fatalf("after the first consumer left: %s, want Empty", gaDescribeString(d, topic))
		}
		t.Logf("first consumer read %d records and committed %v", n1, got)

		// Second: resume there, read some, leave with autocommit's
		// commit on close, which in franz-go covers the records of all
		// polls but the last (those the application may still be
		// processing).
		c2 := consumer(kgo.AutoCommitInterval(time.Hour))
		log2 := gaResumeLog{}
		from2 := gaStartAt(got)
		n2, processed := gaConsume(t, ctx, c2, topic, 100, ends, log2)
		log2.checkFrom(t, "second consumer", from2)
		c2.Close()
		want2 := append([]int64(nil), got...)
		for p, n := range processed {
			if n > 0 {
				want2[p] = n
			}
		}
		got = gaCommitted(t, ctx, adm, group, topic, partitions)
		for p := range partitions {
			if w := want2[p]; (w > 0 && got[p] != w) || (w <= 0 && got[p] > 0) {
				t.Fatalf("after the second consumer: committed %v, want %v (what it had processed)", got, want2)
			}
		}
		t.Logf("second consumer resumed at %v, read %d records and committed %v on close", from2, n2, got)

		// Third: the rest, exactly.
		c3 := consumer(kgo.DisableAutoCommit())
		defer c3.Close()
		log3 := gaResumeLog{}
		from3 := gaStartAt(got)
		var rest []int64
		for p := range partitions {
			rest = append(rest, ends[p]-from3[p])
		}
		_, _ = gaConsume(t, ctx, c3, topic, -1, rest, log3)
		log3.checkFrom(t, "third consumer", from3)
		for p, n := range log3.next(partitions) {
			if n != ends[p] && from3[p] != ends[p] {
				t.Errorf("third consumer: partition %d read up to %d, want the end %d", p, n, ends[p])
			}
		}
	})

	t.Run("sigkill", func(t *testing.T) {
		const (
			topic      = "resume-crash"
			group      = "resume-crash-g"
			partitions = 3
			perPart    = 100
			session    = 3 * time.Second
		)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dir := t.TempDir()
		args := []string{"--group-min-session-timeout", "500ms", "--group-initial-rebalance-delay", "0", "--auto-create-topics=false"}
		proc := testkit.StartBinary(t, dir, args...)
		cl, adm := gaAdmin(t, proc.Addr)
		if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		gaProduce(t, ctx, cl, topic, []int{perPart, perPart, perPart})
		ends := []int64{perPart, perPart, perPart}

		// A member reads part of the topic and commits; the commit is
		// acknowledged. Then the server dies under it.
		c1, err := kgo.NewClient(kgo.SeedBrokers(proc.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.SessionTimeout(session), kgo.HeartbeatInterval(200*time.Millisecond), kgo.ClientID("resume-crash-c1"))
		if err != nil {
			t.Fatal(err)
		}
		log1 := gaResumeLog{}
		_, _ = gaConsume(t, ctx, c1, topic, 120, ends, log1)
		log1.checkFrom(t, "consumer before the kill", make([]int64, partitions))
		if err := c1.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		memberID, gen := c1.GroupMetadata()
		committed := gaCommitted(t, ctx, adm, group, topic, partitions)
		want := log1.next(partitions)
		for p := range partitions {
			if w := want[p]; (w > 0 && committed[p] != w) || (w == 0 && committed[p] > 0) {
				t.Fatalf("committed %v, want %v (what was read)", committed, want)
			}
		}
		proc.Kill()
		// The member never hears of it: it is closed without reaching
		// anything (a cancelled leave), as if its process died too.
		dead, deadCancel := context.WithCancel(ctx)
		deadCancel()
		c1.LeaveGroupContext(dead)
		c1.Close()

		proc = testkit.StartBinary(t, dir, args...)
		restarted := time.Now()
		_, adm = gaAdmin(t, proc.Addr)
		if got := gaCommitted(t, ctx, adm, group, topic, partitions); fmt.Sprint(got) != fmt.Sprint(committed) {
			t.Fatalf("after the restart the group's offsets are %v, want the acknowledged %v", got, committed)
		}
		if d := gaDescribe(t, ctx, adm, group); time.Since(restarted) < session && (d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != memberID) {
			t.Errorf("after the restart: %s, want the group Stable with its member %s until that member's session expires", gaDescribeString(d, topic), memberID)
		}

		c2, err := kgo.NewClient(kgo.SeedBrokers(proc.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond), kgo.HeartbeatInterval(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		log2 := gaResumeLog{}
		from := gaStartAt(committed)
		var rest []int64
		for p := range partitions {
			rest = append(rest, ends[p]-from[p])
		}
		_, _ = gaConsume(t, ctx, c2, topic, -1, rest, log2)
		log2.checkFrom(t, "consumer after the restart", from)
		if _, gen2 := c2.GroupMetadata(); gen2 <= gen {
			t.Errorf("after the restart the new member is in generation %d, not past the %d before the kill", gen2, gen)
		}
		if d := gaDescribe(t, ctx, adm, group); len(d.Members) != 1 || d.Members[0].MemberID == memberID {
			t.Errorf("after resuming: %s, want only the new member (%s expired)", gaDescribeString(d, topic), memberID)
		}
		t.Logf("resumed at %v after the restart; the dead member expired and the new one joined %v after it",
			from, time.Since(restarted).Round(time.Millisecond))
	})
}

// gaCommitWorker commits ever larger offsets to its partitions of one
// simple group over its own connection, several requests in flight.
type gaCommitWorker struct {
	id      int
	group   string
	parts   []int32
	version int16

	mu       sync.Mutex
	acked    int64 // the last acknowledged value, -1 if none
	sent     int64 // the last value sent
	inFlight int   // requests sent and not answered on this connection
	ended    int   // connections ended
	failures []string
}

// metadata is what a worker commits with value v: offset v and metadata
// naming the worker and v, so a read-back shows both came from one commit.
func (w *gaCommitWorker) metadata(v int64) string { return fmt.Sprintf("w%d/%d", w.id, v) }

func (w *gaCommitWorker) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.failures) < 5 {
		w.failures = append(w.failures, fmt.Sprintf(format, args...))
	}
}

// run commits until stop is closed, then waits for the answers to what
// it sent. A broken connection (the server was killed) leaves what was
// in flight unacknowledged; it redials, the proxy holding it until the
// next server is up.
func (w *gaCommitWorker) run(addr, topic string, depth int, stop <-chan struct{}, acked *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := gaDial(addr, fmt.Sprintf("commit-w%d", w.id))
		if err != nil {
			w.fail("dial: %v", err)
			return
		}
		done := w.session(c, topic, depth, stop, acked)
		c.nc.Close()
		if done {
			return
		}
	}
}

// session runs one connection; it returns true when stopped and drained.
func (w *gaCommitWorker) session(c *gaConn, topic string, depth int, stop <-chan struct{}, acked *atomic.Int64) bool {
	type pending struct {
		req   *kmsg.OffsetCommitRequest
		corr  int32
		value int64
	}
	var queue []pending
	defer func() {
		w.mu.Lock()
		w.inFlight = 0
		w.ended++
		w.mu.Unlock()
	}()
	stopped := false
	for {
		if !stopped {
			select {
			case <-stop:
				stopped = true
			default:
			}
		}
		if stopped && len(queue) == 0 {
			return true
		}
		if !stopped && len(queue) < depth {
			w.mu.Lock()
			w.sent++
			v := w.sent
			w.inFlight++
			w.mu.Unlock()
			req := kmsg.NewPtrOffsetCommitRequest()
			req.SetVersion(w.version)
			req.Group, req.Generation, req.RetentionTimeMillis = w.group, -1, -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for _, p := range w.parts {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.Metadata, rp.Timestamp = p, v, kmsg.StringPtr(w.metadata(v)), -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			corr, err := c.send(req)
			if err != nil {
				return false
			}
			queue = append(queue, pending{req, corr, v})
			continue
		}
		head := queue[0]
		kr, err := c.recv(head.req, head.corr)
		if err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				w.fail("no answer to the commit of %d within %v", head.value, gaIOTimeout)
			}
			return false
		}
		queue = queue[1:]
		resp := kr.(*kmsg.OffsetCommitResponse)
		ok := len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == len(w.parts)
		if ok {
			for i, rp := range resp.Topics[0].Partitions {
				if rp.Partition != w.parts[i] || rp.ErrorCode != 0 {
					ok = false
				}
			}
		}
		w.mu.Lock()
		w.inFlight--
		if ok {
			if head.value <= w.acked {
				w.mu.Unlock()
				w.fail("commit of %d acknowledged after %d", head.value, w.acked)
				return false
			}
			w.acked = head.value
		}
		w.mu.Unlock()
		if !ok {
			w.fail("commit v%d of %d to %s: %s", w.version, head.value, w.group, gaCommitErrs(resp))
			continue
		}
		acked.Add(1)
	}
}

func gaCommitErrs(resp *kmsg.OffsetCommitResponse) string {
	var s []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			s = append(s, fmt.Sprintf("%s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode)))
		}
	}
	return strings.Join(s, ", ")
}

// TestGroupCommitCrash: twenty raw clients commit offsets to five simple
// groups (generation -1, no member id, OffsetCommit v0-v9) as fast as the
// server takes them, each over its own connection with several requests
// in flight, each its own two partitions with an offset that goes up by
// one per commit. The real binary is killed with SIGKILL mid-load five
// times and restarted on the same data dir; a proxy (crash_test.go)
// withholds the server's responses just before each kill, so commits the
// server has written go unacknowledged. After each restart, before the
// clients reach the new server, every partition's committed offset must
// be at least the last value acknowledged for it and at most the last
// value sent (a later commit that was in flight may have been written),
// with the metadata of that same commit. A final kill at rest, with
// nothing in flight, must keep exactly the last acknowledged values.
//
// As with TestCrashAckedRecordsSurvive, SIGKILL kills the process, not the
// machine: what the server wrote is still in the page cache, so this does
// not show that the store fsyncs before a commit is acknowledged. It does
// catch acknowledging a commit before it is written (or written only in
// memory), and recovery that loses or reorders committed offsets.
func TestGroupCommitCrash(t *testing.T) {
	const (
		topic      = "commit-crash"
		groups     = 5
		perGroup   = 4 // workers; each has 2 of the topic's 8 partitions
		depth      = 4 // commits in flight per worker
		rounds     = 5
		perRound   = 3000 // acknowledged commits between kills
		partitions = 2 * perGroup
	)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	px := startProxy(t)
	dir := t.TempDir()
	args := []string{"--advertised-kafka-addr", px.addr(), "--auto-create-topics=false"}
	proc := testkit.StartBinary(t, dir, args...)
	px.up(proc.Addr)
	_, adm := gaAdmin(t, px.addr())
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}

	var (
		workers []*gaCommitWorker
		acked   atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for g := range groups {
		for j := range perGroup {
			w := &gaCommitWorker{
				id:      len(workers),
				group:   fmt.Sprintf("commit-crash-g%d", g),
				parts:   []int32{int32(2 * j), int32(2*j + 1)},
				version: int16(len(workers) % 10), // v0 to v9, two each
				acked:   -1,
			}
			workers = append(workers, w)
		}
	}
	stopOnce := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(func() { stopOnce(); px.close(); wg.Wait() })
	for _, w := range workers {
		wg.Go(func() { w.run(px.addr(), topic, depth, stop, &acked) })
	}
	failures := func() []string {
		var out []string
		for _, w := range workers {
			w.mu.Lock()
			out = append(out, w.failures...)
			w.mu.Unlock()
		}
		return out
	}

	type state struct{ acked, sent int64 }
	snapshot := func() []state {
		out := make([]state, len(workers))
		for i, w := range workers {
			w.mu.Lock()
			out[i] = state{w.acked, w.sent}
			w.mu.Unlock()
		}
		return out
	}
	// check reads every group's offsets from the server at addr itself
	// (the proxy is holding the clients back) and compares them with
	// what the workers had acknowledged and sent. It returns how many
	// partitions hold a value written but never acknowledged.
	check := func(when string, addr string, st []state, exact bool) int {
		t.Helper()
		c := gaMustDial(t, addr, "commit-check")
		unacked := 0
		var bad []string
		for g := range groups {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = fmt.Sprintf("commit-crash-g%d", g)
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = topic
			for p := range int32(partitions) {
				rt.Partitions = append(rt.Partitions, p)
			}
			req.Topics = append(req.Topics, rt)
			resp := gaDo[*kmsg.OffsetFetchResponse](t, c, 7, req)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != partitions {
				t.Fatalf("%s: offset fetch of %s: error %v, %d topics", when, req.Group, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
			}
			for _, rp := range resp.Topics[0].Partitions {
				w := workers[g*perGroup+int(rp.Partition)/2]
				s := st[w.id]
				where := fmt.Sprintf("%s partition %d: committed %d", w.group, rp.Partition, rp.Offset)
				switch {
				case rp.ErrorCode != 0:
					bad = append(bad, fmt.Sprintf("%s partition %d: %v", w.group, rp.Partition, kerr.ErrorForCode(rp.ErrorCode)))
				case rp.Offset < s.acked:
					bad = append(bad, fmt.Sprintf("%s, but %d was acknowledged: an acknowledged commit was lost", where, s.acked))
				case rp.Offset > s.sent:
					bad = append(bad, fmt.Sprintf("%s, but only up to %d was sent", where, s.sent))
				case exact && rp.Offset != s.acked:
					bad = append(bad, fmt.Sprintf("%s, want exactly the last acknowledged %d (nothing was in flight)", where, s.acked))
				case rp.Offset >= 0 && (rp.Metadata == nil || *rp.Metadata != w.metadata(rp.Offset)):
					bad = append(bad, fmt.Sprintf("%s with metadata %v, want %q from the same commit", where, rp.Metadata, w.metadata(rp.Offset)))
				case rp.Offset > s.acked:
					unacked++
				}
			}
		}
		for _, b := range bad[:min(len(bad), 10)] {
			t.Errorf("%s: %s", when, b)
		}
		if len(bad) > 10 {
			t.Errorf("%s: %d partitions wrong in all", when, len(bad))
		}
		return unacked
	}

	var unackedTotal int
	for round := 1; round <= rounds; round++ {
		roundStart := time.Now()
		target := acked.Load() + perRound
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("round %d: %d commits acknowledged", round, target), func() bool {
			return acked.Load() >= target || len(failures()) > 0
		})
		if f := failures(); len(f) > 0 {
			t.Fatalf("round %d: commits failed before the kill: %v", round, f)
		}
		// Withhold responses until every worker has its pipeline full:
		// the commits reach the server, their answers do not reach the
		// workers.
		px.hold()
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("round %d: every worker stalled with commits in flight", round), func() bool {
			for _, w := range workers {
				w.mu.Lock()
				stalled := w.inFlight == depth
				w.mu.Unlock()
				if !stalled {
					return false
				}
			}
			return true
		})
		ended := make([]int, len(workers))
		for i, w := range workers {
			w.mu.Lock()
			ended[i] = w.ended
			w.mu.Unlock()
		}
		px.down()
		proc.Kill()
		// Each worker reads what reached it before the hold, then its
		// connection breaks; only then are its acknowledgements final.
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("round %d: every connection broken by the kill", round), func() bool {
			for i, w := range workers {
				w.mu.Lock()
				e := w.ended
				w.mu.Unlock()
				if e == ended[i] {
					return false
				}
			}
			return true
		})
		st := snapshot()
		ackedAtKill := acked.Load()

		restartAt := time.Now()
		proc = testkit.StartBinary(t, dir, args...)
		restart := time.Since(restartAt)
		unacked := check(fmt.Sprintf("round %d", round), proc.Addr, st, false)
		unackedTotal += unacked
		px.up(proc.Addr)
		t.Logf("round %d: killed after %d acknowledged commits (%v); %d partitions hold a commit written but unacknowledged; restart took %v",
			round, ackedAtKill, time.Since(roundStart).Round(time.Millisecond), unacked, restart.Round(time.Millisecond))
		if t.Failed() {
			t.FailNow()
		}
	}

	// Commit some more on the last server, stop, let everything be
	// answered, and kill at rest: exactly the last acknowledged values.
	target := acked.Load() + perRound/3
	testkit.Eventually(t, 60*time.Second, "commits after the last restart", func() bool {
		return acked.Load() >= target || len(failures()) > 0
	})
	stopOnce()
	wg.Wait()
	if f := failures(); len(f) > 0 {
		t.Fatalf("commits failed: %v", f)
	}
	st := snapshot()
	for i, s := range st {
		if s.acked != s.sent {
			t.Fatalf("worker %d stopped with %d sent and %d acknowledged", i, s.sent, s.acked)
		}
	}
	px.down()
	proc.Kill()
	proc = testkit.StartBinary(t, dir, args...)
	check("killed at rest", proc.Addr, st, true)
	t.Logf("%d commits acknowledged; %d partitions held unacknowledged commits after kills; total %v",
		acked.Load(), unackedTotal, time.Since(start).Round(time.Millisecond))
}
