package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file drives kafkactl (github.com/deviceinsight/kafkactl), an
// operator CLI built on Sarama that nobody here wrote, as a binary against
// the cohort binary, the way an operator would: a config file naming the
// broker, one command at a time. ./test.sh builds it from its module; what
// each command did is checked with franz-go's kadm, not only read back
// through kafkactl.

// kafkactlVersion is the kafkactl release test.sh builds (Sarama 1.43.3).
const kafkactlVersion = "v5.4.0"

// kafkactlPath returns the kafkactl binary test.sh built: $COHORT_KAFKACTL,
// else where test.sh keeps it in the user cache directory. It fails (never
// skips) when that is missing or another version.
func kafkactlPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("COHORT_KAFKACTL")
	if path == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("kafkactl: no COHORT_KAFKACTL and no user cache directory (%v): run ./test.sh, which builds kafkactl %s", err, kafkactlVersion)
		}
		path = filepath.Join(dir, "cohort", "kafkactl-"+kafkactlVersion, "kafkactl")
	}
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("kafkactl %s not found at %s (%v): ./test.sh builds it (or set COHORT_KAFKACTL to a kafkactl %s binary)", kafkactlVersion, path, err, kafkactlVersion)
	}
	if !bytes.Contains(out, []byte(`version:"`+kafkactlVersion+`"`)) {
		t.Fatalf("%s is not kafkactl %s: %s./test.sh rebuilds it", path, kafkactlVersion, out)
	}
	return path
}

// kafkactl runs the kafkactl binary against one broker.
type kafkactl struct {
	bin    string
	config string // the file passed with -C
	dir    string // its home and working directory
}

// newKafkactl runs the kafkactl binary bin with a config whose one
// context, default, names addr; kafkaVersion (the Kafka version Sarama
// assumes, which picks its request versions) is kafkactl's default (2.5.0)
// when empty.
func newKafkactl(t *testing.T, bin, addr, kafkaVersion string) *kafkactl {
	t.Helper()
	k := &kafkactl{bin: bin, dir: t.TempDir()}
	cfg := "contexts:\n  default:\n    brokers:\n      - " + addr + "\n    clientID: cohort-e2e-kafkactl\n"
	if kafkaVersion != "" {
		cfg += "    kafkaVersion: " + kafkaVersion + "\n"
	}
	cfg += "current-context: default\n"
	k.config = filepath.Join(k.dir, "kafkactl.yml")
	if err := os.WriteFile(k.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

// exec runs kafkactl with args and stdin under extTimeout. Its home and
// working directory are its own, and its environment holds nothing else,
// so no config of the machine's user (~/.config/kafkactl, a project's
// kafkactl.yml, BROKERS and its other variables) is read.
func (k *kafkactl) exec(t *testing.T, stdin string, args []string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"-C", k.config}, args...)...)
	cmd.Dir = k.dir
	cmd.Env = []string{"HOME=" + k.dir, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kafkactl %s: no exit within %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), extTimeout, tail(out.String()), tail(errOut.String()))
	}
	t.Logf("kafkactl %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return out.String(), errOut.String(), err
}

