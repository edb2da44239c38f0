package bench

// Group coordinator benchmarks: classic-protocol rebalances, simple offset
// commits, heartbeats, and (Cohort only) heap per member and per offset and
// the time to load a node's groups at start-up.
//
// They speak the Kafka protocol through loadgen's raw client
// (4-byte size, request header v1/v2, kmsg bodies, correlation ids), one
// TCP connection per group member, the same client and workloads as the
// out-of-process `cohort bench` command, so that what is timed is the broker and
// the wire, with no client library's retries, backoffs or heartbeat threads
// in the way.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/loadgen"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/internal/memtest"
)

// ---------------------------------------------------------------------------
// Targets

// groupTarget is a broker for the group benchmarks; start returns its
// bootstrap address and registers its shutdown with b.Cleanup.
type groupTarget struct {
	name   string
	cohort bool
	start  func(b *testing.B) string
	// routed: a cluster, where each group's connection must go to its
	// coordinator (FindCoordinator), not to the bootstrap address.
	routed bool
}

func cohortTarget(name string, cfg coordinator.Config) groupTarget {
	return groupTarget{name: name, cohort: true, start: func(b *testing.B) string {
		return startedNode(b, node.Config{Groups: cfg})
	}}
}

// nodes are the nodes the benchmarks started, by Kafka address.
var nodes sync.Map

// startedNode starts a node for b and returns its Kafka address.
func startedNode(b *testing.B, cfg node.Config) string {
	n := testkit.StartNode(b, cfg)
	nodes.Store(n.KafkaAddr(), n)
	b.Cleanup(func() { nodes.Delete(n.KafkaAddr()) })
	return n.KafkaAddr()
}

// connsClosed waits until the node at addr has no Kafka connection open
// and its store's journal has folded the set-up's writes into Pebble: a
// heap measured before the server let go of the set-up's connections
// would count their buffers as the members', and one measured before the
// fold the overlay's copy of the set-up's records (a quiet journal folds
// within a fraction of a second; BENCHMARKS.md says what the overlay
// holds while writes go on).
func connsClosed(b *testing.B, addr string) {
	v, ok := nodes.Load(addr)
	if !ok {
		b.Fatalf("no node started at %s", addr)
	}
	n := v.(*node.Node)
	if !testkit.WaitFor(time.Minute, func() bool { return n.KafkaConns() == 0 }) {
		b.Fatalf("%d connections still open a minute after the set-up closed its own", n.KafkaConns())
	}
	if !testkit.WaitFor(time.Minute, func() bool { return n.StoreUnfolded() == 0 }) {
		b.Fatalf("the store's journal still holds %d unfolded bytes a minute after the set-up", n.StoreUnfolded())
	}
}

// kfakeTarget is a one-broker kfake cluster, in memory or (persist) with a
// data directory, optionally fsyncing every write. Its group coordinator
// has no initial rebalance delay: a member that joins an Empty group
// completes a generation at once, and a later arrival starts another.
func kfakeTarget(name string, persist, fsync bool) groupTarget {
	return groupTarget{name: name, start: func(b *testing.B) string {
		opts := []kfake.Opt{kfake.NumBrokers(1)}
		if persist {
			opts = append(opts, kfake.DataDir(b.TempDir()))
		}
		if fsync {
			opts = append(opts, kfake.SyncWrites())
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			b.Fatalf("kfake: %v", err)
		}
		b.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	}}
}

var (
	// quiet50ms: the initial-rebalance barrier closes at the first 50 ms
	// step with no newcomer in the step before (Kafka's extension rule
	// with 50 ms steps).
	quiet50ms = coordinator.Config{InitialRebalanceDelay: 3 * time.Second, InitialRebalanceQuiet: 50 * time.Millisecond}
	// kafkaDefaults is Kafka's group.initial.rebalance.delay.ms=3000 with
	// no quiet window.
	kafkaDefaults = coordinator.Config{}
)

