package e2e

// Organisations (tenancy) through the Kafka API: two organisations and
// the default one use the same topic and group names at once over
// SASL_PLAINTEXT, and each sees, reads, commits to and deletes only its
// own.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tenancyUsers are the users of the tenancy tests; tenancyOrg is each
// one's organisation ("" the default). root and groot are super users of
// the ACL test, in acme and globex.
var (
	tenancyUsers = map[string]string{"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret",
		"admin": "admin-secret", "root": "root-secret", "groot": "groot-secret"}
	tenancyOrg = map[string]string{"alice": "acme", "bob": "globex", "carol": "", "admin": "", "root": "acme", "groot": "globex"}
)

// startTenancyNode starts a secure node from cfg with tenancyUsers and
// the organisations acme and globex, made through the node's registry.
func startTenancyNode(t *testing.T, cfg node.Config) *testkit.SecureNode {
	t.Helper()
	n := testkit.StartSecureNode(t, cfg, tenancyUsers)
	orgs := n.Orgs()
	for _, o := range []string{"acme", "globex"} {
		if err := orgs.Create(o); err != nil {
			t.Fatalf("create organisation %s: %v", o, err)
		}
	}
	for u, o := range tenancyOrg {
		if o == "" {
			continue
		}
		if err := orgs.SetMember(o, "User:"+u); err != nil {
			t.Fatalf("put %s in %s: %v", u, o, err)
		}
	}
	return n
}

// tenantClient is a franz-go client of user over SASL_PLAINTEXT
// (SCRAM-SHA-256).
func tenantClient(t *testing.T, n *testkit.SecureNode, user string, extra ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", user, tenancyUsers[user],
		append([]kgo.Opt{kgo.ClientID("tenancy-" + user)}, extra...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// tenantWork is what one user does: make topic events with partitions
// partitions, produce records values "<user>-<i>", consume them all in
// the classic group orders and the KIP-848 group streams, checking every
// value is the user's, and commit.
func tenantWork(ctx context.Context, t *testing.T, n *testkit.SecureNode, user string, partitions int32, records int) error {
	cl, adm := tenantClient(t, n, user)
	if r, err := adm.CreateTopic(ctx, partitions, 1, nil, "events"); err != nil || r.Err != nil {
		return fmt.Errorf("%s: create events: %v %v", user, err, r.Err)
	}
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, "%s-%d", user, i)}).FirstErr(); err != nil {
			return fmt.Errorf("%s: produce: %w", user, err)
		}
	}
	for _, g := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"orders", nil},
		{"streams", []kgo.Opt{kgo.ServerSideBalancer()}}, // KIP-848: ConsumerGroupHeartbeat
	} {
		cons, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", user, tenancyUsers[user],
			append(g.opts, kgo.ClientID("tenancy-"+user), kgo.ConsumerGroup(g.name), kgo.ConsumeTopics("events"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)...)
		if err != nil {
			return err
		}
		err = consumeOwn(ctx, cons, user, g.name, records)
		cons.Close() // leaves the group
		if err != nil {
			return err
		}
	}
	return nil
}

// consumeOwn consumes records records with cons, checking each is user's,
// and commits them.
func consumeOwn(ctx context.Context, cons *kgo.Client, user, group string, records int) error {
	got := 0
	for got < records {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: group %s consumed %d of %d: %w", user, group, got, records, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("%s: group %s fetch: %w", user, group, ferr)
		}
		var bad []string
		fs.EachRecord(func(r *kgo.Record) {
			if !strings.HasPrefix(string(r.Value), user+"-") {
				bad = append(bad, string(r.Value))
			}
		})
		if bad != nil {
			return fmt.Errorf("%s: group %s consumed other organisations' records %q", user, group, bad)
		}
		got += fs.NumRecords()
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("%s: group %s commit: %w", user, group, err)
		}
	}
	if got != records {
		return fmt.Errorf("%s: group %s consumed %d records, want %d", user, group, got, records)
	}
	return nil
}

// committed is the sum of a group's committed offsets of topic events.
func committed(ctx context.Context, t *testing.T, adm *kadm.Client, group string) int64 {
	t.Helper()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != "events" {
			t.Errorf("group %s has offsets of topic %q", group, o.Topic)
		}
		if o.Err == nil {
			sum += o.At
		}
	})
	return sum
}

// endOffsets is the sum of topic events' end offsets (ListOffsets).
func endOffsets(ctx context.Context, t *testing.T, adm *kadm.Client) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		sum += o.Offset
	})
	return sum
}