// run runs kafkactl and returns its stdout, failing the test unless it
// exits 0.
func (k *kafkactl) run(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := k.exec(t, stdin, args)
	if err != nil {
		t.Fatalf("kafkactl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, tail(out), tail(errOut))
	}
	return out
}

// fail runs kafkactl, which must exit non-zero saying want on stderr.
func (k *kafkactl) fail(t *testing.T, want string, args ...string) {
	t.Helper()
	out, errOut, err := k.exec(t, "", args)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(errOut, want) {
		t.Fatalf("kafkactl %s: %v, stderr %q (stdout %q); want a failure saying %q", strings.Join(args, " "), err, errOut, out, want)
	}
}

// kctlJSON runs kafkactl with args and -o json and decodes its output.
func kctlJSON[T any](t *testing.T, k *kafkactl, args ...string) T {
	t.Helper()
	out := k.run(t, "", append(args, "-o", "json")...)
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kafkactl %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// kctlTopic is `kafkactl describe topic -o json`.
type kctlTopic struct {
	Name       string
	Partitions []struct {
		ID           int32
		OldestOffset int64 `json:"oldestOffset"`
		NewestOffset int64 `json:"newestOffset"`
	}
	Configs []struct{ Name, Value string }
}

// bounds is each partition's oldest and newest offset.
func (d kctlTopic) bounds() map[int32][2]int64 {
	m := map[int32][2]int64{}
	for _, p := range d.Partitions {
		m[p.ID] = [2]int64{p.OldestOffset, p.NewestOffset}
	}
	return m
}

func (d kctlTopic) configs() map[string]string {
	m := map[string]string{}
	for _, c := range d.Configs {
		m[c.Name] = c.Value
	}
	return m
}

// kctlGroup is `kafkactl describe consumer-group -o json`.
type kctlGroup struct {
	State  string
	Topics []struct {
		Name       string
		Partitions []struct {
			Partition      int32
			ConsumerOffset int64 `json:"consumerOffset"`
		}
	}
	Members []struct {
		ClientID           string `json:"clientId"`
		AssignedPartitions []struct {
			Name       string
			Partitions []int32
		} `json:"assignedPartitions"`
	}
}

// offsets is the group's committed offset of each partition of topic.
func (g kctlGroup) offsets(topic string) map[int32]int64 {
	m := map[int32]int64{}
	for _, tp := range g.Topics {
		if tp.Name == topic {
			for _, p := range tp.Partitions {
				m[p.Partition] = p.ConsumerOffset
			}
		}
	}
	return m
}

// kctlCheck reads what kafkactl did with franz-go, a fresh client each
// time (kgo caches metadata, and a partition count must be read afresh).
type kctlCheck struct {
	t    *testing.T
	addr string
}

// adm returns a new admin client, a context bounded by extTimeout, and a
// function that closes both.
func (c kctlCheck) adm() (*kadm.Client, context.Context, func()) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	return kadm.NewClient(cl), ctx, func() { cancel(); cl.Close() }
}

// topics returns each topic's partition count, __consumer_offsets left out.
func (c kctlCheck) topics() map[string]int {
	c.t.Helper()
	adm, ctx, done := c.adm()
	defer done()
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		c.t.Fatalf("list topics: %v", err)
	}
	m := map[string]int{}
	for _, td := range tds.Sorted() {
		if td.Err != nil {
			c.t.Fatalf("topic %s: %v", td.Topic, td.Err)
		}
		m[td.Topic] = len(td.Partitions)
	}
	return m
}

// configs returns topic's configs set on it (DYNAMIC_TOPIC_CONFIG).
func (c kctlCheck) configs(topic string) map[string]string {
	c.t.Helper()
	adm, _, done := c.adm()
	defer done()
	return topicConfigs(c.t, adm, topic)
}

// offsets returns topic's start (end false) or end offsets.
func (c kctlCheck) offsets(topic string, end bool) map[int32]int64 {
	c.t.Helper()
	adm, ctx, done := c.adm()
	defer done()
	list := adm.ListStartOffsets
	if end {
		list = adm.ListEndOffsets
	}
	los, err := list(ctx, topic)
	if err == nil {
		err = los.Error()
	}
	if err != nil {
		c.t.Fatalf("list offsets of %s: %v", topic, err)
	}
	m := map[int32]int64{}
	los.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
	return m
}

// committed returns group's committed offsets in topic.
func (c kctlCheck) committed(group, topic string) map[int32]int64 {
	c.t.Helper()
	adm, ctx, done := c.adm()
	defer done()
	ors, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = ors.Error()
	}
	if err != nil {
		c.t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	m := map[int32]int64{}
	ors.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			m[o.Partition] = o.At
		}
	})
	return m
}

// group returns group's state, its number of members and the partitions
// of topic assigned to them, as DescribeGroups says.
func (c kctlCheck) group(group, topic string) (state string, members, assigned int) {
	c.t.Helper()
	adm, ctx, done := c.adm()
	defer done()
	dgs, err := adm.DescribeGroups(ctx, group)
	if err == nil {
		err = dgs.Error()
	}
	if err != nil {
		c.t.Fatalf("describe group %s: %v", group, err)
	}
	dg := dgs[group]
	return dg.State, len(dg.Members), len(dgs.AssignedPartitions()[topic])
}

// groups returns the groups ListGroups lists.
func (c kctlCheck) groups() []string {
	c.t.Helper()
	adm, ctx, done := c.adm()
	defer done()
	lgs, err := adm.ListGroups(ctx)
	if err != nil {
		c.t.Fatalf("list groups: %v", err)
	}
	names := lgs.Groups()
	sort.Strings(names)
	return names
}

// same fails unless got and want print alike (fmt prints maps sorted by
// key).
func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Fatalf("%s: %s, want %s", what, g, w)
	}
}