// createTopics creates each topic with the given number of partitions.
func createTopics(ctx context.Context, b *testing.B, addr string, partitions int32, names ...string) {
	b.Helper()
	if err := loadgen.CreateTopics(ctx, []string{addr}, partitions, names...); err != nil {
		b.Fatal(err)
	}
}

// dialAll opens n raw connections.
func dialAll(b *testing.B, addr string, n int, clientID string) []*loadgen.Conn {
	b.Helper()
	conns, err := loadgen.DialN(addr, n, clientID)
	if err != nil {
		b.Fatal(err)
	}
	return conns
}

// ---------------------------------------------------------------------------
// BenchmarkRebalance

// rebalanceTargets are the brokers BenchmarkRebalance compares: Cohort
// with a 50 ms quiet window, Cohort with Kafka's plain 3 s initial delay,
// and kfake.
var rebalanceTargets = []groupTarget{
	cohortTarget("cohort-quiet50ms", quiet50ms),
	cohortTarget("cohort-kafkadefaults", kafkaDefaults),
	kfakeTarget("kfake", false, false),
}

const (
	rebalanceTopic      = "rebalance"
	rebalancePartitions = 1000
)

// BenchmarkRebalance times N members forming a group from nothing: N raw
// members, one connection each (dialled before the timer starts), all send
// JoinGroup v9 at once to a fresh group (protocol type "consumer", one
// protocol "range" subscribed to a 1,000-partition topic); they rejoin on
// MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and
// UNKNOWN_MEMBER_ID; the leader computes a range assignment and every
// member sends SyncGroup v5; members with an assignment heartbeat every 3 s
// (Kafka's default interval), which is how they learn of a later
// generation. The timer stops once every member has its SyncGroup answer
// for the same generation. Session timeout 30 s, rebalance timeout 60 s.
//
// Metrics: ms/rebalance (the mean), median-ms and max-ms over the
// iterations, generations (the final generation number, that is how many
// generations the group went through) and joins/member (JoinGroup
// requests per member, MEMBER_ID_REQUIRED round included).
//
// Two behaviours show here. Kafka's initial delay is extended by another
// delay whenever a member arrived during the last one, so a fleet that
// arrives at once waits two delays: 6 s with Kafka's defaults, and with
// Cohort's 50 ms quiet window two 50 ms steps. kfake has no initial delay:
// the first member to join forms generation 1 on its own and each later
// arrival forces another rebalance; when one starts after the group went
// Stable, the members already in it only learn of it at their next
// heartbeat (3 s), so kfake's times are bimodal: a few ms, or about 3 s.
func BenchmarkRebalance(b *testing.B) {
	for _, n := range []int{10, 100, 500} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			for _, tg := range rebalanceTargets {
				b.Run(tg.name, func(b *testing.B) {
					benchRebalance(b, tg, n)
				})
			}
		})
	}
}

func benchRebalance(b *testing.B, tg groupTarget, n int) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, rebalancePartitions, rebalanceTopic)

	var (
		iter             int
		times            []time.Duration
		gens, joins      float64
		leaveErrReported bool
	)
	for b.Loop() {
		b.StopTimer()
		iter++
		conns := dialAll(b, addr, n, "bench-rebalance")
		r := loadgen.NewRebalance(loadgen.RebalanceParams{
			Group:          fmt.Sprintf("rebalance-%d-%d", n, iter),
			Topic:          rebalanceTopic,
			Partitions:     rebalancePartitions,
			Session:        30 * time.Second,
			Rebalance:      60 * time.Second,
			HeartbeatEvery: loadgen.MemberHeartbeat,
			Deadline:       5 * time.Minute,
		}, conns)
		b.StartTimer()
		res, err := r.Run()
		b.StopTimer()
		if err != nil {
			loadgen.CloseAll(conns)
			b.Fatal(err)
		}
		times = append(times, res.Synced)
		gens += float64(r.FinalGen())
		joins += float64(r.Joins()) / float64(n)
		if err := r.LeaveAll(); err != nil && !leaveErrReported {
			leaveErrReported = true
			b.Logf("leaving group %s (untimed cleanup): %v", r.Group(), err)
		}
		loadgen.CloseAll(conns)
		b.StartTimer()
	}
	var total time.Duration
	for _, t := range times {
		total += t
	}
	slices.Sort(times)
	b.ReportMetric(ms(total)/float64(b.N), "ms/rebalance")
	b.ReportMetric(ms(loadgen.Percentile(times, 0.5)), "median-ms")
	b.ReportMetric(ms(times[len(times)-1]), "max-ms")
	b.ReportMetric(gens/float64(b.N), "generations")
	b.ReportMetric(joins/float64(b.N), "joins/member")
}

