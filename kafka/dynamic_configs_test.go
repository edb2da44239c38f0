package kafka_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configOp is one IncrementalAlterConfigs operation.
type configOp struct {
	name, value string
	op          kmsg.IncrementalAlterConfigOp
}

func setOp(name, value string) configOp {
	return configOp{name, value, kmsg.IncrementalAlterConfigOpSet}
}

// alterIncremental sends one resource's operations and returns its code
// and message.
func alterIncremental(c *rawClient, validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...configOp) (int16, string) {
	c.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for _, o := range ops {
		e := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		e.Name, e.Op, e.Value = o.name, o.op, kmsg.StringPtr(o.value)
		if o.op == kmsg.IncrementalAlterConfigOpDelete {
			e.Value = nil
		}
		rr.Configs = append(rr.Configs, e)
	}
	req.Resources = append(req.Resources, rr)
	sr := roundTrip[*kmsg.IncrementalAlterConfigsResponse](c, 1, req).Resources[0]
	msg := ""
	if sr.ErrorMessage != nil {
		msg = *sr.ErrorMessage
	}
	return sr.ErrorCode, msg
}

// describeOne returns one config of a resource as DescribeConfigs v4
// reports it, with synonyms.
func describeOne(c *rawClient, typ kmsg.ConfigResourceType, name, config string) kmsg.DescribeConfigsResponseResourceConfig {
	c.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, []string{config}
	req.Resources = append(req.Resources, rr)
	sr := roundTrip[*kmsg.DescribeConfigsResponse](c, 4, req).Resources[0]
	if sr.ErrorCode != 0 || len(sr.Configs) != 1 {
		c.t.Fatalf("describe %v %q %s: %v, %d configs", typ, name, config, kerr.ErrorForCode(sr.ErrorCode), len(sr.Configs))
	}
	return sr.Configs[0]
}

