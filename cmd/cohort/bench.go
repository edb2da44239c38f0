package main

// cohort bench: an out-of-process load generator for group coordinators
// (issue 17). It drives Cohort, kfake or any Kafka-compatible broker with
// loadgen's raw clients, the same code as the in-process
// benchmarks in bench/, so that a broker can be measured from its own
// process, over its own connections, with the client's scheduling apart
// from the broker's.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cohort-dev/cohort/loadgen"
)

const benchUsage = `Usage: cohort bench <workload> [flags]

Load generator for group coordinators over the Kafka protocol, with raw
clients (one TCP connection per committer or member, no client library's
retries or heartbeat threads): works against Cohort, kfake and any
Kafka-compatible broker. It creates the topics it needs.

Workloads:
  commits      simple OffsetCommits in a closed loop: offsets/s, p50, p99
  join         members joining one group at once: generations, time until
               all joined, time until the last SyncGroup answer
  heartbeats   Heartbeats of stable members: heartbeats/s, p50, p99

Common flags (also from COHORT_BROKERS, COHORT_FORMAT, COHORT_TIMEOUT):
  --brokers host:port,...  seed brokers (default 127.0.0.1:9092)
  --format text|json       output format (default text)
  --timeout 5m             give up on the whole run after this long

Run 'cohort bench <workload> --help' for a workload's flags.
`

// benchEnv is what every workload runs with: the parsed common flags.
type benchEnv struct {
	brokers []string
	json    bool
	timeout time.Duration
	// runID makes the default group names of one run unique, so that a
	// run never meets the groups of an earlier one on the same broker.
	runID string
	out   io.Writer
}

// benchWorkload is one `cohort bench` workload: its flags, and what it
// does once they are parsed.
type benchWorkload struct {
	about string
	flags func(fs *flag.FlagSet) func(context.Context, *benchEnv) error
}

var benchWorkloads = map[string]benchWorkload{
	"commits":    {"Commits offsets in a closed loop: each committer has its own connection and group and sends one simple OffsetCommit (generation -1) at a time; after one untimed commit per group, reports offsets/s and the p50 and p99 of the OffsetCommit round trip.", commitsFlags},
	"join":       {"Starts that many members (one connection each) joining one fresh group at once (JoinGroup, the leader's range assignment, SyncGroup, heartbeats every 3s until all are synced); reports how many generations the members were answered for, the time until the final generation's last JoinGroup answer and until its last SyncGroup answer.", joinFlags},
	"heartbeats": {"Joins members into groups (untimed, 20 groups at a time), classic members or, with --protocol consumer, KIP-848 ones, then heartbeats for all of them over a pool of connections with requests pipelined; reports heartbeats/s and the p50 and p99 of the heartbeat round trip.", heartbeatsFlags},
}