// ---------------------------------------------------------------------------
// BenchmarkCommit

var commitTargets = []groupTarget{
	cohortTarget("cohort", coordinator.Config{}),
	// Without __consumer_offsets: what the topic costs the commit path.
	cohortTarget("cohort-no-cof", coordinator.Config{NoOffsetsTopic: true}),
	kfakeTarget("kfake", false, false),
	kfakeTarget("kfake-fsync", true, true),
}

const (
	commitTopic         = "commits"
	commitPartitions    = 10
	commitsPerPartition = 10 // partitions in every OffsetCommit
)

// BenchmarkCommit times simple offset commits: that many committers, each
// with its own connection and its own group, commit in a closed loop
// (OffsetCommit v8, generation -1, empty member id, 10 partitions of an
// existing topic per request) until b.N commits are done. One op is one
// OffsetCommit. The first commit of every group (which creates it) is made
// before the timer starts.
//
// Targets: Cohort (which makes every commit durable, fsync, before it
// answers), kfake in memory, and kfake with DataDir and SyncWrites (an
// fsync of its groups log per commit).
//
// Metrics: offsets/s, p50-ms and p99-ms (per OffsetCommit, as a committer
// sees it), cpu-us/commit, the process's CPU time (node and committers)
// per OffsetCommit, and cpu-ns/offset, the same per offset. On a shared
// machine the rate swings with what else runs; the CPU per operation much
// less, so it is the figure to compare two builds or configurations by.
func BenchmarkCommit(b *testing.B) {
	for _, committers := range []int{64, 1000} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			for _, tg := range commitTargets {
				b.Run(tg.name, func(b *testing.B) {
					benchCommit(b, tg, committers)
				})
			}
		})
	}
}

func benchCommit(b *testing.B, tg groupTarget, committers int) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, commitPartitions, commitTopic)
	groups := make([]string, committers)
	for i := range groups {
		groups[i] = fmt.Sprintf("commit-%d", i)
	}
	addrs := slices.Repeat([]string{addr}, committers)
	if tg.routed {
		addrs = coordinatorAddrs(b, addr, groups)
		waitTopicEverywhere(b, addrs, commitTopic)
	}
	conns := make([]*loadgen.Conn, committers)
	defer loadgen.CloseAll(conns)
	for i := range conns {
		c, err := loadgen.Dial(addrs[i], "bench-commit")
		if err != nil {
			b.Fatalf("dial %s: %v", addrs[i], err)
		}
		conns[i] = c
	}
	w := loadgen.Commits{Conns: conns, Groups: groups, Topic: commitTopic, Partitions: commitsPerPartition}
	if err := w.Warm(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := startCPU()
	res, err := w.Run(int64(b.N), time.Time{})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	all := res.Latencies
	b.ReportMetric(float64(b.N*commitsPerPartition)/b.Elapsed().Seconds(), "offsets/s")
	perCommit := cpu.perOp(b.N)
	b.ReportMetric(perCommit, "cpu-us/commit")
	b.ReportMetric(perCommit*1000/commitsPerPartition, "cpu-ns/offset")
	b.ReportMetric(ms(loadgen.Percentile(all, 0.50)), "p50-ms")
	b.ReportMetric(ms(loadgen.Percentile(all, 0.99)), "p99-ms")
}

