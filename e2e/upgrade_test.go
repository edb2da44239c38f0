package e2e

// Upgrades: data directories written by the previous version of Cohort
// (e2e/testdata/upgrade, made by e2e/fixture/gen at b37602b) open with
// this one and serve everything the previous version wrote, then take
// new writes that a restart keeps.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/e2e/fixture"
	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// upgradeFixtures are the fixtures in e2e/testdata/upgrade: a single
// node's data directory, and a cluster node's with its etcd's.
var upgradeFixtures = []string{"single", "cluster"}

// TestUpgrade opens each fixture with this version: the single node's
// data directory, or the cluster node's with an etcd 3.4 process on the
// fixture's etcd data directory. Everything the manifest lists must be
// served as the previous version served it (fixture.Verify: topics,
// configs and ids, every record under both isolation levels, groups with
// their types, states, epochs and committed offsets, absent groups,
// transactions, producers, SCRAM users and logins, ACLs and what they
// allow, quotas, organisations and their members, the cluster id). On
// the single fixture it also checks that Verify reports a mismatch in
// each of those. Then the node takes new writes of every kind (a
// commit, a topic and records, a transaction of an old transactional id,
// a user, an organisation, a quota, an ACL; groups resume consuming), and
// serves the old state and the new after a restart (of etcd too).
func TestUpgrade(t *testing.T) {
	longTest(t)
	for _, name := range upgradeFixtures {
		t.Run(name, func(t *testing.T) { testUpgrade(t, name) })
	}
}

