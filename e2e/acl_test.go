package e2e

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assigner"
	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// aclUsers are the users of the ACL tests: admin is the super user.
var aclUsers = map[string]string{"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}

// startACLNode starts a node with authorization on, User:admin its
// super user, and aclUsers. User:ANONYMOUS is a super user too, as an
// operator bootstraps the first users over a loopback PLAINTEXT listener
// (AlterUserScramCredentials needs ALTER on the cluster).
func startACLNode(t *testing.T) *testkit.SecureNode {
	t.Helper()
	cfg := node.Config{Authorizer: true, SuperUsers: []string{"User:admin", "User:ANONYMOUS"}}
	// The groups here have one member each: the default 3 s initial
	// rebalance delay would only wait for members that never come.
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	return testkit.StartSecureNode(t, cfg, aclUsers)
}

// aclClient is a kadm client of user over SASL_PLAINTEXT (SCRAM-SHA-256).
func aclClient(t *testing.T, n *testkit.SecureNode, user string, extra ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", user, aclUsers[user], extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func TestACLAPIs(t *testing.T) {
	n := startACLNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, admin := aclClient(t, n, "admin")
	_, alice := aclClient(t, n, "alice")

	// alice may neither create nor describe ACLs: CLUSTER ALTER and
	// DESCRIBE are nobody's but the super user's yet.
	res, err := alice.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice CreateACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, res)
	}
	all := kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	if d, err := alice.DescribeACLs(ctx, all); err != nil || len(d) == 0 || !errors.Is(d[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice DescribeACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, d)
	}

	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead),
		kadm.NewACLs().Groups("app-").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Topics("*").Deny("User:bob").Operations(kadm.OpAll),
		kadm.NewACLs().Clusters().Allow("User:alice").Operations(kadm.OpDescribe),
	} {
		res, err := admin.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("admin CreateACLs %+v: %v %s", r, r.Err, r.ErrMessage)
			}
		}
	}

	// Kafka's validation: the cluster has one name, a principal has a
	// type, a pattern is LITERAL or PREFIXED.
	bad := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
		p    string
	}{
		{kmsg.ACLResourceTypeCluster, "not-the-cluster", kmsg.ACLResourcePatternTypeLiteral, "User:alice"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "alice"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeMatch, "User:alice"},
		{kmsg.ACLResourceTypeTopic, "", kmsg.ACLResourcePatternTypeLiteral, "User:alice"},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType, cr.Principal = c.rt, c.name, c.pt, c.p
		cr.Host, cr.Operation, cr.PermissionType = "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		bad.Creations = append(bad.Creations, cr)
	}
	rawAdmin, _ := aclClient(t, n, "admin")
	resp, err := bad.RequestWith(ctx, rawAdmin)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("invalid creation %d: code %d, want INVALID_REQUEST", i, r.ErrorCode)
		}
	}

	// alice, with CLUSTER DESCRIBE now, describes; a MATCH filter on
	// topic orders finds the literal ACL and the wildcard one.
	d, err := alice.DescribeACLs(ctx, kadm.NewACLs().Topics("orders").Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternMatch))
	if err != nil || len(d) != 1 || d[0].Err != nil {
		t.Fatalf("alice DescribeACLs: %v %+v", err, d)
	}
	got := map[string]bool{}
	for _, a := range d[0].Described {
		got[a.Name+" "+a.Principal+" "+a.Operation.String()+" "+a.Permission.String()] = true
	}
	want := map[string]bool{"orders User:alice READ ALLOW": true, "* User:bob ALL DENY": true}
	if len(got) != len(want) || !got["orders User:alice READ ALLOW"] || !got["* User:bob ALL DENY"] {
		t.Fatalf("MATCH orders described %v, want %v", got, want)
	}
	// But alice may not delete (CLUSTER ALTER).
	if dr, err := alice.DeleteACLs(ctx, all); err != nil || len(dr) == 0 || !errors.Is(dr[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice DeleteACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, dr)
	}

	// admin deletes the prefixed group ACL; the rest stay.
	dr, err := admin.DeleteACLs(ctx, kadm.NewACLs().Groups("app-").Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil || len(dr) != 1 || dr[0].Err != nil || len(dr[0].Deleted) != 1 || dr[0].Deleted[0].Name != "app-" {
		t.Fatalf("admin DeleteACLs app-: %v %+v", err, dr)
	}
	d, err = admin.DescribeACLs(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, r := range d {
		if r.Err != nil {
			t.Fatalf("admin DescribeACLs: %v", r.Err)
		}
		count += len(r.Described)
	}
	if count != 3 {
		t.Fatalf("%d ACLs left, want 3: %+v", count, d)
	}
}

// TestACLAPIsWithoutAuthorizer: as Kafka without an authorizer, the ACL
// APIs answer SECURITY_DISABLED.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateACLs: %v %+v, want SECURITY_DISABLED", err, res)
	}
	d, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(d) == 0 || !errors.Is(d[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeACLs: %v %+v, want SECURITY_DISABLED", err, d)
	}
}