// cpuClock reads this process's CPU time (user and system, every
// thread): the node's and the clients', which share the process. On a
// machine shared with other work it moves much less than throughput does,
// so that it shows what a change costs where rates only show the noise.
type cpuClock struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{processCPU()} }

// perOp returns the CPU time since start over n operations, in µs.
func (c cpuClock) perOp(n int) float64 {
	return float64((processCPU() - c.start).Nanoseconds()) / 1000 / float64(max(n, 1))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ---------------------------------------------------------------------------
// BenchmarkHeartbeat

var heartbeatTargets = []groupTarget{
	cohortTarget("cohort", quiet50ms),
	kfakeTarget("kfake", false, false),
}

const (
	hbGroups          = 100
	hbMembersPerGroup = 100
	hbMembers         = hbGroups * hbMembersPerGroup
	hbJoinParallel    = 20  // groups joining at the same time in set-up
	hbConns           = 250 // heartbeating connections
	hbDepth           = 8   // heartbeats in flight per connection
	hbTopic           = "heartbeat"
	hbPartitions      = 100
)

// BenchmarkHeartbeat times heartbeats of 10,000 stable members: 100
// groups of 100 members join in set-up (one connection per member, up to
// 20 groups at a time, session timeout 5 min so that no member expires
// during the run; those connections are then closed, which does not end a
// member), then 250 connections each heartbeat for 40 of the members with
// up to 8 Heartbeat v4 requests in flight. One op is one heartbeat from
// every member (10,000 heartbeats); every answer must be NONE.
//
// Metrics: heartbeats/s, cpu-us/heartbeat (the process's CPU time, node
// and clients, per heartbeat), and for Cohort the Go heap per member
// (runtime.MemStats.HeapAlloc after runtime.GC(), after the joins less
// before them, less the bytes of the member ids this benchmark keeps, over
// 10,000), in this process, which holds both the node and the clients.
func BenchmarkHeartbeat(b *testing.B) {
	b.Run(fmt.Sprintf("members=%d", hbMembers), func(b *testing.B) {
		for _, tg := range heartbeatTargets {
			b.Run(tg.name, func(b *testing.B) {
				benchHeartbeat(b, tg)
			})
		}
	})
}

func benchHeartbeat(b *testing.B, tg groupTarget) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, hbPartitions, hbTopic)

	var perMember float64
	t0 := time.Now()
	if tg.cohort {
		warmGoroutines(3 * hbMembers)
	}
	before := memtest.HeapAlloc()
	members, err := loadgen.JoinGroups(slices.Repeat([]string{addr}, hbGroups), "bench-heartbeat", loadgen.RebalanceParams{
		Topic:          hbTopic,
		Partitions:     hbPartitions,
		Session:        5 * time.Minute,
		Rebalance:      60 * time.Second,
		HeartbeatEvery: loadgen.MemberHeartbeat,
		Deadline:       5 * time.Minute,
	}, hbMembersPerGroup, hbJoinParallel, func(g int) string { return fmt.Sprintf("heartbeat-%d", g) })
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d members joined %d groups in %v (untimed set-up)", len(members), hbGroups, time.Since(t0).Round(time.Millisecond))
	if tg.cohort {
		connsClosed(b, addr)
		after := memtest.HeapAlloc()
		writeHeapProfile(b)
		// What this benchmark keeps: the member ids and the slice of
		// members (made after before).
		idBytes := cap(members) * int(unsafe.Sizeof(loadgen.Member{}))
		for _, m := range members {
			idBytes += len(m.ID)
		}
		perMember = (float64(after) - float64(before) - float64(idBytes)) / hbMembers
	}

	heartbeatRounds(b, addr, members, func(c *loadgen.Conn, ms []loadgen.Member, depth int) error {
		return loadgen.Heartbeats(c, ms, depth, nil)
	})
	if tg.cohort {
		// After the loop: b.Loop's reset deletes metrics reported before.
		b.ReportMetric(perMember, "heap-B/member")
	}
}