// TestTenancyIsolation: alice (acme), bob (globex) and carol (the default
// organisation) each make a topic events, produce to it and consume it in
// the groups orders (classic) and streams (KIP-848), all at once. Each
// reads only its own records; Metadata, ListGroups, DescribeGroups,
// OffsetFetch, ListOffsets and DescribeProducers show only its own; the
// other organisations' topic ids are unknown (Metadata and Fetch by id),
// an internal name is no name; Sarama as bob works in globex only; and
// DeleteGroups and DeleteTopics of the shared names delete only the
// caller's.
func TestTenancyIsolation(t *testing.T) {
	longTest(t)
	// Each tenant's two groups have one member each: the default 3 s initial
	// rebalance delay would only wait for members that never come.
	var cfg node.Config
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := startTenancyNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	users := []string{"alice", "bob", "carol"}
	partitions := map[string]int32{"alice": 2, "bob": 3, "carol": 1}
	records := map[string]int{"alice": 11, "bob": 7, "carol": 5}

	var wg sync.WaitGroup
	errs := make(chan error, len(users))
	for _, u := range users {
		wg.Go(func() { errs <- tenantWork(ctx, t, n, u, partitions[u], records[u]) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	adms := map[string]*kadm.Client{}
	cls := map[string]*kgo.Client{}
	ids := map[string][16]byte{}
	producers := map[int64]string{}
	for _, u := range users {
		cls[u], adms[u] = tenantClient(t, n, u)
		adm := adms[u]
		md, err := adm.Metadata(ctx)
		if err != nil {
			t.Fatalf("%s: metadata: %v", u, err)
		}
		var names []string
		for name, td := range md.Topics {
			if name == "__consumer_offsets" && tenancyOrg[u] == "" {
				continue // the default organisation's only
			}
			names = append(names, name)
			if name == "events" {
				ids[u] = td.ID
				if len(td.Partitions) != int(partitions[u]) {
					t.Errorf("%s: events has %d partitions, want its own %d", u, len(td.Partitions), partitions[u])
				}
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"events"}) {
			t.Errorf("%s: Metadata lists %v, want only its own events", u, names)
		}

		groups, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatalf("%s: list groups: %v", u, err)
		}
		if got := groups.Groups(); !slices.Equal(got, []string{"orders", "streams"}) {
			t.Errorf("%s: ListGroups %v, want its own orders and streams", u, got)
		}
		dg, err := adm.DescribeGroups(ctx, "orders")
		if err != nil || dg["orders"].Err != nil {
			t.Fatalf("%s: describe orders: %v %v", u, err, dg["orders"].Err)
		}
		if st := dg["orders"].State; st != "Empty" {
			t.Errorf("%s: orders is %s, want Empty (its own members have left)", u, st)
		}
		for _, g := range []string{"orders", "streams"} {
			if got := committed(ctx, t, adm, g); got != int64(records[u]) {
				t.Errorf("%s: group %s committed %d, want its own %d", u, g, got, records[u])
			}
		}
		if got := endOffsets(ctx, t, adm); got != int64(records[u]) {
			t.Errorf("%s: events ends at %d, want its own %d records", u, got, records[u])
		}

		dp := kmsg.NewPtrDescribeProducersRequest()
		dpt := kmsg.NewDescribeProducersRequestTopic()
		dpt.Topic = "events"
		for p := range partitions[u] {
			dpt.Partitions = append(dpt.Partitions, p)
		}
		dp.Topics = append(dp.Topics, dpt)
		resp := aclRaw[*kmsg.DescribeProducersResponse](t, cls[u], dp)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Errorf("%s: DescribeProducers events/%d: %v", u, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
				for _, ap := range rp.ActiveProducers {
					if owner, ok := producers[ap.ProducerID]; ok && owner != u {
						t.Errorf("%s: DescribeProducers shows %s's producer %d", u, owner, ap.ProducerID)
					}
					producers[ap.ProducerID] = u
				}
			}
		}
	}
	if ids["alice"] == ids["bob"] || ids["alice"] == ids["carol"] || ids["bob"] == ids["carol"] {
		t.Fatalf("the three events topics share ids: %v", ids)
	}
	if len(producers) < len(users) {
		t.Errorf("DescribeProducers found producers %v, want at least one per user", producers)
	}

	// alice names bob's topic by id: unknown, in Metadata and in Fetch.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.TopicID = ids["bob"]
	mreq.Topics = append(mreq.Topics, mt)
	mresp := aclRaw[*kmsg.MetadataResponse](t, cls["alice"], mreq)
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("alice: Metadata of bob's topic id: %+v, want UNKNOWN_TOPIC_ID", mresp.Topics)
	}
	freq := kmsg.NewPtrFetchRequest()
	freq.SetVersion(13)
	freq.ReplicaID, freq.MaxBytes, freq.MaxWaitMillis = -1, 1<<20, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = ids["bob"]
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = 0, 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fresp := aclRaw[*kmsg.FetchResponse](t, cls["alice"], freq)
	if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 1 || fresp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code ||
		len(fresp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Errorf("alice: Fetch of bob's topic id: %+v, want UNKNOWN_TOPIC_ID and no records", fresp.Topics)
	}
	// Nor can alice forge bob's internal name: '/' is no topic name.
	if ends, err := adms["alice"].ListEndOffsets(ctx, "globex/events"); err == nil {
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				t.Errorf("alice: ListOffsets of globex/events answered offset %d", o.Offset)
			}
		})
	}

	// Sarama, as bob over SASL_SSL (SCRAM-SHA-512), on globex's events.
	runSaramaSASL(t, saslSpec{Bootstrap: n.Addr("SASL_SSL"), Mechanism: "SCRAM-SHA-512", User: "bob", Password: tenancyUsers["bob"],
		CA: n.CA.File, Topic: "events", Group: "sarama", Records: 40})
	if got := endOffsets(ctx, t, adms["bob"]); got != int64(records["bob"]+40) {
		t.Errorf("bob: events ends at %d after Sarama, want %d", got, records["bob"]+40)
	}
	for _, u := range []string{"alice", "carol"} {
		if got := endOffsets(ctx, t, adms[u]); got != int64(records[u]) {
			t.Errorf("%s: events ends at %d after bob's Sarama run, want its own %d", u, got, records[u])
		}
		if groups, err := adms[u].ListGroups(ctx); err != nil || slices.Contains(groups.Groups(), "sarama") {
			t.Errorf("%s: ListGroups %v %v shows bob's sarama group", u, groups.Groups(), err)
		}
	}

	// alice deletes her group orders and her topic events: bob's and
	// carol's of the same names, and their offsets, stay.
	dr, err := adms["alice"].DeleteGroups(ctx, "orders")
	if err != nil || dr["orders"].Err != nil {
		t.Fatalf("alice: delete orders: %v %v", err, dr["orders"].Err)
	}
	tr, err := adms["alice"].DeleteTopics(ctx, "events")
	if err != nil || tr["events"].Err != nil {
		t.Fatalf("alice: delete events: %v %v", err, tr["events"].Err)
	}
	if got := committed(ctx, t, adms["alice"], "streams"); got != 0 {
		t.Errorf("alice: streams keeps %d of the deleted events' offsets", got)
	}
	for _, u := range []string{"bob", "carol"} {
		md, err := adms[u].Metadata(ctx, "events")
		if err != nil || md.Topics["events"].Err != nil || md.Topics["events"].ID != ids[u] {
			t.Errorf("%s: events after alice deleted hers: %v %+v", u, err, md.Topics["events"])
		}
		groups, err := adms[u].ListGroups(ctx)
		if err != nil || !slices.Contains(groups.Groups(), "orders") {
			t.Errorf("%s: ListGroups %v %v lost orders to alice's DeleteGroups", u, groups.Groups(), err)
		}
		for _, g := range []string{"orders", "streams"} {
			if got := committed(ctx, t, adms[u], g); got != int64(records[u]) {
				t.Errorf("%s: group %s committed %d after alice's deletions, want %d", u, g, got, records[u])
			}
		}
	}
}