func testUpgrade(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := filepath.Join(testkit.ModuleRoot(), "e2e", "testdata", "upgrade")
	m, err := fixture.Load(filepath.Join(src, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := fixture.Extract(filepath.Join(src, name+".tar.gz"), work); err != nil {
		t.Fatal(err)
	}
	u := &upgradeNode{t: t, m: m, dir: filepath.Join(work, m.Server.DataDir)}
	if c := m.Server.Cluster; c != nil {
		u.etcd = etcdtest.StartDataDir(t, filepath.Join(work, c.EtcdDataDir), c.EtcdName)
	}
	t.Cleanup(u.stop) // after etcd's Cleanup, so it runs before etcd is killed
	u.start(ctx)
	verifyUpgrade(ctx, t, "as written", m, u.conn)
	if t.Failed() {
		t.FailNow() // what follows builds on it
	}
	if name == "single" {
		checkVerifyDetects(ctx, t, m, u.conn)
	}

	after := writeAfterUpgrade(ctx, t, m, u.conn)
	verifyUpgrade(ctx, t, "with the new writes", after, u.conn)
	u.stop()
	if u.etcd != nil {
		// The whole cluster restarts: etcd on other ports.
		u.etcd.Stop()
		u.etcd.Restart()
	}
	u.start(ctx)
	verifyUpgrade(ctx, t, "after a restart", after, u.conn)
}

// verifyUpgrade fails t with every difference between m and what the
// node at conn serves.
func verifyUpgrade(ctx context.Context, t *testing.T, when string, m *fixture.Manifest, conn fixture.Conn) {
	t.Helper()
	start := time.Now()
	errs := fixture.Verify(ctx, m, conn)
	for _, err := range errs {
		t.Errorf("%s: %v", when, err)
	}
	t.Logf("%s: verified in %v, %d differences", when, time.Since(start).Round(time.Millisecond), len(errs))
}

// upgradeNode is this version's node on a fixture's data directory.
type upgradeNode struct {
	t    *testing.T
	m    *fixture.Manifest
	dir  string
	etcd *etcdtest.DataDirMember
	n    *node.Node
	conn fixture.Conn
}

// start starts the node and waits until it serves every shard.
func (u *upgradeNode) start(ctx context.Context) {
	u.t.Helper()
	var endpoints []string
	if u.etcd != nil {
		endpoints = u.etcd.Endpoints()
	}
	cfg := fixture.NodeConfig(u.m.Server, u.dir, endpoints)
	cfg.Logger = slog.New(slog.NewTextHandler(testLogWriter{u.t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := node.Start(cfg)
	if err != nil {
		u.t.Fatalf("start on the fixture: %v", err)
	}
	u.n, u.conn = n, fixture.ConnOf(n)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := fixture.WaitReady(rctx, u.conn); err != nil {
		u.t.Fatal(err)
	}
}

// stop shuts the node down cleanly, if it runs.
func (u *upgradeNode) stop() {
	u.t.Helper()
	if u.n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := u.n.Shutdown(ctx)
	u.n = nil
	if err != nil {
		u.t.Errorf("shutdown: %v", err)
	}
}

type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// cloneManifest is a deep copy of m.
func cloneManifest(t *testing.T, m *fixture.Manifest) *fixture.Manifest {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c fixture.Manifest
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// writeAfterUpgrade writes something of every kind to the upgraded node
// through real clients and returns m with those writes: a commit to an
// old group, a new topic with records from a new producer (whose id is
// above every old one), a transaction of an old transactional id (same
// producer id, a later epoch), a user, an organisation with the user in
// it, a quota, an ACL on the new topic that lets carol read it; then a
// classic and a KIP-848 group resume consuming where they left off.
func writeAfterUpgrade(ctx context.Context, t *testing.T, m *fixture.Manifest, conn fixture.Conn) *fixture.Manifest {
	t.Helper()
	after := cloneManifest(t, m)
	r := fixture.NewReader(conn, m.Server, m.Users)
	defer r.Close()
	adm, err := r.Admin("")
	if err != nil {
		t.Fatal(err)
	}

	// A commit to an old, empty classic group.
	res, err := adm.CommitOffsets(ctx, "orders-classic", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 1, Offset: 8, LeaderEpoch: -1}))
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("commit to orders-classic: %v", err)
	}
	g := groupOf(t, after, "", "orders-classic")
	for i, o := range g.Offsets {
		if o.Topic == "orders" && o.Partition == 1 {
			g.Offsets[i] = fixture.Offset{Topic: "orders", Partition: 1, At: 9, LeaderEpoch: -1}
		}
	}

	// A new topic, and records from a new idempotent producer.
	const topic = "after-upgrade"
	cr, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("-1"), "cleanup.policy": kadm.StringPtr("compact")}, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	nt := fixture.Topic{Name: topic, Partitions: 2, Configs: map[string]string{"retention.ms": "-1", "cleanup.policy": "compact"}}
	prod := mustClient(t, r.PlainOpts(kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	ts := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		rec := &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "after the upgrade %d", i), Timestamp: ts}
		if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
		nt.Records = append(nt.Records, fixture.FromKgo(rec))
	}
	pid, _, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pid <= m.MaxProducerID {
		t.Errorf("new producer id %d, not above the fixture's largest, %d: producer ids were handed out again", pid, m.MaxProducerID)
	}

	// A transaction of an old transactional id: InitProducerId finds its
	// producer id and bumps its epoch.
	old := txnOf(t, after, "", "txn-app-tid")
	tx := mustClient(t, r.PlainOpts(kgo.TransactionalID(old.ID), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	tpid, tepoch, err := tx.ProducerID(ctx)
	if err != nil {
		t.Fatalf("InitProducerId of %s: %v", old.ID, err)
	}
	if tpid != old.ProducerID || tepoch <= old.ProducerEpoch {
		t.Errorf("InitProducerId of %s: producer %d epoch %d, want producer %d at an epoch above %d", old.ID, tpid, tepoch, old.ProducerID, old.ProducerEpoch)
	}
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	// Keyed: the topic is compacted, which refuses keyless records.
	rec := &kgo.Record{Topic: topic, Partition: 0, Key: []byte("tk"), Value: []byte("transactional, after the upgrade"), Timestamp: ts}
	if err := tx.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	nt.Records = append(nt.Records, fixture.FromKgo(rec))

	// A user, an organisation with the user in it, its quota, an ACL.
	erin := fixture.User{Name: "erin", Password: "erin-after-upgrade", Org: "umbrella", Credentials: []fixture.Credential{{Mechanism: "SCRAM-SHA-256", Iterations: 4096}}}
	ur, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: erin.Name, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: erin.Password}})
	if err == nil {
		err = ur.Error()
	}
	if err != nil {
		t.Fatalf("create user erin: %v", err)
	}
	after.Users = append(after.Users, erin)
	slices.SortFunc(after.Users, func(a, b fixture.User) int { return strings.Compare(a.Name, b.Name) })
	adminAPI(ctx, t, conn, "POST", "/api/v1/orgs", `{"name":"umbrella"}`, http.StatusCreated)
	adminAPI(ctx, t, conn, "PUT", "/api/v1/orgs/umbrella/members/User:erin", "", http.StatusOK)
	umbrella := "umbrella"
	qr, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "org", Name: &umbrella}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "max_groups", Value: 7}}}})
	if err != nil || len(qr) != 1 || qr[0].Err != nil {
		t.Fatalf("set umbrella's quota: %v %v", err, qr)
	}
	after.Quotas = append(after.Quotas, fixture.Quota{Org: &umbrella, Values: map[string]float64{"max_groups": 7}})
	fixture.SortQuotas(after.Quotas)
	acl := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:carol", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	acl.Creations = append(acl.Creations, c)
	cl, _ := r.Client("")
	aresp, err := acl.RequestWith(ctx, cl)
	if err != nil || aresp.Results[0].ErrorCode != 0 {
		t.Fatalf("create ACL: %v %v", err, aresp)
	}
	after.ACLs = append(after.ACLs, fixture.ACL{Principal: "User:carol", Host: "*", ResourceType: "TOPIC", ResourceName: topic, PatternType: "LITERAL", Operation: "READ", Permission: "ALLOW"})
	fixture.SortACLs(after.ACLs)
	after.Access = append(after.Access, fixture.Access{User: "carol", Topic: topic, Allowed: true})

	// What only the node knows: the new topic's id and ends, the
	// organisation's creation time, the transaction's epoch, the new
	// topic's producers.
	topics, err := r.Topics(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics {
		if tp.Name == topic {
			nt.ID, nt.Ends = tp.ID, tp.Ends
		}
	}
	if want := []int64{4, 2}; !slices.Equal(nt.Ends, want) {
		t.Errorf("%s ends at %v, want %v (two records and a transaction's record and marker; two records)", topic, nt.Ends, want)
	}
	after.Topics = append(after.Topics, nt)
	orgs, err := r.Orgs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after.Orgs = orgs
	if i := slices.IndexFunc(orgs, func(o fixture.Org) bool { return o.Name == "umbrella" }); i < 0 || !slices.Equal(orgs[i].Members, []string{"User:erin"}) {
		t.Errorf("organisations after creating umbrella: %v", orgs)
	}
	txns, err := r.Txns(ctx, "", []string{old.ID})
	if err != nil {
		t.Fatal(err)
	}
	*old = txns[0]
	if old.State != "CompleteCommit" || old.ProducerID != tpid {
		t.Errorf("%s after its commit: %+v", old.ID, *old)
	}
	producers, err := r.Producers(ctx, "", []fixture.Topic{nt})
	if err != nil {
		t.Fatal(err)
	}
	after.Producers = append(after.Producers, producers...)
	after.MaxProducerID = max(after.MaxProducerID, pid, tpid)

	resumeAfterUpgrade(ctx, t, after, r, prod)
	fixture.SortProducers(after.Producers)
	return after
}