// heartbeatRounds times rounds of one heartbeat from every member, sent
// by beat over hbConns connections (hbDepth in flight each), after one
// untimed round that checks every member is still there; it reports
// heartbeats/s.
func heartbeatRounds[T any](b *testing.B, addr string, members []T, beat func(*loadgen.Conn, []T, int) error) {
	conns := dialAll(b, addr, hbConns, "bench-heartbeat")
	defer loadgen.CloseAll(conns)
	round := func() error {
		return loadgen.Parallel(hbConns, hbConns, func(c int) error {
			return beat(conns[c], loadgen.Every(members, c, hbConns), hbDepth)
		})
	}
	if err := round(); err != nil {
		b.Fatalf("first heartbeat of every member (untimed): %v", err)
	}
	cpu := startCPU()
	for b.Loop() {
		if err := round(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(members))/b.Elapsed().Seconds(), "heartbeats/s")
	b.ReportMetric(cpu.perOp(b.N*len(members)), "cpu-us/heartbeat")
}

// warmGoroutines starts n goroutines and lets them end. The runtime keeps
// the descriptor of every goroutine that ever ran (about 400 B of heap
// each) for reuse and never frees it: a set-up that dials a connection
// per member (two server goroutines each) would otherwise count those of
// connections long closed as the members' heap. Made before the first
// measurement, they are reused, not new.
func warmGoroutines(n int) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range n {
		wg.Go(func() { <-release })
	}
	close(release)
	wg.Wait()
}

// writeHeapProfile writes the live heap's profile to the file
// $COHORT_BENCH_HEAPPROFILE names, if set: what a benchmark's heap per
// member is made of (go tool pprof -sample_index=inuse_space). Set
// GODEBUG=memprofilerate=4096 or so for a fine-grained one.
func writeHeapProfile(b *testing.B) {
	path := os.Getenv("COHORT_BENCH_HEAPPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// BenchmarkOffsetMemory

const (
	memTopic        = "offsets"
	memPartitions   = 100
	memGroupsPerOp  = 2000 // x 100 partitions = 200,000 offsets per op
	memOffsetsPerOp = memGroupsPerOp * memPartitions
	memCommitConns  = 16
)

// BenchmarkOffsetMemory (Cohort only) measures the Go heap each committed
// offset costs the node: one op commits 200,000 new offsets (2,000 fresh
// groups, each one simple OffsetCommit of all 100 partitions of a topic,
// over 16 connections). After the loop the connections are closed and,
// once the node has let them go and its store's journal has folded the
// writes into Pebble (connsClosed), the heap (HeapAlloc after
// runtime.GC()) is compared with before the first op. The node is in this
// process; nothing else in it holds on to the offsets.
//
// Metrics: heap-B/offset; ns/op is the time to commit 200,000 offsets.
// Measured with __consumer_offsets (cohort), whose partitions keep every
// live record's key and value, and without it (cohort-no-cof).
func BenchmarkOffsetMemory(b *testing.B) {
	for _, tg := range []groupTarget{
		cohortTarget("cohort", coordinator.Config{}),
		cohortTarget("cohort-no-cof", coordinator.Config{NoOffsetsTopic: true}),
	} {
		b.Run(tg.name, func(b *testing.B) { benchOffsetMemory(b, tg) })
	}
}

func benchOffsetMemory(b *testing.B, tg groupTarget) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, memPartitions, memTopic)
	// One commit untimed, so that topic lookups and the first group's
	// shard are warm before the heap is measured. Its connection is
	// closed, and the heap is measured with no connection open before
	// and after: the figure is what the offsets hold, not what
	// connections happen to hold at either moment (before Cohort's
	// connections released their buffers when idle, a connection's
	// buffers counted in the "before" and not in the "after", which
	// made the figure about 9 B lower).
	warm := dialAll(b, addr, 1, "bench-offsets-warmup")
	if err := commitAll(warm, []string{"offsets-warmup"}, []string{memTopic}, memPartitions, 1); err != nil {
		b.Fatal(err)
	}
	loadgen.CloseAll(warm)
	connsClosed(b, addr)
	before := memtest.HeapAlloc()
	conns := dialAll(b, addr, memCommitConns, "bench-offsets")
	op := 0
	for b.Loop() {
		op++
		groups := make([]string, memGroupsPerOp)
		for i := range groups {
			groups[i] = fmt.Sprintf("offsets-%d-%d", op, i)
		}
		if err := commitAll(conns, groups, []string{memTopic}, memPartitions, int64(op)); err != nil {
			b.Fatal(err)
		}
	}
	loadgen.CloseAll(conns)
	connsClosed(b, addr)
	after := memtest.HeapAlloc()
	b.ReportMetric((float64(after)-float64(before))/float64(b.N*memOffsetsPerOp), "heap-B/offset")
}