// TestTenancyACLs: with the authorizer on, the ACLs of acme (made by
// root, a super user in acme) are invisible to globex and to the default
// organisation, and grant nothing to bob even where they name him;
// globex's super user's DeleteAcls of everything removes globex's only.
func TestTenancyACLs(t *testing.T) {
	n := startTenancyNode(t, node.Config{Authorizer: true, SuperUsers: []string{"User:admin", "User:ANONYMOUS", "User:root", "User:groot"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, root := tenantClient(t, n, "root")
	_, groot := tenantClient(t, n, "groot")
	_, admin := tenantClient(t, n, "admin")
	alice, aliceAdm := tenantClient(t, n, "alice")
	bob, bobAdm := tenantClient(t, n, "bob")

	create := func(who string, adm *kadm.Client, b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("%s: CreateACLs: %v", who, err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("%s: CreateACLs %+v: %v", who, r, r.Err)
			}
		}
	}
	// acme's: alice, bob by name and everyone may do all on topic events
	// and read group orders.
	create("root", root, kadm.NewACLs().Topics("events").Groups("orders").Allow("User:alice", "User:bob", "User:*").Operations(kadm.OpAll))
	// globex's: bob may describe the cluster (and so its ACLs).
	create("groot", groot, kadm.NewACLs().Clusters().Allow("User:bob").Operations(kadm.OpDescribe))

	all := kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	count := func(who string, adm *kadm.Client) int {
		t.Helper()
		res, err := adm.DescribeACLs(ctx, all)
		if err != nil {
			t.Fatalf("%s: DescribeACLs: %v", who, err)
		}
		c := 0
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("%s: DescribeACLs: %v", who, r.Err)
			}
			c += len(r.Described)
		}
		return c
	}
	if got := count("root", root); got != 6 {
		t.Errorf("root (acme) describes %d ACLs, want acme's 6", got)
	}
	if got := count("bob", bobAdm); got != 1 {
		t.Errorf("bob (globex) describes %d ACLs, want globex's 1", got)
	}
	if got := count("admin", admin); got != 0 {
		t.Errorf("admin (default) describes %d ACLs, want none", got)
	}

	// alice works in acme.
	if r, err := aliceAdm.CreateTopic(ctx, 1, 1, nil, "events"); err != nil || r.Err != nil {
		t.Fatalf("alice: create events: %v %v", err, r.Err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatalf("alice: produce: %v", err)
	}
	// bob gets nothing from acme's ACLs, though they name him: globex's
	// events, made by its super user, is not his to describe or write.
	if r, err := groot.CreateTopic(ctx, 1, 1, nil, "events"); err != nil || r.Err != nil {
		t.Fatalf("groot: create events: %v %v", err, r.Err)
	}
	if md, err := bobAdm.Metadata(ctx, "events"); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(md.Topics["events"].Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob: Metadata of events: %v %v, want TOPIC_AUTHORIZATION_FAILED", err, md.Topics["events"].Err)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("b")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob: produce to events: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if r, err := bobAdm.CreateTopic(ctx, 1, 1, nil, "orders-topic"); err == nil && !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob: create topic: %v, want TOPIC_AUTHORIZATION_FAILED", r.Err)
	}

	// globex's super user deletes every ACL: globex's one, none of
	// acme's.
	dr, err := groot.DeleteACLs(ctx, all)
	if err != nil {
		t.Fatalf("groot: DeleteACLs: %v", err)
	}
	deleted := 0
	for _, r := range dr {
		deleted += len(r.Deleted)
	}
	if deleted != 1 {
		t.Errorf("groot deleted %d ACLs, want globex's 1", deleted)
	}
	if got := count("root", root); got != 6 {
		t.Errorf("root (acme) describes %d ACLs after groot's DeleteAcls, want 6", got)
	}
}

