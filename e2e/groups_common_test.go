package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startGroupNode starts a Cohort node in process for consumer group tests
// and returns its Kafka address. Its group coordinator closes the first
// join of a new group after a 200 ms initial rebalance delay (extended
// while members keep arriving, up to 50 ms apart) rather than Kafka's
// 3 s, and accepts session timeouts down to 100 ms.
func startGroupNode(t *testing.T) string {
	t.Helper()
	n := testkit.StartNode(t, node.Config{Groups: coordinator.Config{
		InitialRebalanceDelay: 200 * time.Millisecond,
		InitialRebalanceQuiet: 50 * time.Millisecond,
		MinSessionTimeout:     100 * time.Millisecond,
	}})
	return n.KafkaAddr()
}

// Sizes and timeouts shared by the consumer group tests.
const (
	groupTestPartitions = 6
	groupTestMembers    = 3

	// groupSessionTimeout and groupHeartbeat are what every member asks
	// for: short, so a lost member would show quickly, yet far above
	// what a loaded machine (-race) needs to heartbeat in time.
	groupSessionTimeout = 6 * time.Second
	groupHeartbeat      = time.Second
	groupRebalance      = 10 * time.Second
	groupCommitInterval = 200 * time.Millisecond

	// groupWait bounds each wait for the group to reach a state: joins,
	// consumption, commits, the group emptying after the members close.
	groupWait = 20 * time.Second
)

// groupCheck follows one classic consumer group of groupTestMembers
// members reading one topic of groupTestPartitions partitions. The
// members, whatever client they use, report to it from their own
// goroutines: what they own after each rebalance, every record they
// consume, the offsets they commit (where the client tells), and any
// error. The test goroutine waits on it for the group's states and
// checks them against what was produced and what the coordinator says.
type groupCheck struct {
	t                  *testing.T
	addr, topic, group string
	adm                *kadm.Client

	want []rec // every record produced, with partition and offset
	ends map[int32]int64

	mu       sync.Mutex
	owned    [groupTestMembers]map[int32]bool
	count    [groupTestMembers]int             // records each member consumed
	seen     map[[2]int64]rec                  // (partition, offset) → first copy consumed
	dups     int                               // records consumed more than once
	commits  [groupTestMembers]map[int32]int64 // highest offset each member reported committed
	stable   bool                              // between the group settling and the members closing
	problems []groupProblem                    // client errors and mismatches
	dropped  int                               // problems beyond the first 100
}

// groupProblem is an error a member's client reported, or a mismatch.
// A rebalance signal outside the stable phase is expected (a member that
// joins after the first generation makes the others rejoin, and members
// closing make the rest rebalance) and only logged; anything else fails
// the test.
type groupProblem struct {
	msg    string
	benign bool
}

// newGroupCheck creates topic with groupTestPartitions partitions on the
// node at addr and returns a check for group reading it.
func newGroupCheck(t *testing.T, addr, topic, group string) *groupCheck {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cohort-e2e-group-check"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	g := &groupCheck{t: t, addr: addr, topic: topic, group: group, adm: kadm.NewClient(cl),
		ends: map[int32]int64{}, seen: map[[2]int64]rec{}}
	for m := range g.owned {
		g.owned[m] = map[int32]bool{}
		g.commits[m] = map[int32]int64{}
	}
	createTopic(t, g.adm, topic, groupTestPartitions)
	return g
}

// createTopic creates topic with the given number of partitions.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupWait)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// produce writes n more records with franz-go, keys hashed over all the
// partitions, and remembers them.
func (g *groupCheck) produce(prefix string, n int) {
	g.t.Helper()
	got := franzProduce(g.t, g.addr, g.topic, makeRecs(prefix, n, time.Now().Add(-time.Hour)))
	g.want = append(g.want, got...)
	for _, r := range got {
		g.ends[r.Partition] = max(g.ends[r.Partition], r.Offset+1)
	}
}