// resumeAfterUpgrade has consumers of two old groups resume where they
// left off: orders-classic (classic) gets exactly the records of orders
// past its committed offsets, payments-848 (KIP-848) exactly a record
// prod appends to payments; each commits and leaves. It updates after
// with the record, the producer and the groups' new offsets and epoch.
func resumeAfterUpgrade(ctx context.Context, t *testing.T, after *fixture.Manifest, r *fixture.Reader, prod *kgo.Client) {
	t.Helper()
	payments := topicOf(t, after, "", "payments")
	rec := &kgo.Record{Topic: "payments", Partition: 0, Key: []byte("customer-9"), Value: []byte("a payment after the upgrade"), Timestamp: time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)}
	if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("produce to payments: %v", err)
	}
	payments.Records = append(payments.Records, fixture.FromKgo(rec))
	payments.Ends[0]++
	pid, epoch, _ := prod.ProducerID(ctx)
	after.Producers = append(after.Producers, fixture.Producer{Topic: "payments", Partition: 0, ProducerID: pid, ProducerEpoch: epoch, LastSequence: 0})

	for _, c := range []struct {
		group, topic string
		opts         []kgo.Opt
	}{
		{"orders-classic", "orders", nil},
		{"payments-848", "payments", []kgo.Opt{kgo.ServerSideBalancer()}},
	} {
		old := groupOf(t, after, "", c.group)
		tp := topicOf(t, after, "", c.topic)
		committed := map[int32]int64{}
		for _, o := range old.Offsets {
			committed[o.Partition] = o.At
		}
		var want []string
		for _, r := range tp.Records {
			if r.Offset >= committed[r.Partition] && !r.Aborted {
				want = append(want, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
			}
		}
		cons := mustClient(t, r.PlainOpts(append(c.opts, kgo.ConsumerGroup(c.group), kgo.ConsumeTopics(c.topic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))...)...)
		// As many records as are wanted, or what came in 15 s.
		var got []string
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		for len(got) < len(want) && cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			fs.EachError(func(topic string, p int32, err error) {
				if cctx.Err() == nil {
					t.Fatalf("group %s: fetch %s/%d: %v", c.group, topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d@%d", r.Partition, r.Offset)) })
		}
		cancel()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("group %s resumed with %v, want %v (after its committed offsets %v)", c.group, got, want, committed)
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("group %s: commit: %v", c.group, err)
		}
		cons.Close() // leaves the group
		groups, err := r.Groups(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(groups, func(g fixture.Group) bool { return g.Name == c.group })
		if i < 0 {
			t.Fatalf("group %s gone after it resumed: %v", c.group, groups)
		}
		for _, o := range groups[i].Offsets {
			if o.Topic != c.topic || o.At != tp.Ends[o.Partition] {
				t.Errorf("group %s committed %s/%d at %d, want the end, %d", c.group, o.Topic, o.Partition, o.At, tp.Ends[o.Partition])
			}
		}
		*old = groups[i]
	}
}

// entryOf returns the entry of all that match picks, failing the test
// with what when the manifest has none.
func entryOf[T any](t *testing.T, all []T, what string, match func(*T) bool) *T {
	t.Helper()
	for i := range all {
		if match(&all[i]) {
			return &all[i]
		}
	}
	t.Fatalf("the manifest has no %s", what)
	return nil
}

func topicOf(t *testing.T, m *fixture.Manifest, org, name string) *fixture.Topic {
	t.Helper()
	return entryOf(t, m.Topics, fmt.Sprintf("topic %s in %q", name, org), func(x *fixture.Topic) bool { return x.Org == org && x.Name == name })
}

func groupOf(t *testing.T, m *fixture.Manifest, org, name string) *fixture.Group {
	t.Helper()
	return entryOf(t, m.Groups, fmt.Sprintf("group %s in %q", name, org), func(x *fixture.Group) bool { return x.Org == org && x.Name == name })
}

func txnOf(t *testing.T, m *fixture.Manifest, org, id string) *fixture.Txn {
	t.Helper()
	return entryOf(t, m.Transactions, fmt.Sprintf("transactional id %s in %q", id, org), func(x *fixture.Txn) bool { return x.Org == org && x.ID == id })
}

func adminAPI(ctx context.Context, t *testing.T, conn fixture.Conn, method, path, body string, want int) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+conn.HTTP+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d", method, path, resp.Status, want)
	}
}

// checkVerifyDetects runs Verify once with a manifest changed in every
// kind of item, and checks that each change is reported: no check of
// Verify's passes whatever the node serves.
func checkVerifyDetects(ctx context.Context, t *testing.T, m *fixture.Manifest, conn fixture.Conn) {
	t.Helper()
	bad := cloneManifest(t, m)
	topic := func(org, name string) *fixture.Topic {
		for i := range bad.Topics {
			if bad.Topics[i].Org == org && bad.Topics[i].Name == name {
				return &bad.Topics[i]
			}
		}
		t.Fatalf("no topic %s in %q", name, org)
		return nil
	}
	record := func(tp *fixture.Topic, partition int32, aborted bool) *fixture.Record {
		for i := range tp.Records {
			if r := &tp.Records[i]; r.Partition == partition && r.Aborted == aborted {
				return r
			}
		}
		t.Fatalf("no record in %s/%d (aborted %v)", tp.Name, partition, aborted)
		return nil
	}
	str := func(s string) *string { return &s }
	changes := []struct {
		change func()
		want   string // in one of Verify's errors
	}{
		{func() { bad.ClusterID += "x" }, "cluster id"},
		{func() { topic("", "orders").Configs["retention.ms"] = "1" }, "topics of default: orders differs"},
		{func() { topic("", "payments").Partitions = 3 }, "topics of default: payments differs"},
		{func() { topic("", "grown").ID = strings.Repeat("0", 32) }, "topics of default: grown differs"},
		{func() { topic("", "empty").Ends[3] = 1 }, "topics of default: empty differs"},
		{func() { topic("globex", "events").Configs["cleanup.policy"] = "compact" }, "topics of globex: events differs"},
		{func() { record(topic("", "orders"), 0, false).Value += "!" }, "records of default/orders (read_committed): 0@0 differs"},
		{func() { record(topic("", "orders"), 1, false).Timestamp++ }, "records of default/orders (read_uncommitted): 1@0 differs"},
		{func() { record(topic("", "orders"), 2, false).Headers = nil }, "records of default/orders (read_committed): 2@0 differs"},
		{func() { record(topic("", "payments"), 1, false).Key = nil }, "records of default/payments (read_committed): 1@0 differs"},
		{func() { record(topic("", "audit"), 1, false).Aborted = true }, "records of default/audit (read_committed): 1@0 not in the manifest"},
		{func() { record(topic("", "audit"), 0, true).Aborted = false }, "records of default/audit (read_committed)"},
		{func() { record(topic("acme", "events"), 1, false).Value = "x" }, "records of acme/events (read_committed): 1@0 differs"},
		{func() { groupOf(t, bad, "", "orders-classic").Offsets[1].At++ }, "groups of default: orders-classic differs"},
		{func() { groupOf(t, bad, "acme", "acme-orders").Offsets[0].Metadata = "x" }, "groups of acme: acme-orders differs"},
		{func() { groupOf(t, bad, "", "payments-848").Epoch++ }, "groups of default: payments-848 differs"},
		{func() { groupOf(t, bad, "", "txn-app").Offsets[0].LeaderEpoch++ }, "groups of default: txn-app differs"},
		{func() { groupOf(t, bad, "globex", "shared-name").Offsets[0].At = 0 }, "groups of globex: shared-name differs"},
		{func() {
			bad.Groups = slices.DeleteFunc(bad.Groups, func(g fixture.Group) bool { return g.Org == "" && g.Name == "simple-admin" })
		}, "groups of default: simple-admin not in the manifest"},
		{func() {}, "admin API groups of default"},
		{func() {
			bad.AbsentGroups = append(bad.AbsentGroups, fixture.GroupRef{Org: "acme", Name: "acme-stream"})
		}, "org acme: group acme-stream should not exist"},
		{func() { bad.ACLs[0].Permission = "DENY" }, "ACLs of"},
		{func() { bad.Users[0].Credentials[0].Iterations++ }, "SCRAM users: " + bad.Users[0].Name + " differs"},
		{func() { bad.Users[1].Password = "wrong" }, "user " + bad.Users[1].Name + " cannot log in"},
		{func() { bad.DeletedUsers = append(bad.DeletedUsers, bad.Users[2].Name) }, "deleted user " + bad.Users[2].Name + " is back"},
		{func() { bad.Quotas[0].Values["max_members_per_group"]++ }, "quotas: <default entity> differs"},
		{func() {
			bad.Quotas = append(bad.Quotas, fixture.Quota{Org: str("initech"), Values: map[string]float64{"max_groups": 5}})
		}, "quotas: initech missing"},
		{func() { bad.Orgs[0].CreatedAt = bad.Orgs[0].CreatedAt.Add(time.Millisecond) }, "organisations: " + bad.Orgs[0].Name + " differs"},
		{func() { bad.Orgs[1].Members = nil }, "organisations: " + bad.Orgs[1].Name + " differs"},
		{func() { bad.DeletedOrgs = append(bad.DeletedOrgs, "globex") }, "deleted organisation globex is back"},
		{func() { bad.DeletedTopics = append(bad.DeletedTopics, fixture.TopicRef{Name: "grown"}) }, "deleted topic grown is back"},
		{func() { txnOf(t, bad, "", "txn-aborter-tid").State = "CompleteCommit" }, "transactions of default: txn-aborter-tid differs"},
		{func() { txnOf(t, bad, "acme", "acme-tid").ProducerEpoch++ }, "transactions of acme: acme-tid differs"},
		{func() { bad.Producers[0].LastSequence++ }, "producers of"},
		{func() { bad.Access[1].Allowed = !bad.Access[1].Allowed }, "access: " + bad.Access[1].User + " fetching " + bad.Access[1].Topic},
		{func() { bad.Access[0].Allowed = !bad.Access[0].Allowed }, "access: " + bad.Access[0].User + " fetching " + bad.Access[0].Topic},
	}
	for _, c := range changes {
		c.change()
	}
	errs := fixture.Verify(ctx, bad, conn)
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	for _, c := range changes {
		if !slices.ContainsFunc(msgs, func(msg string) bool { return strings.Contains(msg, c.want) }) {
			t.Errorf("Verify missed a change: no error says %q", c.want)
		}
	}
	if t.Failed() {
		t.Logf("Verify's errors:\n%s", strings.Join(msgs, "\n"))
	}
}