// TestKafkactl runs an operator's session with kafkactl against the cohort
// binary: create a topic, change its retention, produce, delete records,
// consume with a group, inspect and reset the group's offsets (by
// position and by time), add partitions, clone the topic and the group,
// delete a group's offset, list ACLs, delete the group and the clone; and
// the refusals an operator meets (a live group, an invalid config, an
// offset past the end). Once with kafkactl's default Kafka version (2.5.0)
// and once with Sarama's newest (3.6.0), which pick different request
// versions.
func TestKafkactl(t *testing.T) {
	bin := kafkactlPath(t)
	for _, c := range []struct{ name, kafkaVersion string }{
		{"default", ""},
		{"kafka-3.6", "3.6.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Sarama's group sessions (consume, reset, clone) join
			// alone: no initial rebalance delay to wait out.
			p := testkit.StartBinary(t, t.TempDir(), "--group-initial-rebalance-delay", "0s")
			kafkactlSession(t, newKafkactl(t, bin, p.Addr, c.kafkaVersion), kctlCheck{t, p.Addr})
		})
	}
}

func kafkactlSession(t *testing.T, k *kafkactl, chk kctlCheck) {
	const topic, group = "orders", "ops"
	var d kctlTopic
	var g kctlGroup

	// A topic with a config; then its retention changed. kafkactl's
	// alter reads the topic's non-default configs (DescribeConfigs) and
	// writes them back with the change (AlterConfigs, the whole set).
	k.run(t, "", "create", "topic", topic, "--partitions", "2", "--config", "retention.ms=1000")
	same(t, "topics after kafkactl create topic", chk.topics(), map[string]int{topic: 2})
	same(t, "configs after kafkactl create topic", chk.configs(topic), map[string]string{"retention.ms": "1000"})
	k.run(t, "", "alter", "topic", topic, "--config", "retention.ms=7200000")
	d = kctlJSON[kctlTopic](t, k, "describe", "topic", topic)
	same(t, "kafkactl describe topic's configs after alter", d.configs(), map[string]string{"retention.ms": "7200000"})
	same(t, "configs after kafkactl alter topic", chk.configs(topic), map[string]string{"retention.ms": "7200000"})
	// Values Kafka's validators refuse (INVALID_CONFIG) change nothing.
	k.fail(t, "is not a valid long", "alter", "topic", topic, "--config", "retention.ms=soon")
	k.fail(t, "Value must be at least -1", "alter", "topic", topic, "--config", "retention.ms=-2")
	k.fail(t, "String must be one of", "alter", "topic", topic, "--config", "compression.type=brotli")
	same(t, "configs after invalid alters", chk.configs(topic), map[string]string{"retention.ms": "7200000"})

	// Records from stdin: keyed to partition 0, unkeyed to partition 1.
	var in strings.Builder
	for i := range 10 {
		fmt.Fprintf(&in, "k%d#v%d\n", i, i)
	}
	if out := k.run(t, in.String(), "produce", topic, "--partition", "0", "--separator", "#"); !strings.Contains(out, "10 messages produced") {
		t.Fatalf("kafkactl produce: %q", out)
	}
	k.run(t, "a\nb\nc\n", "produce", topic, "--partition", "1")
	same(t, "end offsets after kafkactl produce", chk.offsets(topic, true), map[int32]int64{0: 10, 1: 3})
	for _, r := range franzConsume(t, chk.addr, topic, 13) {
		want := [2]string{"", string(rune('a' + r.Offset))}
		if r.Partition == 0 {
			want = [2]string{fmt.Sprintf("k%d", r.Offset), fmt.Sprintf("v%d", r.Offset)}
		}
		if got := [2]string{string(r.Key), string(r.Value)}; got != want {
			t.Fatalf("partition %d offset %d: key and value %q, want %q", r.Partition, r.Offset, got, want)
		}
	}

	// Records before offset 2 of partition 0 deleted: the log start moves.
	k.run(t, "", "delete", "records", topic, "--offset", "0=2")
	d = kctlJSON[kctlTopic](t, k, "describe", "topic", topic)
	same(t, "kafkactl describe topic's offsets after delete records", d.bounds(), map[int32][2]int64{0: {2, 10}, 1: {0, 3}})
	same(t, "start offsets after kafkactl delete records", chk.offsets(topic, false), map[int32]int64{0: 2, 1: 0})
	k.fail(t, "outside the range", "delete", "records", topic, "--offset", "1=4")
	same(t, "start offsets after deleting past the end", chk.offsets(topic, false), map[int32]int64{0: 2, 1: 0})

	// A group reads all 11 records left from the start and commits.
	out := k.run(t, "", "consume", topic, "--group", group, "--from-beginning", "--max-messages", "11", "--print-partitions", "--print-keys")
	got := strings.Fields(out)
	sort.Strings(got)
	want := []string{"1##a", "1##b", "1##c"}
	for i := 2; i < 10; i++ {
		want = append(want, fmt.Sprintf("0#k%d#v%d", i, i))
	}
	sort.Strings(want)
	same(t, "kafkactl consume --group", got, want)
	g = kctlJSON[kctlGroup](t, k, "describe", "consumer-group", group)
	same(t, "kafkactl describe consumer-group", [2]any{g.State, g.offsets(topic)}, [2]any{"Empty", map[int32]int64{0: 10, 1: 3}})
	same(t, "committed offsets after kafkactl consume --group", chk.committed(group, topic), map[int32]int64{0: 10, 1: 3})

	// Reset to the oldest offsets: a dry run changes nothing; --execute
	// joins the group and commits the log starts.
	k.run(t, "", "reset", "consumer-group-offset", group, "--topic", topic, "--oldest")
	same(t, "committed offsets after a dry-run reset", chk.committed(group, topic), map[int32]int64{0: 10, 1: 3})
	k.run(t, "", "reset", "consumer-group-offset", group, "--topic", topic, "--oldest", "--execute")
	g = kctlJSON[kctlGroup](t, k, "describe", "consumer-group", group)
	same(t, "kafkactl describe consumer-group after reset", g.offsets(topic), map[int32]int64{0: 2, 1: 0})
	same(t, "committed offsets after kafkactl reset", chk.committed(group, topic), map[int32]int64{0: 2, 1: 0})

	// With a member (franz-go, committing nothing) kafkactl describes it
	// and its assignment, and neither resets nor deletes the group.
	member, err := kgo.NewClient(kgo.SeedBrokers(chk.addr), kgo.ClientID("cohort-e2e-member"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	testkit.Eventually(t, extTimeout, "the franz-go member to be assigned both partitions", func() bool {
		state, members, assigned := chk.group(group, topic)
		return state == "Stable" && members == 1 && assigned == 2
	})
	g = kctlJSON[kctlGroup](t, k, "describe", "consumer-group", group)
	if len(g.Members) != 1 || g.Members[0].ClientID != "cohort-e2e-member" || len(g.Members[0].AssignedPartitions) != 1 ||
		g.Members[0].AssignedPartitions[0].Name != topic || !slices.Equal(slices.Sorted(slices.Values(g.Members[0].AssignedPartitions[0].Partitions)), []int32{0, 1}) {
		t.Fatalf("kafkactl describe consumer-group with a member: state %s, members %+v; want cohort-e2e-member assigned %s [0 1]", g.State, g.Members, topic)
	}
	same(t, "kafkactl describe consumer-group's state with a member", g.State, "Stable")
	k.fail(t, "(state: Stable)", "reset", "consumer-group-offset", group, "--topic", topic, "--newest", "--execute")
	k.fail(t, "not empty", "delete", "consumer-group", group)
	member.Close()
	testkit.Eventually(t, extTimeout, "the group to be empty once its member left", func() bool {
		state, _, _ := chk.group(group, topic)
		return state == "Empty"
	})
	same(t, "committed offsets after the member left", chk.committed(group, topic), map[int32]int64{0: 2, 1: 0})

	// A third partition, with records a minute apart from an hour ago:
	// consume and reset by time find the first at or after a timestamp.
	k.run(t, "", "alter", "topic", topic, "--partitions", "3")
	same(t, "topics after kafkactl alter topic --partitions", chk.topics(), map[string]int{topic: 3})
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []rec
	for i := range 5 {
		recs = append(recs, rec{Partition: 2, Value: fmt.Appendf(nil, "t%d", i), Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	franzProducePartition(t, chk.addr, topic, recs)
	at := strconv.FormatInt(base.Add(150*time.Second).UnixMilli(), 10) // between t2 and t3
	out = k.run(t, "", "consume", topic, "--partitions", "2", "--from-timestamp", at, "--exit")
	same(t, "kafkactl consume --from-timestamp", strings.Fields(out), []string{"t3", "t4"})
	k.run(t, "", "reset", "consumer-group-offset", group, "--topic", topic, "--partition", "2", "--to-datetime", at, "--execute")
	same(t, "committed offsets after kafkactl reset --to-datetime", chk.committed(group, topic), map[int32]int64{0: 2, 1: 0, 2: 3})

	// Clones: the topic with its partitions and configs, the group with
	// its offsets; then one of the clone's offsets deleted (OffsetDelete).
	k.run(t, "", "clone", "topic", topic, topic+"-copy")
	same(t, "topics after kafkactl clone topic", chk.topics(), map[string]int{topic: 3, topic + "-copy": 3})
	same(t, "the clone's configs", chk.configs(topic+"-copy"), map[string]string{"retention.ms": "7200000"})
	k.run(t, "", "clone", "consumer-group", group, group+"-copy")
	same(t, "the group clone's offsets", chk.committed(group+"-copy", topic), map[int32]int64{0: 2, 1: 0, 2: 3})
	k.run(t, "", "delete", "consumer-group-offset", group+"-copy", "--topic", topic, "--partition", "0")
	same(t, "the group clone's offsets after kafkactl delete consumer-group-offset", chk.committed(group+"-copy", topic), map[int32]int64{1: 0, 2: 3})

	// ACLs, authorization off: DescribeAcls answers SECURITY_DISABLED, as
	// Kafka without an authorizer; Sarama's ListAcls drops the error code,
	// so kafkactl lists none.
	if acls := kctlJSON[[]any](t, k, "get", "acl"); len(acls) != 0 {
		t.Fatalf("kafkactl get acl without an authorizer: %v, want none", acls)
	}
	adm, ctx, done := chk.adm()
	defer done()
	dres, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(dres) != 1 || !errors.Is(dres[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeACLs without an authorizer: %v %+v, want SECURITY_DISABLED", err, dres)
	}

	// The group and the topic clone deleted.
	k.run(t, "", "delete", "consumer-group", group)
	same(t, "groups after kafkactl delete consumer-group", chk.groups(), []string{group + "-copy"})
	same(t, "the deleted group's offsets", chk.committed(group, topic), map[int32]int64{})
	g = kctlJSON[kctlGroup](t, k, "describe", "consumer-group", group)
	same(t, "kafkactl describe consumer-group of a deleted group", g.State, "Dead")
	k.run(t, "", "delete", "topic", topic+"-copy")
	same(t, "topics after kafkactl delete topic", chk.topics(), map[string]int{topic: 3})
}

// franzProducePartition produces recs, each to its partition with its
// timestamp, in order, and fails unless all are acknowledged.
func franzProducePartition(t *testing.T, addr, topic string, recs []rec) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	var krs []*kgo.Record
	for _, r := range recs {
		krs = append(krs, &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// TestKafkactlACLs: with authorization on (the anonymous principal a
// super user, as an operator bootstraps over a loopback listener),
// kafkactl creates ACLs, lists them, and deletes those of topics; kadm's
// DescribeACLs agrees at each step.
func TestKafkactlACLs(t *testing.T) {
	bin := kafkactlPath(t)
	p := testkit.StartBinary(t, t.TempDir(), "--authorizer", "--super-users", "User:ANONYMOUS")
	k := newKafkactl(t, bin, p.Addr, "")
	chk := kctlCheck{t, p.Addr}
	// described is every ACL, one line each, sorted, as kadm reads them.
	described := func() []string {
		t.Helper()
		adm, ctx, done := chk.adm()
		defer done()
		res, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
		if err == nil && len(res) == 1 {
			err = res[0].Err
		}
		if err != nil || len(res) != 1 {
			t.Fatalf("describe ACLs: %v %+v", err, res)
		}
		var out []string
		for _, a := range res[0].Described {
			out = append(out, strings.ToUpper(fmt.Sprintf("%s %s %s %s %s %s %s", a.Type, a.Name, a.Pattern, a.Principal, a.Host, a.Operation, a.Permission)))
		}
		sort.Strings(out)
		return out
	}
	// listed is every ACL kafkactl lists, in the same form.
	listed := func() []string {
		t.Helper()
		res := kctlJSON[[]struct {
			ResourceType string `json:"resourceType"`
			ResourceName string `json:"resourceName"`
			PatternType  string `json:"patternType"`
			Acls         []struct {
				Principal, Host, Operation string
				PermissionType             string `json:"permissionType"`
			} `json:"acls"`
		}](t, k, "get", "acl")
		var out []string
		for _, r := range res {
			for _, a := range r.Acls {
				out = append(out, strings.ToUpper(strings.Join([]string{r.ResourceType, r.ResourceName, r.PatternType, a.Principal, a.Host, a.Operation, a.PermissionType}, " ")))
			}
		}
		sort.Strings(out)
		return out
	}

	k.run(t, "", "create", "acl", "--topic", "orders", "--operation", "read", "--operation", "describe", "--principal", "User:alice", "--allow")
	k.run(t, "", "create", "acl", "--group", "app-", "--pattern", "prefixed", "--operation", "read", "--principal", "User:alice", "--host", "10.0.0.1", "--deny")
	want := []string{
		"GROUP APP- PREFIXED USER:ALICE 10.0.0.1 READ DENY",
		"TOPIC ORDERS LITERAL USER:ALICE * DESCRIBE ALLOW",
		"TOPIC ORDERS LITERAL USER:ALICE * READ ALLOW",
	}
	same(t, "ACLs after kafkactl create acl", described(), want)
	same(t, "kafkactl get acl", listed(), want)

	k.run(t, "", "delete", "acl", "--topics", "--operation", "any", "--pattern", "any")
	same(t, "ACLs after kafkactl delete acl --topics", described(), want[:1])
	same(t, "kafkactl get acl after delete", listed(), want[:1])
}

// TestKafkactlConsumerProtocolGroup: a KIP-848 group (franz-go on the
// consumer protocol) seen through kafkactl, whose Sarama knows only the
// classic group APIs. get consumer-groups lists it (ListGroups, protocol
// type consumer); describe consumer-group shows its committed offsets
// (OffsetFetch) and the state Dead, because, as from Kafka 4, DescribeGroups
// describes classic groups only (GROUP_ID_NOT_FOUND from v6, Dead before),
// so kafkactl's reset, which wants an Empty group, refuses it as it would
// against Kafka; delete is refused while the member is live
// (NON_EMPTY_GROUP) and deletes the group and its offsets once it left.
func TestKafkactlConsumerProtocolGroup(t *testing.T) {
	bin := kafkactlPath(t)
	p := testkit.StartBinary(t, t.TempDir())
	k := newKafkactl(t, bin, p.Addr, "")
	chk := kctlCheck{t, p.Addr}
	const topic, group = "events", "kip848"
	k.run(t, "", "create", "topic", topic, "--partitions", "2")
	k.run(t, "", "produce", topic, "--partition", "0", "--value", "x")
	k.run(t, "", "produce", topic, "--partition", "1", "--value", "y")

	member, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ClientID("cohort-e2e-member"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	for n := 0; n < 2; {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("franz-go member: %v", err)
		}
		n += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("franz-go member commit: %v", err)
	}
	adm, actx, done := chk.adm()
	dcg, err := adm.DescribeConsumerGroups(actx, group)
	done()
	if err != nil || dcg[group].Err != nil || dcg[group].State != "Stable" || len(dcg[group].Members) != 1 {
		t.Fatalf("ConsumerGroupDescribe %s: %v %+v, want a Stable consumer-protocol group of one member", group, err, dcg[group])
	}

	out, listed := k.run(t, "", "get", "consumer-groups", "-o", "wide"), false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == group && f[1] == "consumer" {
			listed = true
		}
	}
	if !listed {
		t.Fatalf("kafkactl get consumer-groups -o wide: %q, want %s with protocol type consumer", out, group)
	}
	g := kctlJSON[kctlGroup](t, k, "describe", "consumer-group", group)
	same(t, "kafkactl describe consumer-group of a consumer-protocol group", [2]any{g.State, g.offsets(topic)}, [2]any{"Dead", map[int32]int64{0: 1, 1: 1}})
	k.fail(t, "(state: Dead)", "reset", "consumer-group-offset", group, "--topic", topic, "--oldest", "--execute")
	k.fail(t, "not empty", "delete", "consumer-group", group)
	same(t, "committed offsets after kafkactl's refusals", chk.committed(group, topic), map[int32]int64{0: 1, 1: 1})

	member.Close()
	testkit.Eventually(t, extTimeout, "the group to be empty once its member left", func() bool {
		adm, actx, done := chk.adm()
		defer done()
		dcg, err := adm.DescribeConsumerGroups(actx, group)
		return err == nil && dcg[group].State == "Empty"
	})
	k.run(t, "", "delete", "consumer-group", group)
	same(t, "groups after kafkactl delete consumer-group", chk.groups(), []string{})
	same(t, "the deleted group's offsets", chk.committed(group, topic), map[int32]int64{})
}