// aclRaw sends req straight to node 0 (no coordinator lookup, no
// retries) and returns the answer.
func aclRaw[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Broker(0).Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

func wantACLCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Errorf("%s: error code %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), code, want)
	}
}

// TestACLEnforcement is the ACL matrix: for each API Kafka authorizes,
// alice (granted) succeeds and bob (granted nothing) is refused with
// Kafka's error code, over SASL_PLAINTEXT with franz-go.
func TestACLEnforcement(t *testing.T) {
	n := startACLNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adminCl, admin := aclClient(t, n, "admin")
	aliceCl, _ := aclClient(t, n, "alice")
	bobCl, _ := aclClient(t, n, "bob")

	for _, topic := range []string{"orders", "secret"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead, kadm.OpWrite),
		kadm.NewACLs().Topics("alice-").Allow("User:alice").Operations(kadm.OpCreate).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Groups("app-").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Groups("app-del").Allow("User:alice").Operations(kadm.OpDelete),
		kadm.NewACLs().TransactionalIDs("tx-alice").Allow("User:alice").Operations(kadm.OpWrite),
		kadm.NewACLs().TransactionalIDs("tx-admin").Allow("User:alice").Operations(kadm.OpDescribe),
	} {
		res, err := admin.CreateACLs(ctx, b)
		if err != nil || res[0].Err != nil {
			t.Fatalf("create ACLs: %v %+v", err, res)
		}
	}
	td, err := admin.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][16]byte{}
	names := map[[16]byte]string{}
	for _, d := range td.Sorted() {
		ids[d.Topic], names[d.ID] = d.ID, d.Topic
	}
	// admin commits to groups alice may not see, and to secret in app-1.
	for _, g := range []string{"admin-group", "app-del"} {
		if _, err := admin.CommitOffsets(ctx, g, kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: 0})); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"app-1", "app-del"} {
		if _, err := admin.CommitOffsets(ctx, g, kadm.OffsetsFromRecords(kgo.Record{Topic: "secret", Partition: 0, Offset: 4})); err != nil {
			t.Fatal(err)
		}
	}

	// Produce: WRITE on the topic.
	if err := aliceCl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatalf("alice produce: %v", err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	if err := bobCl.ProduceSync(pctx, &kgo.Record{Topic: "orders", Value: []byte("b")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	pcancel()

	// Fetch: READ; ListOffsets: DESCRIBE.
	fetch := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.MaxWaitMillis = 1<<20, 0
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "orders", ids["orders"]
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
		req.Topics = []kmsg.FetchRequestTopic{ft}
		return aclRaw[*kmsg.FetchResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
	}
	wantACLCode(t, "alice fetch", fetch(aliceCl), nil)
	wantACLCode(t, "bob fetch", fetch(bobCl), kerr.TopicAuthorizationFailed)
	listOffsets := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "orders"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{lp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{lt}
		return aclRaw[*kmsg.ListOffsetsResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
	}
	wantACLCode(t, "alice list offsets", listOffsets(aliceCl), nil)
	wantACLCode(t, "bob list offsets", listOffsets(bobCl), kerr.TopicAuthorizationFailed)

	// DescribeProducers: READ on the topic, refused per partition.
	describeProducers := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
		return aclRaw[*kmsg.DescribeProducersResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
	}
	wantACLCode(t, "alice describe producers", describeProducers(aliceCl), nil)
	wantACLCode(t, "bob describe producers", describeProducers(bobCl), kerr.TopicAuthorizationFailed)

	// Metadata: only describable topics; a named one bob may not
	// describe is TOPIC_AUTHORIZATION_FAILED; auto-creation needs CREATE.
	metaAll := func(cl *kgo.Client) []string {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = nil
		var names []string
		for _, tp := range aclRaw[*kmsg.MetadataResponse](t, cl, req).Topics {
			names = append(names, *tp.Topic)
		}
		return names
	}
	if got := metaAll(aliceCl); len(got) != 1 || got[0] != "orders" {
		t.Errorf("alice's metadata lists %v, want [orders]", got)
	}
	if got := metaAll(bobCl); len(got) != 0 {
		t.Errorf("bob's metadata lists %v, want none", got)
	}
	metaOne := func(cl *kgo.Client, topic string, ops bool) kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = []kmsg.MetadataRequestTopic{rt}
		req.AllowAutoTopicCreation, req.IncludeTopicAuthorizedOperations = true, ops
		return aclRaw[*kmsg.MetadataResponse](t, cl, req).Topics[0]
	}
	wantACLCode(t, "bob metadata orders", metaOne(bobCl, "orders", false).ErrorCode, kerr.TopicAuthorizationFailed)
	wantACLCode(t, "alice metadata secret", metaOne(aliceCl, "secret", false).ErrorCode, kerr.TopicAuthorizationFailed)
	if tp := metaOne(aliceCl, "orders", true); tp.ErrorCode != 0 || tp.AuthorizedOperations != 1<<3|1<<4|1<<8 {
		t.Errorf("alice metadata orders: code %d, authorized operations %b, want READ|WRITE|DESCRIBE", tp.ErrorCode, tp.AuthorizedOperations)
	}

	// CreateTopics: CREATE on the topic (or the cluster).
	create := func(cl *kgo.Client, topic string) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
		req.Topics = []kmsg.CreateTopicsRequestTopic{ct}
		return aclRaw[*kmsg.CreateTopicsResponse](t, cl, req).Topics[0].ErrorCode
	}
	wantACLCode(t, "alice create alice-1", create(aliceCl, "alice-1"), nil)
	wantACLCode(t, "bob create alice-2", create(bobCl, "alice-2"), kerr.TopicAuthorizationFailed)

	// FindCoordinator: DESCRIBE on the group.
	find := func(cl *kgo.Client, group string) int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{group}
		return aclRaw[*kmsg.FindCoordinatorResponse](t, cl, req).Coordinators[0].ErrorCode
	}
	wantACLCode(t, "alice find app-1", find(aliceCl, "app-1"), nil)
	wantACLCode(t, "bob find app-1", find(bobCl, "app-1"), kerr.GroupAuthorizationFailed)

	// alice consumes in a group and commits with franz-go: JoinGroup,
	// SyncGroup, Heartbeat, OffsetFetch, OffsetCommit, LeaveGroup.
	cons, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", aclUsers["alice"],
		kgo.ConsumerGroup("app-1"), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)
	if err != nil {
		t.Fatal(err)
	}
	for got := 0; got == 0; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("alice consume: %v", err)
		}
		got = fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commit: %v", err)
	}
	cons.Close()

	// Classic group APIs for bob: GROUP_AUTHORIZATION_FAILED.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "app-1", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	wantACLCode(t, "bob join", aclRaw[*kmsg.JoinGroupResponse](t, bobCl, join).ErrorCode, kerr.GroupAuthorizationFailed)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID = "app-1", "m"
	wantACLCode(t, "bob sync", aclRaw[*kmsg.SyncGroupResponse](t, bobCl, sync).ErrorCode, kerr.GroupAuthorizationFailed)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "app-1", "m"
	wantACLCode(t, "bob heartbeat", aclRaw[*kmsg.HeartbeatResponse](t, bobCl, hb).ErrorCode, kerr.GroupAuthorizationFailed)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "app-1"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	wantACLCode(t, "bob leave", aclRaw[*kmsg.LeaveGroupResponse](t, bobCl, leave).ErrorCode, kerr.GroupAuthorizationFailed)
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberID, cgh.RebalanceTimeoutMillis = "app-2", "m1234567890123456789012", 10000
	cgh.SubscribedTopicNames = []string{"orders"}
	wantACLCode(t, "bob consumer group heartbeat", aclRaw[*kmsg.ConsumerGroupHeartbeatResponse](t, bobCl, cgh).ErrorCode, kerr.GroupAuthorizationFailed)
	cgh.Group = "admin-group"
	wantACLCode(t, "alice consumer group heartbeat admin-group", aclRaw[*kmsg.ConsumerGroupHeartbeatResponse](t, aliceCl, cgh).ErrorCode, kerr.GroupAuthorizationFailed)

	// OffsetCommit: READ on the group and on each topic, per partition.
	commit := func(cl *kgo.Client, group string, topics ...string) *kmsg.OffsetCommitResponse {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		for _, tp := range topics {
			ct := kmsg.NewOffsetCommitRequestTopic()
			ct.Topic, ct.TopicID = tp, ids[tp]
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Offset = 1
			ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{cp}
			req.Topics = append(req.Topics, ct)
		}
		return aclRaw[*kmsg.OffsetCommitResponse](t, cl, req)
	}
	codes := map[string]int16{}
	for _, tp := range commit(aliceCl, "app-3", "orders", "secret").Topics {
		codes[tp.Topic+names[tp.TopicID]] = tp.Partitions[0].ErrorCode
	}
	wantACLCode(t, "alice commit orders", codes["orders"], nil)
	wantACLCode(t, "alice commit secret", codes["secret"], kerr.TopicAuthorizationFailed)
	wantACLCode(t, "bob commit", commit(bobCl, "app-3", "orders").Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)

	// OffsetFetch: DESCRIBE on the group; topics alice may not describe
	// are left out of "all" and refused when named.
	fetchOffsets := func(cl *kgo.Client, group string, topics ...string) kmsg.OffsetFetchResponseGroup {
		req := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		for _, tp := range topics {
			g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: tp, TopicID: ids[tp], Partitions: []int32{0}})
		}
		req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return aclRaw[*kmsg.OffsetFetchResponse](t, cl, req).Groups[0]
	}
	all := fetchOffsets(aliceCl, "app-1")
	if all.ErrorCode != 0 || len(all.Topics) != 1 || all.Topics[0].Topic+names[all.Topics[0].TopicID] != "orders" {
		t.Errorf("alice offset fetch app-1 (all topics): %+v, want orders only", all)
	}
	named := fetchOffsets(aliceCl, "app-1", "secret")
	if len(named.Topics) != 1 || named.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || named.Topics[0].Partitions[0].Offset != -1 {
		t.Errorf("alice offset fetch app-1 secret: %+v, want TOPIC_AUTHORIZATION_FAILED, offset -1", named)
	}
	wantACLCode(t, "bob offset fetch", fetchOffsets(bobCl, "app-1").ErrorCode, kerr.GroupAuthorizationFailed)

	// ListGroups: only describable groups.
	lg, err := kadm.NewClient(aliceCl).ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gs := lg.Groups(); len(gs) != 3 || gs[0] != "app-1" || gs[1] != "app-3" || gs[2] != "app-del" {
		t.Errorf("alice lists groups %v, want [app-1 app-3 app-del]", gs)
	}
	if lg, err := kadm.NewClient(bobCl).ListGroups(ctx); err != nil || len(lg.Groups()) != 0 {
		t.Errorf("bob lists groups %v (%v), want none", lg.Groups(), err)
	}
	if lg, err := admin.ListGroups(ctx); err != nil || len(lg.Groups()) != 4 {
		t.Errorf("admin lists groups %v (%v), want all 4", lg.Groups(), err)
	}

	// DescribeGroups: DESCRIBE per group, one request split; alice's
	// authorized operations on app-1 are READ and DESCRIBE.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"admin-group", "app-1"}, true
	dgr := aclRaw[*kmsg.DescribeGroupsResponse](t, aliceCl, dg)
	if len(dgr.Groups) != 2 {
		t.Fatalf("describe groups: %d groups", len(dgr.Groups))
	}
	for _, g := range dgr.Groups {
		switch g.Group {
		case "admin-group":
			wantACLCode(t, "alice describe admin-group", g.ErrorCode, kerr.GroupAuthorizationFailed)
		case "app-1":
			wantACLCode(t, "alice describe app-1", g.ErrorCode, nil)
			if g.AuthorizedOperations != 1<<3|1<<8 {
				t.Errorf("alice's authorized operations on app-1: %b, want READ|DESCRIBE", g.AuthorizedOperations)
			}
		default:
			t.Errorf("describe answered group %q", g.Group)
		}
	}
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{"app-1"}
	wantACLCode(t, "bob consumer group describe", aclRaw[*kmsg.ConsumerGroupDescribeResponse](t, bobCl, cgd).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)

	// OffsetDelete: DELETE on the group, READ on each topic (refused
	// per partition, the others' offsets deleted).
	offsetDelete := func(cl *kgo.Client, group string, topics ...string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, tp := range topics {
			req.Topics = append(req.Topics, kmsg.OffsetDeleteRequestTopic{Topic: tp, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		return aclRaw[*kmsg.OffsetDeleteResponse](t, cl, req)
	}
	wantACLCode(t, "bob offset delete app-del", offsetDelete(bobCl, "app-del", "orders").ErrorCode, kerr.GroupAuthorizationFailed)
	wantACLCode(t, "alice offset delete app-1", offsetDelete(aliceCl, "app-1", "orders").ErrorCode, kerr.GroupAuthorizationFailed)
	od := offsetDelete(aliceCl, "app-del", "orders", "secret")
	wantACLCode(t, "alice offset delete app-del", od.ErrorCode, nil)
	codes = map[string]int16{}
	for _, tp := range od.Topics {
		codes[tp.Topic] = tp.Partitions[0].ErrorCode
	}
	if len(codes) != 2 {
		t.Errorf("alice offset delete app-del answered %+v, want orders and secret", od.Topics)
	}
	wantACLCode(t, "alice offset delete app-del orders", codes["orders"], nil)
	wantACLCode(t, "alice offset delete app-del secret", codes["secret"], kerr.TopicAuthorizationFailed)
	if o, err := admin.FetchOffsets(ctx, "app-del"); err != nil {
		t.Fatal(err)
	} else if _, ok := o.Lookup("secret", 0); !ok {
		t.Errorf("app-del's offset of secret was deleted by a principal without READ on it: %v", o)
	} else if _, ok := o.Lookup("orders", 0); ok {
		t.Errorf("app-del's offset of orders was not deleted")
	}

	// DeleteGroups: DELETE.
	del := func(cl *kgo.Client, group string) int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{group}
		return aclRaw[*kmsg.DeleteGroupsResponse](t, cl, req).Groups[0].ErrorCode
	}
	wantACLCode(t, "alice delete app-1", del(aliceCl, "app-1"), kerr.GroupAuthorizationFailed)
	wantACLCode(t, "alice delete app-del", del(aliceCl, "app-del"), nil)

	// DeleteTopics: DELETE; CreatePartitions: ALTER.
	delTopic := func(cl *kgo.Client, topic string) int16 {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(topic)}}
		req.TopicNames = []string{topic}
		return aclRaw[*kmsg.DeleteTopicsResponse](t, cl, req).Topics[0].ErrorCode
	}
	wantACLCode(t, "alice delete topic orders", delTopic(aliceCl, "orders"), kerr.TopicAuthorizationFailed)
	wantACLCode(t, "bob delete topic nothing", delTopic(bobCl, "nothing"), kerr.TopicAuthorizationFailed)
	wantACLCode(t, "admin delete topic alice-1", delTopic(adminCl, "alice-1"), nil)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "orders", Count: 2}}
	wantACLCode(t, "bob create partitions", aclRaw[*kmsg.CreatePartitionsResponse](t, bobCl, cp).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)

	// DescribeConfigs: DESCRIBE_CONFIGS on the topic / the cluster.
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "orders"},
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"},
	}
	dcr := aclRaw[*kmsg.DescribeConfigsResponse](t, bobCl, dc)
	wantACLCode(t, "bob describe configs topic", dcr.Resources[0].ErrorCode, kerr.TopicAuthorizationFailed)
	wantACLCode(t, "bob describe configs broker", dcr.Resources[1].ErrorCode, kerr.ClusterAuthorizationFailed)
	dcr = aclRaw[*kmsg.DescribeConfigsResponse](t, adminCl, dc)
	wantACLCode(t, "admin describe configs topic", dcr.Resources[0].ErrorCode, nil)
	wantACLCode(t, "admin describe configs broker", dcr.Resources[1].ErrorCode, nil)

	// SCRAM credentials: DESCRIBE / ALTER on the cluster.
	ds := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	wantACLCode(t, "bob describe users", aclRaw[*kmsg.DescribeUserSCRAMCredentialsResponse](t, bobCl, ds).ErrorCode, kerr.ClusterAuthorizationFailed)
	wantACLCode(t, "admin describe users", aclRaw[*kmsg.DescribeUserSCRAMCredentialsResponse](t, adminCl, ds).ErrorCode, nil)
	as := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	as.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 1}}
	wantACLCode(t, "bob alter users", aclRaw[*kmsg.AlterUserSCRAMCredentialsResponse](t, bobCl, as).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed)

	// InitProducerId: WRITE on the transactional id; an idempotent
	// producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
	initPID := func(cl *kgo.Client, txnID *string) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = txnID, 10000
		return aclRaw[*kmsg.InitProducerIDResponse](t, cl, req).ErrorCode
	}
	wantACLCode(t, "alice idempotent init", initPID(aliceCl, nil), nil)
	wantACLCode(t, "bob idempotent init", initPID(bobCl, nil), kerr.ClusterAuthorizationFailed)
	wantACLCode(t, "bob transactional init", initPID(bobCl, kmsg.StringPtr("tx-alice")), kerr.TransactionalIDAuthorizationFailed)
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID = "tx-alice"
	wantACLCode(t, "bob end txn", aclRaw[*kmsg.EndTxnResponse](t, bobCl, end).ErrorCode, kerr.TransactionalIDAuthorizationFailed)

	// A transaction of alice's with franz-go: InitProducerId,
	// AddPartitionsToTxn, Produce, AddOffsetsToTxn, TxnOffsetCommit,
	// EndTxn, all on what she may use.
	txCl, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", aclUsers["alice"], kgo.TransactionalID("tx-alice"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer txCl.Close()
	if err := txCl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txCl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("tx")}).FirstErr(); err != nil {
		t.Fatalf("alice transactional produce: %v", err)
	}
	if err := txCl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("alice commit transaction: %v", err)
	}

	// admin leaves a transaction open on orders and secret; alice may
	// DESCRIBE its id but not the topic secret.
	adminTx, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", "admin", aclUsers["admin"], kgo.TransactionalID("tx-admin"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer adminTx.Close()
	if err := adminTx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := adminTx.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o")}, &kgo.Record{Topic: "secret", Value: []byte("s")}).FirstErr(); err != nil {
		t.Fatalf("admin transactional produce: %v", err)
	}

	// DescribeTransactions: DESCRIBE on each id; the partitions of topics
	// the principal may not describe are left out.
	describeTxns := func(cl *kgo.Client, ids ...string) map[string]kmsg.DescribeTransactionsResponseTransactionState {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = ids
		out := map[string]kmsg.DescribeTransactionsResponseTransactionState{}
		for _, st := range aclRaw[*kmsg.DescribeTransactionsResponse](t, cl, req).TransactionStates {
			out[st.TransactionalID] = st
		}
		return out
	}
	dt := describeTxns(bobCl, "tx-alice", "tx-admin")
	wantACLCode(t, "bob describe tx-alice", dt["tx-alice"].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	wantACLCode(t, "bob describe tx-admin", dt["tx-admin"].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	dt = describeTxns(aliceCl, "tx-alice", "tx-admin")
	wantACLCode(t, "alice describe tx-alice", dt["tx-alice"].ErrorCode, nil)
	if st := dt["tx-admin"]; st.ErrorCode != 0 || st.State != "Ongoing" || len(st.Topics) != 1 || st.Topics[0].Topic != "orders" {
		t.Errorf("alice describes tx-admin: %+v, want Ongoing with orders only", st)
	}
	if st := describeTxns(adminCl, "tx-admin")["tx-admin"]; st.ErrorCode != 0 || len(st.Topics) != 2 {
		t.Errorf("admin describes tx-admin: %+v, want orders and secret", st)
	}

	// ListTransactions: only the ids the principal may describe.
	listTxns := func(cl *kgo.Client) []string {
		var ids []string
		for _, st := range aclRaw[*kmsg.ListTransactionsResponse](t, cl, kmsg.NewPtrListTransactionsRequest()).TransactionStates {
			ids = append(ids, st.TransactionalID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := listTxns(aliceCl); !slices.Equal(got, []string{"tx-admin", "tx-alice"}) {
		t.Errorf("alice lists transactions %v, want [tx-admin tx-alice]", got)
	}
	if got := listTxns(bobCl); len(got) != 0 {
		t.Errorf("bob lists transactions %v, want none", got)
	}

	// KAFKA-18813: DESCRIBE on every subscribed topic, checked after the
	// group; and ConsumerGroupDescribe hides a group with an assigned
	// topic the caller may not describe.
	cgh.Group, cgh.SubscribedTopicNames, cgh.Topics = "app-cgh", []string{"orders", "secret"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	wantACLCode(t, "alice consumer group heartbeat subscribing to secret", aclRaw[*kmsg.ConsumerGroupHeartbeatResponse](t, aliceCl, cgh).ErrorCode, kerr.TopicAuthorizationFailed)
	cgh.SubscribedTopicNames = []string{"orders"}
	wantACLCode(t, "alice consumer group heartbeat subscribing to orders", aclRaw[*kmsg.ConsumerGroupHeartbeatResponse](t, aliceCl, cgh).ErrorCode, nil)
	cgh.Group, cgh.MemberID, cgh.SubscribedTopicNames = "app-cgh-secret", "m9876543210987654321098", []string{"secret"}
	wantACLCode(t, "admin consumer group heartbeat subscribing to secret", aclRaw[*kmsg.ConsumerGroupHeartbeatResponse](t, adminCl, cgh).ErrorCode, nil)
	cgdTopics := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgdTopics.Groups = []string{"app-cgh", "app-cgh-secret"}
	for _, g := range aclRaw[*kmsg.ConsumerGroupDescribeResponse](t, aliceCl, cgdTopics).Groups {
		switch g.Group {
		case "app-cgh":
			wantACLCode(t, "alice consumer group describe app-cgh (orders)", g.ErrorCode, nil)
			if len(g.Members) != 1 {
				t.Errorf("alice's describe of app-cgh: %d members, want 1", len(g.Members))
			}
		case "app-cgh-secret":
			wantACLCode(t, "alice consumer group describe app-cgh-secret (secret)", g.ErrorCode, kerr.TopicAuthorizationFailed)
			if len(g.Members) != 0 {
				t.Errorf("alice's refused describe of app-cgh-secret shows %d members", len(g.Members))
			}
		default:
			t.Errorf("consumer group describe answered group %q", g.Group)
		}
	}
	if g := aclRaw[*kmsg.ConsumerGroupDescribeResponse](t, adminCl, cgdTopics).Groups; len(g) != 2 || g[0].ErrorCode != 0 || g[1].ErrorCode != 0 {
		t.Errorf("admin's consumer group describe: %+v", g)
	}

	// Share groups (KIP-932), as Kafka 4.2: READ on the group and
	// DESCRIBE on every subscribed topic for ShareGroupHeartbeat, and
	// ShareGroupDescribe hides a group with an assigned topic the caller
	// may not describe.
	sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sgh.GroupID, sgh.MemberID, sgh.SubscribedTopicNames = "app-sg", "s1", []string{"orders", "secret"}
	wantACLCode(t, "bob share group heartbeat", aclRaw[*kmsg.ShareGroupHeartbeatResponse](t, bobCl, sgh).ErrorCode, kerr.GroupAuthorizationFailed)
	wantACLCode(t, "alice share group heartbeat subscribing to secret", aclRaw[*kmsg.ShareGroupHeartbeatResponse](t, aliceCl, sgh).ErrorCode, kerr.TopicAuthorizationFailed)
	sgh.SubscribedTopicNames = []string{"orders"}
	wantACLCode(t, "alice share group heartbeat subscribing to orders", aclRaw[*kmsg.ShareGroupHeartbeatResponse](t, aliceCl, sgh).ErrorCode, nil)
	sgh.GroupID, sgh.SubscribedTopicNames = "app-sg-secret", []string{"secret"}
	wantACLCode(t, "admin share group heartbeat subscribing to secret", aclRaw[*kmsg.ShareGroupHeartbeatResponse](t, adminCl, sgh).ErrorCode, nil)
	sgd := kmsg.NewPtrShareGroupDescribeRequest()
	sgd.GroupIDs, sgd.IncludeAuthorizedOperations = []string{"app-sg", "app-sg-secret"}, true
	for _, g := range aclRaw[*kmsg.ShareGroupDescribeResponse](t, aliceCl, sgd).Groups {
		switch g.GroupID {
		case "app-sg":
			wantACLCode(t, "alice share group describe app-sg (orders)", g.ErrorCode, nil)
			if len(g.Members) != 1 || g.AuthorizedOperations != 1<<3|1<<8 {
				t.Errorf("alice's describe of app-sg: %d members, operations %b; want 1, READ and DESCRIBE", len(g.Members), g.AuthorizedOperations)
			}
		case "app-sg-secret":
			wantACLCode(t, "alice share group describe app-sg-secret (secret)", g.ErrorCode, kerr.TopicAuthorizationFailed)
			if len(g.Members) != 0 {
				t.Errorf("alice's refused describe of app-sg-secret shows %d members", len(g.Members))
			}
		default:
			t.Errorf("share group describe answered group %q", g.GroupID)
		}
	}
	if g := aclRaw[*kmsg.ShareGroupDescribeResponse](t, adminCl, sgd).Groups; len(g) != 2 || g[0].ErrorCode != 0 || g[1].ErrorCode != 0 {
		t.Errorf("admin's share group describe: %+v", g)
	}
}

// TestACLAssigner: with authorization on, a caller of the warm-handoff
// assignment service needs READ on the group it acts in. The bearer
// token's callers are User:grpc: refused PERMISSION_DENIED until an ACL
// allows it READ on the group, then served.
func TestACLAssigner(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{Authorizer: true, SuperUsers: []string{"User:admin", "User:ANONYMOUS"}, GRPCToken: "g-token"}, aclUsers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, admin := aclClient(t, n, "admin")
	if _, err := admin.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(security.BearerCredentials{Secret: "g-token"}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := kafkaassignerpb.NewKafkaAssignerClient(cc)
	inGroup := metadata.AppendToOutgoingContext(ctx, assigner.GroupMetadataKey, "app-1")
	register := func() (*kafkaassignerpb.AssignmentCommand, error) {
		ctx, cancel := context.WithCancel(inGroup)
		defer cancel()
		stream, err := client.Register(ctx, &kafkaassignerpb.RegisterRequest{ConsumerName: "c1", Topic: "orders"})
		if err != nil {
			return nil, err
		}
		return stream.Recv()
	}

	_, err = register()
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), `"app-1"`) {
		t.Fatalf("Register without READ on app-1: %v, want PermissionDenied naming the group", err)
	}
	_, err = client.PartitionReady(inGroup, &kafkaassignerpb.PartitionReadyRequest{ConsumerName: "c1", Partition: &kafkaassignerpb.TopicPartition{Topic: "orders"}})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("PartitionReady without READ on app-1: %v, want PermissionDenied", err)
	}
	_, err = client.PartitionReleased(inGroup, &kafkaassignerpb.PartitionReleasedRequest{ConsumerName: "c1", Partition: &kafkaassignerpb.TopicPartition{Topic: "orders"}})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("PartitionReleased without READ on app-1: %v, want PermissionDenied", err)
	}

	// READ on another group does not do.
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Groups("app-2").Allow("User:grpc").Operations(kadm.OpRead))
	if err != nil || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %+v", err, res)
	}
	if _, err := register(); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Register with READ on app-2 only: %v, want PermissionDenied", err)
	}
	res, err = admin.CreateACLs(ctx, kadm.NewACLs().Groups("app-1").Allow("User:grpc").Operations(kadm.OpRead))
	if err != nil || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %+v", err, res)
	}
	cmd, err := register()
	if err != nil {
		t.Fatalf("Register with READ on app-1: %v", err)
	}
	if cmd.GetAssignment() == nil {
		t.Fatalf("Register with READ on app-1: first command %v, want an assignment", cmd)
	}
}