// simpleCommit is a simple group's OffsetCommit (no member, generation
// -1) of partitions 0..n-1 of every topic, partition p at offset+p.
func simpleCommit(group string, topics []string, n int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	for _, topic := range topics {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = topic
		for p := range n {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, offset+int64(p)
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

// commitAll makes one simple OffsetCommit per group, of partitions 0..n-1
// of every topic, at offset, spread over conns.
func commitAll(conns []*loadgen.Conn, groups, topics []string, n int32, offset int64) error {
	var next atomic.Int64
	return loadgen.Parallel(len(conns), len(conns), func(c int) error {
		for i := int(next.Add(1)) - 1; i < len(groups); i = int(next.Add(1)) - 1 {
			req := simpleCommit(groups[i], topics, n, offset)
			resp, err := loadgen.Do[*kmsg.OffsetCommitResponse](conns[c], loadgen.CommitVersion, req)
			if err != nil {
				return fmt.Errorf("group %s: %w", groups[i], err)
			}
			if err := loadgen.CheckCommit(req, resp); err != nil {
				return fmt.Errorf("group %s: %w", groups[i], err)
			}
		}
		return nil
	})
}

// ---------------------------------------------------------------------------
// BenchmarkLoad

const (
	loadGroups      = 10000
	loadTopics      = 10
	loadPartitions  = 10 // per topic: every group commits 10 x 10 = 100 offsets
	loadOffsets     = loadGroups * loadTopics * loadPartitions
	loadCommitConns = 32
)

// BenchmarkLoad (Cohort only) times a node starting on a data directory
// that holds 1,000,000 committed offsets: 10,000 groups, each with one
// simple OffsetCommit of 10 partitions of each of 10 topics (made over 32
// connections in set-up). The node is shut down (Node.Shutdown) and one op
// is node.Start on the same data directory (which returns once the
// coordinator has loaded) and an OffsetFetch of one group that must
// return all its 100 offsets; the shutdown after it is not timed.
//
// Metrics: s/start (until node.Start returns), s/ready (until that
// OffsetFetch answers with the offsets, retrying while the coordinator
// says it is loading; this is ns/op).
func BenchmarkLoad(b *testing.B) {
	for _, v := range []struct {
		name string
		cfg  coordinator.Config
	}{
		{"cohort", coordinator.Config{}},
		// Without __consumer_offsets, whose partitions copy every record
		// the load finds.
		{"cohort-no-cof", coordinator.Config{NoOffsetsTopic: true}},
	} {
		b.Run(v.name, func(b *testing.B) { benchLoad(b, v.cfg) })
	}
}

func benchLoad(b *testing.B, groupsCfg coordinator.Config) {
	ctx := benchContext(b)
	cfg := node.Config{
		KafkaListen: "127.0.0.1:0",
		DataDir:     b.TempDir(),
		Logger:      slog.New(slog.DiscardHandler),
		Groups:      groupsCfg,
	}
	nd, err := node.Start(cfg)
	if err != nil {
		b.Fatalf("start node: %v", err)
	}
	stop := func(n *node.Node) {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := n.Shutdown(sctx); err != nil {
			b.Fatalf("shutdown node: %v", err)
		}
	}
	topics := make([]string, loadTopics)
	for i := range topics {
		topics[i] = fmt.Sprintf("load-%d", i)
	}
	createTopics(ctx, b, nd.KafkaAddr(), loadPartitions, topics...)
	groups := make([]string, loadGroups)
	for i := range groups {
		groups[i] = fmt.Sprintf("load-group-%d", i)
	}
	conns := dialAll(b, nd.KafkaAddr(), loadCommitConns, "bench-load")
	t0 := time.Now()
	err = commitAll(conns, groups, topics, loadPartitions, 1000)
	loadgen.CloseAll(conns)
	if err != nil {
		stop(nd)
		b.Fatal(err)
	}
	b.Logf("committed %d offsets in %d groups in %v (untimed set-up)", loadOffsets, loadGroups, time.Since(t0).Round(time.Millisecond))
	stop(nd)

	var startTotal, readyTotal time.Duration
	probe := groups[loadGroups-1]
	for b.Loop() {
		t0 := time.Now()
		nd, err := node.Start(cfg)
		if err != nil {
			b.Fatalf("restart node: %v", err)
		}
		started := time.Since(t0)
		err = fetchUntilLoaded(nd.KafkaAddr(), probe, topics, loadPartitions, 1000)
		ready := time.Since(t0)
		b.StopTimer()
		stop(nd)
		if err != nil {
			b.Fatal(err)
		}
		startTotal += started
		readyTotal += ready
		b.StartTimer()
	}
	b.ReportMetric(startTotal.Seconds()/float64(b.N), "s/start")
	b.ReportMetric(readyTotal.Seconds()/float64(b.N), "s/ready")
}

// fetchUntilLoaded fetches group's committed offsets (OffsetFetch v8)
// until the coordinator stops saying it is loading, and checks them.
func fetchUntilLoaded(addr, group string, topics []string, partitions int32, offset int64) error {
	c, err := loadgen.Dial(addr, "bench-load")
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		for _, topic := range topics {
			t := kmsg.NewOffsetFetchRequestGroupTopic()
			t.Topic = topic
			for p := range partitions {
				t.Partitions = append(t.Partitions, p)
			}
			rg.Topics = append(rg.Topics, t)
		}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		resp, err := loadgen.Do[*kmsg.OffsetFetchResponse](c, loadgen.FetchVersion, req)
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 {
			return fmt.Errorf("OffsetFetch: %d groups in the answer, want 1", len(resp.Groups))
		}
		g := resp.Groups[0]
		switch g.ErrorCode {
		case 0:
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
			if time.Now().After(deadline) {
				return fmt.Errorf("OffsetFetch %s: still %v after 2 minutes", group, kerr.ErrorForCode(g.ErrorCode))
			}
			time.Sleep(time.Millisecond)
			continue
		default:
			return fmt.Errorf("OffsetFetch %s: %w", group, kerr.ErrorForCode(g.ErrorCode))
		}
		n := 0
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("OffsetFetch %s %s %d: %w", group, t.Topic, p.Partition, err)
				}
				if want := offset + int64(p.Partition); p.Offset != want {
					return fmt.Errorf("OffsetFetch %s %s %d: offset %d, want %d (the node did not load its groups)", group, t.Topic, p.Partition, p.Offset, want)
				}
				n++
			}
		}
		if want := len(topics) * int(partitions); n != want {
			return fmt.Errorf("OffsetFetch %s: %d partitions, want %d", group, n, want)
		}
		return nil
	}
}