// TestTenancyTransactions: alice (acme) and bob (globex) use the same
// transactional id and topic name at once: alice commits, bob aborts. A
// read_committed consumer of alice sees exactly her records; each
// organisation's topic holds its own five records and one marker (the
// markers reached the organisation's topic, not the default one's);
// DescribeTransactions and ListTransactions show each its own
// transaction.
func TestTenancyTransactions(t *testing.T) {
	n := startTenancyNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	commit := map[string]bool{"alice": true, "bob": false}
	for u := range commit {
		_, adm := tenantClient(t, n, u)
		if r, err := adm.CreateTopic(ctx, 2, 1, nil, "events"); err != nil || r.Err != nil {
			t.Fatalf("%s: create events: %v %v", u, err, r.Err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(commit))
	for u, c := range commit {
		p, _ := tenantClient(t, n, u, kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("events"))
		wg.Go(func() {
			errs <- func() error {
				if err := p.BeginTransaction(); err != nil {
					return fmt.Errorf("%s: begin: %w", u, err)
				}
				for i := range 5 {
					if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", u, i)}).FirstErr(); err != nil {
						return fmt.Errorf("%s: produce: %w", u, err)
					}
				}
				if err := p.EndTransaction(ctx, kgo.TransactionEndTry(c)); err != nil {
					return fmt.Errorf("%s: end: %w", u, err)
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for u, c := range commit {
		_, adm := tenantClient(t, n, u)
		ds, err := adm.DescribeTransactions(ctx, "tx")
		want := "CompleteAbort"
		if c {
			want = "CompleteCommit"
		}
		if err != nil || ds["tx"].Err != nil || ds["tx"].State != want {
			t.Errorf("%s: DescribeTransactions: %v %+v, want %s", u, err, ds["tx"], want)
		}
		ls, err := adm.ListTransactions(ctx, nil, nil)
		if err != nil || !slices.Equal(ls.TransactionalIDs(), []string{"tx"}) {
			t.Errorf("%s: ListTransactions: %v %v", u, ls.TransactionalIDs(), err)
		}
		cons, _ := tenantClient(t, n, u, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeTopics("events"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		// The partitions' last stable offsets are past the markers:
		// what a read_committed consumer reads up to them is all there
		// is.
		ends, err := adm.ListEndOffsets(ctx, "events")
		if err != nil {
			t.Fatalf("%s: end offsets: %v", u, err)
		}
		var total int64
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if total != 6 { // five records and a marker, in one organisation's topic
			t.Errorf("%s: events ends at %d in all, want its own 5 records and 1 marker", u, total)
		}
		var got []string
		for c && len(got) < 5 {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: consumed %v", u, got)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		for _, v := range got {
			if !strings.HasPrefix(v, u+"-") {
				t.Errorf("%s: read_committed consumer read %q", u, v)
			}
		}
	}
}