// Reports from the members.

// assigned adds partitions to what member m owns.
func (g *groupCheck) assigned(m int, parts ...int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range parts {
		g.owned[m][p] = true
	}
}

// revoked removes partitions from what member m owns.
func (g *groupCheck) revoked(m int, parts ...int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range parts {
		delete(g.owned[m], p)
	}
}

// setOwned replaces what member m owns.
func (g *groupCheck) setOwned(m int, parts []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.owned[m] = map[int32]bool{}
	for _, p := range parts {
		g.owned[m][p] = true
	}
}

// consumed records that member m got r (partition, offset, key, value).
// A second delivery of an offset must carry the same record.
func (g *groupCheck) consumed(m int, r rec) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.count[m]++
	k := [2]int64{int64(r.Partition), r.Offset}
	if old, ok := g.seen[k]; ok {
		g.dups++
		if !bytes.Equal(old.Key, r.Key) || !bytes.Equal(old.Value, r.Value) {
			g.problems = append(g.problems, groupProblem{msg: fmt.Sprintf("member %d: partition %d offset %d is %q, earlier %q", m, r.Partition, r.Offset, r.Key, old.Key)})
		}
		return
	}
	g.seen[k] = rec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
}

// committed records that member m's client reported offset committed for
// partition p.
func (g *groupCheck) committed(m int, p int32, offset int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.commits[m][p] = max(g.commits[m][p], offset)
}

// problem records an error a member's client reported. rebalance says
// that it is a rebalance signal (REBALANCE_IN_PROGRESS,
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID), which fails the test only while
// the group is stable.
func (g *groupCheck) problem(m int, rebalance bool, format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.problems) < 100 { // a client repeating an error is reported, not hoarded
		g.problems = append(g.problems, groupProblem{
			msg:    fmt.Sprintf("member %d: ", m) + fmt.Sprintf(format, args...),
			benign: rebalance && !g.stable,
		})
	} else {
		g.dropped++
	}
}

// Waits and checks from the test goroutine.

// assignment is each member's sorted partitions.
func (g *groupCheck) assignment() [groupTestMembers][]int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	var a [groupTestMembers][]int32
	for m, o := range g.owned {
		for p := range o {
			a[m] = append(a[m], p)
		}
		slices.Sort(a[m])
	}
	return a
}

// balanced says why a is not the first n members each owning exactly
// groupTestPartitions/n partitions, disjoint and covering the topic, and
// the others none; "" if it is.
func balanced(a [groupTestMembers][]int32, n int) string {
	owner := map[int32]int{}
	for m, ps := range a {
		if want := groupTestPartitions / n; m >= n && len(ps) != 0 || m < n && len(ps) != want {
			return fmt.Sprintf("member %d owns %v; want %d partitions each for the %d members started", m, ps, want, n)
		}
		for _, p := range ps {
			if o, ok := owner[p]; ok {
				return fmt.Sprintf("partition %d owned by members %d and %d", p, o, m)
			}
			if p < 0 || p >= groupTestPartitions {
				return fmt.Sprintf("member %d owns partition %d of %d", m, p, groupTestPartitions)
			}
			owner[p] = m
		}
	}
	return ""
}

// waitBalanced waits until the first n members own a balanced
// assignment and returns it.
func (g *groupCheck) waitBalanced(n int) [groupTestMembers][]int32 {
	g.t.Helper()
	var a [groupTestMembers][]int32
	groupEventually(g.t, groupWait, fmt.Sprintf("a balanced assignment over %d members", n), func() (bool, string) {
		a = g.assignment()
		why := balanced(a, n)
		return why == "", why
	})
	return a
}