// TestDynamicConfigs: the broker configs that change while Cohort runs
// resolve as Kafka's (this broker's own, else the cluster default, else
// the node's flag, each a synonym) and take effect (a connection over the
// per-IP limit is closed); the others are refused as not dynamic. A
// group's configs are checked against the broker's bounds and reach its
// members at their next heartbeat. The root logger's level changes.
func TestDynamicConfigs(t *testing.T) {
	groups := coordinator.Config{InitialRebalanceDelay: -1, ConsumerHeartbeatInterval: 3 * time.Second, ShareHeartbeatInterval: 6 * time.Second}
	shareState := sharestate.Config{Limits: sharestate.Limits{DeliveryLimit: 7}}
	addr := testkit.StartNode(t, node.Config{Groups: groups, ShareState: shareState}).KafkaAddr()
	c := dial(t, addr)
	broker, cluster := kmsg.ConfigResourceTypeBroker, ""
	want := func(what string, e kmsg.DescribeConfigsResponseResourceConfig, value string, src kmsg.ConfigSource, synonyms int) {
		t.Helper()
		if *e.Value != value || e.Source != src || len(e.ConfigSynonyms) != synonyms || e.ReadOnly {
			t.Fatalf("%s: %s=%s source %v, %d synonyms, read-only %v; want %s from %v, %d synonyms", what, e.Name, *e.Value, e.Source, len(e.ConfigSynonyms), e.ReadOnly, value, src, synonyms)
		}
	}
	want("flag", describeOne(c, broker, "0", "max.connections.per.ip"), "2147483647", kmsg.ConfigSourceStaticBrokerConfig, 1)

	// The cluster default, then this broker's own over it.
	if code, msg := alterIncremental(c, false, broker, cluster, setOp("max.connections.per.ip", "5")); code != 0 {
		t.Fatalf("cluster default: %v %s", kerr.ErrorForCode(code), msg)
	}
	want("cluster default", describeOne(c, broker, "0", "max.connections.per.ip"), "5", kmsg.ConfigSourceDynamicDefaultBrokerConfig, 2)
	want("cluster default as set", describeOne(c, broker, cluster, "max.connections.per.ip"), "5", kmsg.ConfigSourceDynamicDefaultBrokerConfig, 1)
	if code, msg := alterIncremental(c, false, broker, "0", setOp("max.connections.per.ip", "2")); code != 0 {
		t.Fatalf("broker 0: %v %s", kerr.ErrorForCode(code), msg)
	}
	want("broker's own", describeOne(c, broker, "0", "max.connections.per.ip"), "2", kmsg.ConfigSourceDynamicBrokerConfig, 3)

	// In force: c and a second connection are the two allowed; a third
	// is closed at once.
	dial(t, addr)
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err != io.EOF && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("a third connection from one IP with max.connections.per.ip=2: read %v, want it closed", err)
	}
	// Deleted: back to the cluster default.
	if code, _ := alterIncremental(c, false, broker, "0", configOp{"max.connections.per.ip", "", kmsg.IncrementalAlterConfigOpDelete}); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	want("after delete", describeOne(c, broker, "0", "max.connections.per.ip"), "5", kmsg.ConfigSourceDynamicDefaultBrokerConfig, 2)

	for _, tc := range []struct {
		what  string
		typ   kmsg.ConfigResourceType
		name  string
		ops   []configOp
		code  int16
		msg   string
		valid bool // validate only
	}{
		{"a static broker config", broker, "0", []configOp{setOp("num.partitions", "3")}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(num.partitions)", false},
		{"an unknown broker config", broker, cluster, []configOp{setOp("no.such", "3")}, kerr.InvalidConfig.Code, "Unknown broker config name: no.such", false},
		{"not a number", broker, cluster, []configOp{setOp("max.connections", "many")}, kerr.InvalidConfig.Code, "Not a number", false},
		{"a broker heartbeat above the bound", broker, cluster, []configOp{setOp("group.consumer.heartbeat.interval.ms", "16000")}, kerr.InvalidConfig.Code, "less than or equal to group.consumer.max.heartbeat.interval.ms", false},
		{"validate only", broker, cluster, []configOp{setOp("max.connections", "7")}, 0, "", true},
		{"an unknown group config", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("session.timeout.ms", "1")}, kerr.InvalidConfig.Code, "Unknown group config name: session.timeout.ms", false},
		{"a group heartbeat above the bound", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("consumer.session.timeout.ms", "45000"), setOp("consumer.heartbeat.interval.ms", "45000")}, kerr.InvalidConfig.Code, "less than or equal to group.consumer.max.heartbeat.interval.ms", false},
		{"a bad share reset", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.auto.offset.reset", "middle")}, kerr.InvalidConfig.Code, "Invalid value middle for configuration share.auto.offset.reset: Invalid value `middle` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", false},
		{"a share reset by duration", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.auto.offset.reset", "by_duration:P1DT2H30M")}, 0, "", true},
		{"a share reset by a negative duration", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.auto.offset.reset", "by_duration:-PT10S")}, kerr.InvalidConfig.Code, "The value must be either", false},
		{"a share reset by no duration", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.auto.offset.reset", "by_duration")}, kerr.InvalidConfig.Code, "The value must be either", false},
		{"a share delivery limit below Kafka's least", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.delivery.count.limit", "1")}, kerr.InvalidConfig.Code, "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2", false},
		{"a share delivery limit above the bound", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.delivery.count.limit", "11")}, kerr.InvalidConfig.Code, "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit (10)", false},
		{"a share delivery limit", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.delivery.count.limit", "10")}, 0, "", true},
		{"share record locks below Kafka's least", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.partition.max.record.locks", "50")}, kerr.InvalidConfig.Code, "Value must be at least 100", false},
		{"share record locks above the bound", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.partition.max.record.locks", "10001")}, kerr.InvalidConfig.Code, "share.partition.max.record.locks must be less than or equal to group.share.max.partition.max.record.locks (10000)", false},
		{"a share lock below the bound", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.record.lock.duration.ms", "14999")}, kerr.InvalidConfig.Code, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms (15000)", false},
		{"a bad share isolation level", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.isolation.level", "read_commit")}, kerr.InvalidConfig.Code, "String must be one of: read_committed, read_uncommitted", false},
		{"a share session within the heartbeat", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{setOp("share.session.timeout.ms", "45000"), setOp("share.heartbeat.interval.ms", "15000")}, 0, "", true},
		{"a group with no name", kmsg.ConfigResourceTypeGroupConfig, "", []configOp{setOp("consumer.session.timeout.ms", "50000")}, kerr.InvalidRequest.Code, "Group name must not be empty", false},
		{"append to a number", kmsg.ConfigResourceTypeGroupConfig, "g", []configOp{{"consumer.session.timeout.ms", "1", kmsg.IncrementalAlterConfigOpAppend}}, kerr.InvalidConfig.Code, "append is not allowed", false},
		{"an unknown logger", kmsg.ConfigResourceTypeBrokerLogger, "0", []configOp{setOp("kafka.server", "DEBUG")}, kerr.InvalidConfig.Code, "does not exist", false},
		{"a bad level", kmsg.ConfigResourceTypeBrokerLogger, "0", []configOp{setOp("root", "LOUD")}, kerr.InvalidConfig.Code, "not a supported log level", false},
		{"the root logger deleted", kmsg.ConfigResourceTypeBrokerLogger, "0", []configOp{{"root", "", kmsg.IncrementalAlterConfigOpDelete}}, kerr.InvalidRequest.Code, "not allowed", false},
		{"another broker's logger", kmsg.ConfigResourceTypeBrokerLogger, "3", []configOp{setOp("root", "DEBUG")}, kerr.InvalidRequest.Code, "Unexpected broker id", false},
	} {
		code, msg := alterIncremental(c, tc.valid, tc.typ, tc.name, tc.ops...)
		if code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %v %q, want %v with %q", tc.what, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
	if e := describeOne(c, broker, "0", "max.connections"); *e.Value == "7" || e.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("after validate only: max.connections=%s from %v", *e.Value, e.Source)
	}

	// A group: its configs and the broker's group.consumer.* defaults
	// reach its members' heartbeats.
	beat := func(group string) int32 {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "m-"+group, 30000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp := roundTrip[*kmsg.ConsumerGroupHeartbeatResponse](c, 1, req)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.HeartbeatIntervalMillis
	}
	if got := beat("a"); got != 3000 {
		t.Fatalf("interval with no config: %d, want the flag's 3000", got)
	}
	want("group default", describeOne(c, kmsg.ConfigResourceTypeGroupConfig, "b", "consumer.heartbeat.interval.ms"), "3000", kmsg.ConfigSourceStaticBrokerConfig, 1)
	if code, msg := alterIncremental(c, false, kmsg.ConfigResourceTypeGroupConfig, "b", setOp("consumer.heartbeat.interval.ms", "6000"), setOp("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("group b: %v %s", kerr.ErrorForCode(code), msg)
	}
	want("group's own", describeOne(c, kmsg.ConfigResourceTypeGroupConfig, "b", "consumer.heartbeat.interval.ms"), "6000", kmsg.ConfigSourceGroupConfig, 2)
	want("share key", describeOne(c, kmsg.ConfigResourceTypeGroupConfig, "b", "share.auto.offset.reset"), "earliest", kmsg.ConfigSourceGroupConfig, 2)
	if code, msg := alterIncremental(c, false, broker, cluster, setOp("group.consumer.heartbeat.interval.ms", "4000")); code != 0 {
		t.Fatalf("cluster group default: %v %s", kerr.ErrorForCode(code), msg)
	}
	if a, b := beat("a"), beat("b"); a != 4000 || b != 6000 {
		t.Fatalf("intervals %d and %d, want the cluster default 4000 and group b's 6000", a, b)
	}
	want("group over cluster default", describeOne(c, kmsg.ConfigResourceTypeGroupConfig, "b", "consumer.heartbeat.interval.ms"), "6000", kmsg.ConfigSourceGroupConfig, 3)

	// A share group: its share.heartbeat.interval.ms reaches its
	// members' ShareGroupHeartbeats; without one, Kafka's 5000.
	shareBeat := func(group string) int32 {
		t.Helper()
		resp := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(group, "m-"+group, "t"))
		if resp.ErrorCode != 0 {
			t.Fatalf("share heartbeat of %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.HeartbeatIntervalMillis
	}
	if code, msg := alterIncremental(c, false, kmsg.ConfigResourceTypeGroupConfig, "s2", setOp("share.heartbeat.interval.ms", "8000")); code != 0 {
		t.Fatalf("share group s2: %v %s", kerr.ErrorForCode(code), msg)
	}
	if a, b := shareBeat("s1"), shareBeat("s2"); a != 6000 || b != 8000 {
		t.Fatalf("share intervals %d and %d, want the flag's 6000 and group s2's 8000", a, b)
	}
	// The share configs' defaults that follow the node's flags, as
	// Kafka's GroupConfig takes group.share.*; the others are Kafka's.
	for _, d := range []struct{ name, value string }{
		{"share.heartbeat.interval.ms", "6000"}, {"share.session.timeout.ms", "45000"},
		{"share.delivery.count.limit", "7"}, {"share.record.lock.duration.ms", "30000"},
		{"share.partition.max.record.locks", "2000"}, {"share.isolation.level", "read_uncommitted"},
		{"share.auto.offset.reset", "latest"},
	} {
		want("share default "+d.name, describeOne(c, kmsg.ConfigResourceTypeGroupConfig, "s1", d.name), d.value, kmsg.ConfigSourceDefaultConfig, 1)
	}
	if code, msg := alterIncremental(c, false, kmsg.ConfigResourceTypeGroupConfig, "s2", setOp("share.delivery.count.limit", "3"), setOp("share.isolation.level", "READ_COMMITTED")); code != 0 {
		t.Fatalf("share group s2: %v %s", kerr.ErrorForCode(code), msg)
	}
	if e := describeOne(c, broker, "0", "group.share.delivery.count.limit"); *e.Value != "7" || e.Source != kmsg.ConfigSourceStaticBrokerConfig || !e.ReadOnly {
		t.Fatalf("the delivery limit's flag: %s from %v, read-only %v", *e.Value, e.Source, e.ReadOnly)
	}
	want("share group's own", describeOne(c, kmsg.ConfigResourceTypeGroupConfig, "s2", "share.delivery.count.limit"), "3", kmsg.ConfigSourceGroupConfig, 2)

	// The root logger.
	if code, msg := alterIncremental(c, false, kmsg.ConfigResourceTypeBrokerLogger, "0", setOp("root", "debug")); code != 0 {
		t.Fatalf("root logger: %v %s", kerr.ErrorForCode(code), msg)
	}
	if e := describeOne(c, kmsg.ConfigResourceTypeBrokerLogger, "0", "root"); *e.Value != "DEBUG" || e.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Fatalf("root logger: %s from %v", *e.Value, e.Source)
	}
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "0"
	legacy.Resources = append(legacy.Resources, lr)
	if code := roundTrip[*kmsg.AlterConfigsResponse](c, 2, legacy).Resources[0].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("AlterConfigs on a broker logger: %v", kerr.ErrorForCode(code))
	}
}

// TestGroupConfigsAuthorization: with authorization on, a group's configs
// need ALTER_CONFIGS or DESCRIBE_CONFIGS on the group
// (GROUP_AUTHORIZATION_FAILED otherwise), the broker's and its loggers'
// on the cluster (CLUSTER_AUTHORIZATION_FAILED), as Kafka.
func TestGroupConfigsAuthorization(t *testing.T) {
	n := testkit.StartNode(t, node.Config{Groups: coordinator.Config{InitialRebalanceDelay: -1}, Authorizer: true, AllowEveryoneIfNoACLFound: true})
	c := dial(t, n.KafkaAddr())
	acls := kmsg.NewPtrCreateACLsRequest()
	deny, allow := kmsg.ACLPermissionTypeDeny, kmsg.ACLPermissionTypeAllow
	for _, a := range []struct {
		typ  kmsg.ACLResourceType
		name string
		op   kmsg.ACLOperation
		perm kmsg.ACLPermissionType
	}{
		// locked: described, not altered.
		{kmsg.ACLResourceTypeGroup, "locked", kmsg.ACLOperationAlterConfigs, deny},
		{kmsg.ACLResourceTypeGroup, "locked", kmsg.ACLOperationDescribeConfigs, allow},
		// hidden: altered (ALTER_CONFIGS would imply DESCRIBE_CONFIGS),
		// not described: a DENY wins.
		{kmsg.ACLResourceTypeGroup, "hidden", kmsg.ACLOperationAlterConfigs, allow},
		{kmsg.ACLResourceTypeGroup, "hidden", kmsg.ACLOperationDescribeConfigs, deny},
		{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationAlterConfigs, deny},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = a.typ, a.name, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:ANONYMOUS", "*", a.op, a.perm
		acls.Creations = append(acls.Creations, cr)
	}
	for _, r := range roundTrip[*kmsg.CreateACLsResponse](c, 3, acls).Results {
		wantCode(t, "create acl", r.ErrorCode, nil)
	}
	group := kmsg.ConfigResourceTypeGroupConfig
	session := setOp("consumer.session.timeout.ms", "50000")
	for _, tc := range []struct {
		what string
		typ  kmsg.ConfigResourceType
		name string
		op   configOp
		want *kerr.Error
	}{
		{"an open group", group, "open", session, nil},
		{"a group denied ALTER_CONFIGS", group, "locked", session, kerr.GroupAuthorizationFailed},
		{"a group allowed ALTER_CONFIGS, denied DESCRIBE_CONFIGS", group, "hidden", session, nil},
		{"the cluster default, denied", kmsg.ConfigResourceTypeBroker, "", setOp("max.connections", "100"), kerr.ClusterAuthorizationFailed},
		{"the root logger, denied", kmsg.ConfigResourceTypeBrokerLogger, "0", setOp("root", "DEBUG"), kerr.ClusterAuthorizationFailed},
	} {
		code, _ := alterIncremental(c, false, tc.typ, tc.name, tc.op)
		wantCode(t, tc.what, code, tc.want)
	}
	describe := func(name string) int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = group, name
		req.Resources = append(req.Resources, rr)
		return roundTrip[*kmsg.DescribeConfigsResponse](c, 4, req).Resources[0].ErrorCode
	}
	wantCode(t, "describe a group allowed DESCRIBE_CONFIGS, denied ALTER_CONFIGS", describe("locked"), nil)
	wantCode(t, "describe a group denied DESCRIBE_CONFIGS", describe("hidden"), kerr.GroupAuthorizationFailed)
}