func bench(args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand("cohort bench", benchUsage, args, func(a string) bool { _, ok := benchWorkloads[a]; return ok }, stdout, stderr); !ok {
		return code
	}
	w := benchWorkloads[args[0]]
	name := "cohort bench " + args[0]
	env := &benchEnv{out: stdout, runID: fmt.Sprintf("%x", time.Now().UnixNano())}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var brokers, format string
	brokerFlags(fs, &brokers, &format)
	fs.DurationVar(&env.timeout, "timeout", 5*time.Minute, "give up on the whole run after this long")
	do := w.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s [flags]\n\n%s\nEvery flag can also be set by an environment variable, COHORT_<FLAG_IN_CAPS>\n(e.g. COHORT_BROKERS); a flag on the command line wins.\n\nFlags:\n", name, w.about)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: "+format+"\n", append([]any{name}, a...)...)
		return 2
	}
	if format != "text" && format != "json" {
		return usageErr("--format must be text or json, not %q", format)
	}
	if env.timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	env.json = format == "json"
	if env.brokers = splitBrokers(brokers); len(env.brokers) == 0 {
		return usageErr("--brokers is empty")
	}
	ctx, cancel := context.WithTimeout(context.Background(), env.timeout)
	defer cancel()
	if err := do(ctx, env); err != nil {
		if ue, ok := err.(usageError); ok {
			return usageErr("%s", ue)
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// print writes v as JSON, or the table rows (a header and one row) as
// text.
func (e *benchEnv) print(v any, header []string, row []string) error {
	if e.json {
		enc := json.NewEncoder(e.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	return tw.Flush()
}

// dialCoordinators opens one connection per group to that group's
// coordinator.
func (e *benchEnv) dialCoordinators(ctx context.Context, groups []string, clientID string) ([]*loadgen.Conn, error) {
	addrs, err := loadgen.Coordinators(ctx, e.brokers, groups)
	if err != nil {
		return nil, err
	}
	conns := make([]*loadgen.Conn, len(groups))
	for i, a := range addrs {
		c, err := loadgen.Dial(a, clientID)
		if err != nil {
			loadgen.CloseAll(conns)
			return nil, fmt.Errorf("dial %s: %w", a, err)
		}
		conns[i] = c
	}
	return conns, nil
}

// fmtMs is a duration in milliseconds with three decimals.
func fmtMs(d time.Duration) string { return fmt.Sprintf("%.3f", msOf(d)) }

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ---------------------------------------------------------------------------
// commits

// commitsResult is the JSON output of `cohort bench commits`.
type commitsResult struct {
	Workload            string  `json:"workload"`
	Committers          int     `json:"committers"`
	PartitionsPerCommit int32   `json:"partitions_per_commit"`
	Topic               string  `json:"topic"`
	Seconds             float64 `json:"seconds"` // the timed run, measured
	Commits             int64   `json:"commits"`
	Offsets             int64   `json:"offsets"`
	OffsetsPerSec       float64 `json:"offsets_per_s"`
	P50Ms               float64 `json:"p50_ms"`
	P99Ms               float64 `json:"p99_ms"`
}

func commitsFlags(fs *flag.FlagSet) func(context.Context, *benchEnv) error {
	committers := fs.Int("committers", 64, "committers, each with its own connection and group (1 to 100000)")
	parts := fs.Int("partitions-per-commit", 10, "partitions in every OffsetCommit; the topic is created with as many (1 to 10000)")
	duration := fs.Duration("duration", 5*time.Second, "how long to commit, after the untimed first commit of every group")
	topic := fs.String("topic", "cohort-bench-commits", "`topic` to commit offsets of; created if missing (an existing one must have at least --partitions-per-commit partitions)")
	return func(ctx context.Context, e *benchEnv) error {
		switch {
		case *committers < 1 || *committers > 100000:
			return usageError(fmt.Sprintf("--committers must be between 1 and 100000, not %d", *committers))
		case *parts < 1 || *parts > 10000:
			return usageError(fmt.Sprintf("--partitions-per-commit must be between 1 and 10000, not %d", *parts))
		case *duration <= 0:
			return usageError("--duration must be positive")
		}
		n := int32(*parts)
		if err := loadgen.CreateTopics(ctx, e.brokers, n, *topic); err != nil {
			return err
		}
		groups := make([]string, *committers)
		for i := range groups {
			groups[i] = fmt.Sprintf("cohort-bench-commit-%s-%d", e.runID, i)
		}
		conns, err := e.dialCoordinators(ctx, groups, "cohort-bench-commits")
		if err != nil {
			return err
		}
		defer loadgen.CloseAll(conns)
		w := loadgen.Commits{Conns: conns, Groups: groups, Topic: *topic, Partitions: n}
		if err := w.Warm(); err != nil {
			return fmt.Errorf("first commit of every group: %w", err)
		}
		res, err := w.Run(0, time.Now().Add(*duration))
		if err != nil {
			return err
		}
		r := commitsResult{
			Workload:            "commits",
			Committers:          *committers,
			PartitionsPerCommit: n,
			Topic:               *topic,
			Seconds:             res.Elapsed.Seconds(),
			Commits:             res.Commits,
			Offsets:             res.Offsets(n),
			OffsetsPerSec:       float64(res.Offsets(n)) / res.Elapsed.Seconds(),
			P50Ms:               msOf(loadgen.Percentile(res.Latencies, 0.50)),
			P99Ms:               msOf(loadgen.Percentile(res.Latencies, 0.99)),
		}
		return e.print(r,
			[]string{"COMMITTERS", "PARTITIONS/COMMIT", "SECONDS", "COMMITS", "OFFSETS/S", "P50-MS", "P99-MS"},
			[]string{fmt.Sprint(r.Committers), fmt.Sprint(r.PartitionsPerCommit), fmt.Sprintf("%.2f", r.Seconds), fmt.Sprint(r.Commits), fmt.Sprintf("%.0f", r.OffsetsPerSec), fmtMs(loadgen.Percentile(res.Latencies, 0.50)), fmtMs(loadgen.Percentile(res.Latencies, 0.99))})
	}
}

// ---------------------------------------------------------------------------
// join

// joinResult is the JSON output of `cohort bench join`.
type joinResult struct {
	Workload   string `json:"workload"`
	Group      string `json:"group"`
	Members    int    `json:"members"`
	Partitions int32  `json:"partitions"`
	// Generations is how many generations the members were answered a
	// JoinGroup for (1: all came into one); FinalGeneration the number of
	// the one they all ended in.
	Generations     int     `json:"generations"`
	FinalGeneration int32   `json:"final_generation"`
	SyncedMembers   int     `json:"synced_members"`
	JoinsPerMember  float64 `json:"joins_per_member"`
	AllJoinedMs     float64 `json:"all_joined_ms"`
	LastSyncMs      float64 `json:"last_sync_ms"`
}

func joinFlags(fs *flag.FlagSet) func(context.Context, *benchEnv) error {
	members := fs.Int("members", 500, "members joining at once, one connection each (1 to 100000)")
	parts := fs.Int("partitions", 1000, "partitions of the topic they subscribe to (1 to 100000)")
	group := fs.String("group", "", "`group` to join (default: cohort-bench-join- and a run id, a fresh group)")
	topic := fs.String("topic", "", "`topic` they subscribe to; created if missing (default: cohort-bench-join-P, P the partition count)")
	return func(ctx context.Context, e *benchEnv) error {
		switch {
		case *members < 1 || *members > 100000:
			return usageError(fmt.Sprintf("--members must be between 1 and 100000, not %d", *members))
		case *parts < 1 || *parts > 100000:
			return usageError(fmt.Sprintf("--partitions must be between 1 and 100000, not %d", *parts))
		}
		if *group == "" {
			*group = "cohort-bench-join-" + e.runID
		}
		if *topic == "" {
			*topic = fmt.Sprintf("cohort-bench-join-%d", *parts)
		}
		n := int32(*parts)
		if err := loadgen.CreateTopics(ctx, e.brokers, n, *topic); err != nil {
			return err
		}
		addrs, err := loadgen.Coordinators(ctx, e.brokers, []string{*group})
		if err != nil {
			return err
		}
		conns, err := loadgen.DialN(addrs[0], *members, "cohort-bench-join")
		if err != nil {
			return err
		}
		defer loadgen.CloseAll(conns)
		deadline, _ := ctx.Deadline()
		r := loadgen.NewRebalance(loadgen.RebalanceParams{
			Group:          *group,
			Topic:          *topic,
			Partitions:     n,
			Session:        30 * time.Second,
			Rebalance:      60 * time.Second,
			HeartbeatEvery: loadgen.MemberHeartbeat,
			Deadline:       time.Until(deadline),
		}, conns)
		res, err := r.Run()
		if err != nil {
			return err
		}
		// Untimed: leave, so that the group does not wait out 30 s
		// sessions. A broker that refuses is not the measurement's concern.
		_ = r.LeaveAll()
		out := joinResult{
			Workload:        "join",
			Group:           *group,
			Members:         *members,
			Partitions:      n,
			Generations:     r.Generations(),
			FinalGeneration: r.FinalGen(),
			SyncedMembers:   len(r.MemberIDs()),
			JoinsPerMember:  float64(r.Joins()) / float64(*members),
			AllJoinedMs:     msOf(res.Joined),
			LastSyncMs:      msOf(res.Synced),
		}
		return e.print(out,
			[]string{"MEMBERS", "PARTITIONS", "GENERATIONS", "JOINS/MEMBER", "ALL-JOINED-MS", "LAST-SYNC-MS"},
			[]string{fmt.Sprint(out.Members), fmt.Sprint(out.Partitions), fmt.Sprint(out.Generations), fmt.Sprintf("%.2f", out.JoinsPerMember), fmtMs(res.Joined), fmtMs(res.Synced)})
	}
}

// ---------------------------------------------------------------------------
// heartbeats

// heartbeatsResult is the JSON output of `cohort bench heartbeats`.
type heartbeatsResult struct {
	Workload       string  `json:"workload"`
	Protocol       string  `json:"protocol"` // classic or consumer
	Members        int     `json:"members"`
	Groups         int     `json:"groups"`
	Connections    int     `json:"connections"`
	SetupSeconds   float64 `json:"setup_seconds"` // the untimed joins
	Seconds        float64 `json:"seconds"`       // the timed run, measured
	Heartbeats     int64   `json:"heartbeats"`
	HeartbeatsPerS float64 `json:"heartbeats_per_s"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
}

func heartbeatsFlags(fs *flag.FlagSet) func(context.Context, *benchEnv) error {
	members := fs.Int("members", 10000, "members in all, --members/--groups per group (1 to 1000000)")
	groups := fs.Int("groups", 100, "groups; must divide --members")
	duration := fs.Duration("duration", 5*time.Second, "how long to heartbeat, after the untimed joins and one untimed round")
	connections := fs.Int("connections", 250, "connections heartbeating, each for its share of the members (1 to 10000)")
	depth := fs.Int("depth", 8, "Heartbeat requests in flight per connection (1 to 1000)")
	parts := fs.Int("partitions", 100, "partitions of the topic the members subscribe to (cohort-bench-heartbeat-P)")
	protocol := fs.String("protocol", "classic", "the members' group protocol: classic (JoinGroup, SyncGroup, Heartbeat v4) or consumer (KIP-848: ConsumerGroupHeartbeat v1)")
	return func(ctx context.Context, e *benchEnv) error {
		switch {
		case *members < 1 || *members > 1000000:
			return usageError(fmt.Sprintf("--members must be between 1 and 1000000, not %d", *members))
		case *groups < 1 || *members%*groups != 0:
			return usageError(fmt.Sprintf("--groups must be at least 1 and divide --members (%d), not %d", *members, *groups))
		case *connections < 1 || *connections > 10000:
			return usageError(fmt.Sprintf("--connections must be between 1 and 10000, not %d", *connections))
		case *depth < 1 || *depth > 1000:
			return usageError(fmt.Sprintf("--depth must be between 1 and 1000, not %d", *depth))
		case *parts < 1 || *parts > 100000:
			return usageError(fmt.Sprintf("--partitions must be between 1 and 100000, not %d", *parts))
		case *duration <= 0:
			return usageError("--duration must be positive")
		case *protocol != "classic" && *protocol != "consumer":
			return usageError(fmt.Sprintf("--protocol must be classic or consumer, not %q", *protocol))
		}
		topic := fmt.Sprintf("cohort-bench-heartbeat-%d", *parts)
		if err := loadgen.CreateTopics(ctx, e.brokers, int32(*parts), topic); err != nil {
			return err
		}
		names := make([]string, *groups)
		for g := range names {
			names[g] = fmt.Sprintf("cohort-bench-heartbeat-%s-%d", e.runID, g)
		}
		addrs, err := loadgen.Coordinators(ctx, e.brokers, names)
		if err != nil {
			return err
		}
		coordOf := make(map[string]string, len(names))
		for g, n := range names {
			coordOf[n] = addrs[g]
		}
		deadline, _ := ctx.Deadline()
		perGroup := *members / *groups
		t0 := time.Now()
		var run heartbeatRun
		if *protocol == "consumer" {
			ms, err := loadgen.JoinConsumers(addrs, "cohort-bench-heartbeat", topic, perGroup, 20, func(g int) string { return names[g] }, deadline)
			if err != nil {
				return err
			}
			run, err = heartbeatRounds(ms, func(m *loadgen.ConsumerMember) string { return coordOf[m.Group] },
				time.Since(t0), *connections, *depth, *duration, loadgen.ConsumerHeartbeats,
				func(c *loadgen.Conn, ms []*loadgen.ConsumerMember) { _ = loadgen.LeaveConsumers(c, ms, *depth) })
			if err != nil {
				return err
			}
		} else {
			ms, err := loadgen.JoinGroups(addrs, "cohort-bench-heartbeat", loadgen.RebalanceParams{
				Topic:          topic,
				Partitions:     int32(*parts),
				Session:        5 * time.Minute, // no member expires during the run
				Rebalance:      60 * time.Second,
				HeartbeatEvery: loadgen.MemberHeartbeat,
				Deadline:       time.Until(deadline),
			}, perGroup, 20, func(g int) string { return names[g] })
			if err != nil {
				return err
			}
			run, err = heartbeatRounds(ms, func(m loadgen.Member) string { return coordOf[m.Group] },
				time.Since(t0), *connections, *depth, *duration, loadgen.Heartbeats, leaveGroups)
			if err != nil {
				return err
			}
		}
		all := run.lats
		out := heartbeatsResult{
			Workload:       "heartbeats",
			Protocol:       *protocol,
			Members:        run.members,
			Groups:         *groups,
			Connections:    run.connections,
			SetupSeconds:   run.setup.Seconds(),
			Seconds:        run.elapsed.Seconds(),
			Heartbeats:     int64(len(all)),
			HeartbeatsPerS: float64(len(all)) / run.elapsed.Seconds(),
			P50Ms:          msOf(loadgen.Percentile(all, 0.50)),
			P99Ms:          msOf(loadgen.Percentile(all, 0.99)),
		}
		return e.print(out,
			[]string{"PROTOCOL", "MEMBERS", "GROUPS", "CONNECTIONS", "SECONDS", "HEARTBEATS", "HEARTBEATS/S", "P50-MS", "P99-MS"},
			[]string{out.Protocol, fmt.Sprint(out.Members), fmt.Sprint(out.Groups), fmt.Sprint(out.Connections), fmt.Sprintf("%.2f", out.Seconds), fmt.Sprint(out.Heartbeats), fmt.Sprintf("%.0f", out.HeartbeatsPerS), fmtMs(loadgen.Percentile(all, 0.50)), fmtMs(loadgen.Percentile(all, 0.99))})
	}
}

// heartbeatRun is what heartbeatRounds measured.
type heartbeatRun struct {
	members, connections int
	setup, elapsed       time.Duration
	lats                 []time.Duration // every timed heartbeat's round trip, sorted
}

// heartbeatRounds heartbeats for members of either protocol: each
// coordinator (coord(m)) gets a share of the connections as large as its
// share of the members, at least one; one untimed round, then rounds for
// duration, each with every member heartbeating once (beat, depth in
// flight per connection). Then the members leave, untimed (leave, once
// per connection with its members).
func heartbeatRounds[M any](ms []M, coord func(M) string, setup time.Duration, connections, depth int, duration time.Duration,
	beat func(c *loadgen.Conn, ms []M, depth int, lat func(time.Duration)) error, leave func(c *loadgen.Conn, ms []M)) (heartbeatRun, error) {
	byCoord := map[string][]M{}
	for _, m := range ms {
		byCoord[coord(m)] = append(byCoord[coord(m)], m)
	}
	type share struct {
		c       *loadgen.Conn
		members []M
	}
	var shares []share
	defer func() {
		for _, s := range shares {
			s.c.Close()
		}
	}()
	coords := make([]string, 0, len(byCoord))
	for a := range byCoord {
		coords = append(coords, a)
	}
	slices.Sort(coords)
	for _, a := range coords {
		n := max(1, connections*len(byCoord[a])/len(ms))
		conns, err := loadgen.DialN(a, n, "cohort-bench-heartbeat")
		if err != nil {
			return heartbeatRun{}, err
		}
		for i, c := range conns {
			shares = append(shares, share{c, loadgen.Every(byCoord[a], i, n)})
		}
	}
	lats := make([][]time.Duration, len(shares))
	round := func(record bool) error {
		return loadgen.Parallel(len(shares), len(shares), func(i int) error {
			var lat func(time.Duration)
			if record {
				lat = func(d time.Duration) { lats[i] = append(lats[i], d) }
			}
			return beat(shares[i].c, shares[i].members, depth, lat)
		})
	}
	if err := round(false); err != nil {
		return heartbeatRun{}, fmt.Errorf("first heartbeat of every member (untimed): %w", err)
	}
	start := time.Now()
	until := start.Add(duration)
	for time.Now().Before(until) {
		if err := round(true); err != nil {
			return heartbeatRun{}, err
		}
	}
	elapsed := time.Since(start)
	all := slices.Concat(lats...)
	slices.Sort(all)
	for _, s := range shares {
		if len(s.members) > 0 {
			leave(s.c, s.members)
		}
	}
	return heartbeatRun{members: len(ms), connections: len(shares), setup: setup, elapsed: elapsed, lats: all}, nil
}

// leaveGroups makes the classic members ms leave their groups (one
// LeaveGroup per group) on c, a connection to their coordinator, untimed,
// so that the groups do not wait out their 5-minute sessions. Errors are
// ignored: the run has been measured by then.
func leaveGroups(c *loadgen.Conn, ms []loadgen.Member) {
	ids := map[string][]string{}
	var order []string
	for _, m := range ms {
		if _, ok := ids[m.Group]; !ok {
			order = append(order, m.Group)
		}
		ids[m.Group] = append(ids[m.Group], m.ID)
	}
	for _, g := range order {
		_ = loadgen.Leave(c, g, ids[g])
	}
}