// waitDescribed waits until DescribeGroups shows the group Stable, of
// protocol type "consumer" with protocol, and with exactly the first n
// members, owning the assignment a (compared as a set of partition
// lists: the members' client ids differ between clients).
func (g *groupCheck) waitDescribed(protocol string, a [groupTestMembers][]int32, n int) {
	g.t.Helper()
	var want []string
	for _, ps := range a[:n] {
		want = append(want, fmt.Sprint(ps))
	}
	sort.Strings(want)
	groupEventually(g.t, groupWait, "DescribeGroups to show the group stable", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := g.adm.DescribeGroups(ctx, g.group)
		if err != nil {
			return false, err.Error()
		}
		d := ds[g.group]
		var got []string
		for _, mem := range d.Members {
			var ps []int32
			if c, ok := mem.Assigned.AsConsumer(); ok {
				for _, tp := range c.Topics {
					if tp.Topic != g.topic {
						ps = append(ps, -1000) // never matches
					}
					ps = append(ps, tp.Partitions...)
				}
			}
			slices.Sort(ps)
			got = append(got, fmt.Sprint(ps))
		}
		sort.Strings(got)
		return d.Err == nil && d.State == "Stable" && d.ProtocolType == "consumer" && d.Protocol == protocol &&
				slices.Equal(got, want),
			fmt.Sprintf("err %v, state %q, protocol type %q, protocol %q, assignments %v; want Stable, consumer, %q, %v",
				d.Err, d.State, d.ProtocolType, d.Protocol, got, protocol, want)
	})
}

// waitConsumed waits until every produced record has been consumed by
// some member, then checks that nothing else was: no offset that was not
// produced, no record with another key or value than produced; and if
// noDups, no record consumed twice.
func (g *groupCheck) waitConsumed(noDups bool) {
	g.t.Helper()
	groupEventually(g.t, groupWait, "every record consumed", func() (bool, string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		missing := map[int32]int{}
		for _, r := range g.want {
			if _, ok := g.seen[[2]int64{int64(r.Partition), r.Offset}]; !ok {
				missing[r.Partition]++
			}
		}
		return len(missing) == 0, fmt.Sprintf("records missing per partition: %v", missing)
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	want := map[[2]int64]rec{}
	for _, r := range g.want {
		want[[2]int64{int64(r.Partition), r.Offset}] = r
	}
	bad := 0
	for k, r := range g.seen {
		w, ok := want[k]
		if !ok || !bytes.Equal(w.Key, r.Key) || !bytes.Equal(w.Value, r.Value) {
			if bad++; bad <= 5 {
				g.t.Errorf("consumed partition %d offset %d: key %q value %.40q; produced %q %.40q", r.Partition, r.Offset, r.Key, r.Value, w.Key, w.Value)
			}
		}
	}
	if bad > 0 {
		g.t.Errorf("%d records consumed that were not produced", bad)
	}
	g.t.Logf("consumed %d records (per member %v), %d of them again after a rebalance", len(g.seen)+g.dups, g.count, g.dups)
	if g.dups > 0 && noDups {
		g.t.Errorf("%d records consumed twice, by a client that commits all it consumed before giving up a partition", g.dups)
	}
}

// waitCommitted waits until the group's committed offsets (OffsetFetch,
// through kadm) are the end of every partition, which shows that each
// member committed what it consumed from the partitions it owns in a
// (the records produced after the group settled are in every partition,
// so only their owner can have committed past them). If reported is
// true, the members' clients also tell of their commits: it waits too
// for each member to have reported committing the end of each of its
// partitions.
func (g *groupCheck) waitCommitted(a [groupTestMembers][]int32, reported bool) {
	g.t.Helper()
	groupEventually(g.t, groupWait, "committed offsets at the partitions' ends", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := g.adm.FetchOffsets(ctx, g.group)
		if err != nil {
			return false, err.Error()
		}
		var b strings.Builder
		done := true
		for m, ps := range a {
			fmt.Fprintf(&b, " member %d:", m)
			for _, p := range ps {
				o, ok := offs.Lookup(g.topic, p)
				switch {
				case !ok:
					fmt.Fprintf(&b, " p%d none", p)
					done = false
				case o.Err != nil:
					fmt.Fprintf(&b, " p%d %v", p, o.Err)
					done = false
				default:
					fmt.Fprintf(&b, " p%d %d/%d", p, o.At, g.ends[p])
					if o.At > g.ends[p] {
						g.t.Fatalf("partition %d committed at %d, beyond its end %d", p, o.At, g.ends[p])
					}
					done = done && o.At == g.ends[p]
				}
			}
		}
		if reported {
			// A client reports a commit once its response is in, so
			// possibly after OffsetFetch already shows it.
			g.mu.Lock()
			b.WriteString("; reported by the members:")
			for m, ps := range a {
				fmt.Fprintf(&b, " member %d:", m)
				for _, p := range ps {
					fmt.Fprintf(&b, " p%d %d", p, g.commits[m][p])
					done = done && g.commits[m][p] == g.ends[p]
				}
			}
			g.mu.Unlock()
		}
		return done, "committed/end:" + b.String()
	})
}

// waitEmpty waits until DescribeGroups shows the group Empty, as it is
// once every member has left. within is shorter than the session
// timeout, so it is the members' LeaveGroups that empty it, not expiry.
func (g *groupCheck) waitEmpty(within time.Duration) {
	g.t.Helper()
	groupEventually(g.t, within, "the group empty after the members closed", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := g.adm.DescribeGroups(ctx, g.group)
		if err != nil {
			return false, err.Error()
		}
		d := ds[g.group]
		return d.Err == nil && d.State == "Empty" && len(d.Members) == 0,
			fmt.Sprintf("err %v, state %q, %d members", d.Err, d.State, len(d.Members))
	})
}

// setStable marks the start and end of the phase in which the group is
// stable: any client error then is a failure.
func (g *groupCheck) setStable(stable bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stable = stable
}

// reportProblems fails the test with every problem the members reported,
// and logs the expected rebalance signals.
func (g *groupCheck) reportProblems() {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.problems {
		if p.benign {
			g.t.Logf("%s (expected outside the stable phase)", p.msg)
		} else {
			g.t.Error(p.msg)
		}
	}
	if g.dropped > 0 {
		g.t.Errorf("... and %d more problems", g.dropped)
	}
}

// groupMemberFunc starts member m of a group test, consuming until ctx
// is done and reporting to g. It returns a function that waits for the
// member's goroutines and closes its client (leaving the group), with
// any error from closing.
type groupMemberFunc func(ctx context.Context, g *groupCheck, m int) (closeMember func() error)

// groupTestOpts are what runGroupTest checks beyond the common scenario.
type groupTestOpts struct {
	protocol string // the assignment strategy's protocol name, as DescribeGroups shows it

	// commitsReported: the members report their commits (groupCheck.committed).
	commitsReported bool
	// noDups: the members commit everything they consumed before giving
	// a partition up, so that no record may be consumed twice; this
	// holds only if the coordinator accepts (and keeps) commits while
	// the group rebalances.
	noDups bool
}

// runGroupTest is the scenario every client runs against one group:
//
//  1. 600 records are produced over the 6 partitions before any member
//     starts;
//  2. one member starts; eventually it owns all 6 partitions,
//     DescribeGroups shows the group Stable with protocol and that
//     assignment, the member consumes the 600 records and commits them
//     (the group's committed offsets reach the partitions' ends);
//  3. the two other members start together while 300 more records are
//     produced: the Stable group rebalances (for cooperative-sticky twice,
//     the first member revoking 4 partitions in between), and eventually
//     each member owns exactly 2 partitions, disjoint and covering the
//     topic, and DescribeGroups shows the group Stable with those
//     assignments;
//  4. 600 more records are produced while the members consume;
//  5. the members together consume every record produced, and nothing
//     else (and, if noDups, each record once);
//  6. the group's committed offsets reach the end of every partition,
//     each member's partitions committed (and, if commitsReported, each
//     member's client reports having committed them);
//  7. the assignment has not changed since step 3: no rebalance while
//     the group was stable;
//  8. the members close and the group becomes Empty within half a
//     session timeout: they left, rather than being expired.
//
// Client errors fail the test, except rebalance signals outside the
// stable phases (groupProblem).
func runGroupTest(t *testing.T, g *groupCheck, o groupTestOpts, start groupMemberFunc) {
	t.Helper()
	t0 := time.Now()
	since := func() time.Duration { return time.Since(t0).Round(time.Millisecond) }
	g.produce(g.topic+"-before", 600)
	used := map[int32]bool{}
	for _, r := range g.want {
		used[r.Partition] = true
	}
	if len(used) != groupTestPartitions {
		t.Fatalf("records produced to partitions %v, want all %d", used, groupTestPartitions)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	closers := make([]func() error, groupTestMembers)
	closed := false
	defer func() {
		if !closed { // a Fatal on the way: still close the clients
			g.setStable(false)
			cancel()
			g.closeAll(closers, false)
		}
		g.reportProblems()
	}()

	closers[0] = start(ctx, g, 0)
	a := g.waitBalanced(1)
	g.waitDescribed(o.protocol, a, 1)
	g.setStable(true)
	g.waitConsumed(o.noDups)
	g.waitCommitted(a, o.commitsReported)
	t.Logf("%v: one member: owns %v, consumed and committed", since(), a[0])

	g.setStable(false)
	for m := 1; m < groupTestMembers; m++ {
		closers[m] = start(ctx, g, m)
	}
	g.produce(g.topic+"-joining", 300)
	a = g.waitBalanced(groupTestMembers)
	g.waitDescribed(o.protocol, a, groupTestMembers)
	g.setStable(true)
	t.Logf("%v: %d members: balanced %v", since(), groupTestMembers, a)

	g.produce(g.topic+"-during", 600)
	g.waitConsumed(o.noDups)
	g.waitCommitted(a, o.commitsReported)
	t.Logf("%v: consumed and committed", since())
	if now := g.assignment(); fmt.Sprint(now) != fmt.Sprint(a) {
		t.Errorf("assignment changed from %v to %v while the group was stable", a, now)
	}

	g.setStable(false)
	cancel()
	g.closeAll(closers, true)
	closed = true
	g.waitEmpty(groupSessionTimeout / 2)
	t.Logf("%v: closed, group empty", since())
}

// closeAll closes the members concurrently, all within groupWait.
func (g *groupCheck) closeAll(closers []func() error, check bool) {
	g.t.Helper()
	errs := make(chan error, len(closers))
	n := 0
	for _, c := range closers {
		if c == nil {
			continue
		}
		n++
		go func() { errs <- c() }()
	}
	timeout := time.NewTimer(groupWait)
	defer timeout.Stop()
	for range n {
		select {
		case err := <-errs:
			if err != nil && check {
				g.t.Errorf("close member: %v", err)
			}
		case <-timeout.C:
			g.t.Fatalf("members did not close within %v", groupWait)
		}
	}
}

// groupEventually is testkit.Eventually for a condition that also says
// what it saw, so that a timeout reports the last state, not just what
// was awaited.
func groupEventually(t *testing.T, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	var state string
	testkit.Eventually(lastStateTB{t, &state}, timeout, what, func() bool {
		var ok bool
		ok, state = cond()
		return ok
	})
}

// lastStateTB adds the last state a groupEventually condition saw to the
// message with which testkit.Eventually fails.
type lastStateTB struct {
	testing.TB
	state *string
}

func (l lastStateTB) Fatalf(format string, args ...any) {
	l.TB.Helper()
	l.TB.Fatalf(format+"; last seen: %s", append(args, *l.state)...)
}
