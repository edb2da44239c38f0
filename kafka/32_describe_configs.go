package kafka

// DescribeConfigs, key 32.
//
// Version notes:
//   - v0: configs with IsDefault. v1: IncludeSynonyms, Source replaces
//     IsDefault. v2: no change. v3 (KIP-569): IncludeDocumentation,
//     ConfigType. v4: flexible.
//
// Topics report every config Cohort knows (topics.TopicConfigs), DYNAMIC
// when set, DEFAULT otherwise. This broker (resource name its node id,
// "0" when single) reports the settings clients and admin tools read,
// the dynamic ones (dynamic_configs.go) with where each is set as
// synonyms; "" reports the cluster-wide dynamic defaults that are set;
// another broker's id gets INVALID_REQUEST, as Kafka (each broker answers
// for itself). A group (any name, existing or not, as Kafka) reports its
// configs, GROUP_CONFIG where it sets them. BROKER_LOGGER reports the
// root logger's level. Other resource types get INVALID_REQUEST. With
// authorization on: DESCRIBE_CONFIGS on the topic, the group, or the
// cluster for a broker and its loggers.

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs) }

// configEntry is one config to report.
type configEntry struct {
	name, value, doc string
	source           kmsg.ConfigSource
	typ              kmsg.ConfigType
	readOnly         bool
	// synonyms, if not nil, are where the value is set, the one in force
	// first; nil: the entry itself.
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

func handleDescribeConfigs(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	sc := s.scope(hdr)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []configEntry
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			// With authorization on, as Kafka: DESCRIBE_CONFIGS on the
			// topic (on the cluster for a broker), before it is looked
			// up.
			if !s.authorize(hdr, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, rr.ResourceName) {
				sr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				break
			}
			if sc.isOffsets(rr.ResourceName, [16]byte{}, false) {
				entries = offsetsConfigEntries() // consumer_offsets.go
				break
			}
			t := sc.topic(rr.ResourceName)
			if t == nil {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sr.ErrorMessage = errPtr("Topic " + rr.ResourceName + " does not exist.")
				break
			}
			entries = topicConfigEntries(t)
		case kmsg.ConfigResourceTypeBroker:
			switch rr.ResourceName {
			case "", strconv.Itoa(int(s.cluster.Self())):
				if !s.authorizeCluster(hdr, kmsg.ACLOperationDescribeConfigs) {
					sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					break
				}
				if rr.ResourceName != "" {
					entries = s.brokerConfigEntries()
					break
				}
				// "": the cluster-wide dynamic defaults set, as Kafka.
				d := s.dyn.Load()
				for _, name := range slices.Sorted(maps.Keys(d.cluster)) {
					c, _ := lookupDyn(brokerDynamicConfigs, name)
					src := kmsg.ConfigSourceDynamicDefaultBrokerConfig
					entries = append(entries, configEntry{name: name, value: d.cluster[name], doc: c.doc, source: src, typ: c.typ(),
						synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(name, d.cluster[name], src)}})
				}
			default:
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = errPtr("Unexpected broker id, expected " + strconv.Itoa(int(s.cluster.Self())) + " or empty string, but received " + rr.ResourceName)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			if !s.authorize(hdr, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeGroup, rr.ResourceName) {
				sr.ErrorCode = kerr.GroupAuthorizationFailed.Code
				break
			}
			if rr.ResourceName == "" {
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = errPtr("Group name must not be empty")
				break
			}
			// Every group has configs, as Kafka's: its own or the
			// defaults, whether or not it exists yet.
			entries = s.groupConfigEntries(sc.in(rr.ResourceName))
		case kmsg.ConfigResourceTypeBrokerLogger:
			self := strconv.Itoa(int(s.cluster.Self()))
			switch {
			case !s.authorizeCluster(hdr, kmsg.ACLOperationDescribeConfigs):
				sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			case rr.ResourceName == "":
				sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, errPtr("Broker id must not be empty")
			case rr.ResourceName != self:
				sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, errPtr("Unexpected broker id, expected "+self+" but received "+rr.ResourceName)
			default:
				entries = []configEntry{{name: rootLogger, value: s.rootLevel(), source: kmsg.ConfigSourceDynamicBrokerLoggerConfig, typ: kmsg.ConfigTypeString,
					synonyms: []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}}}
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = errPtr("Unsupported resource type " + rr.ResourceType.String())
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !contains(rr.ConfigNames, e.name) {
				continue
			}
			sr.Configs = append(sr.Configs, describeEntry(e, hdr.version, req.IncludeSynonyms, req.IncludeDocumentation))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return done(resp)
}

func describeEntry(e configEntry, version int16, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.ReadOnly = e.name, errPtr(e.value), e.readOnly
	c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
	c.Source = e.source
	c.ConfigType = e.typ
	if synonyms && version >= 1 {
		c.ConfigSynonyms = e.synonyms
		if c.ConfigSynonyms == nil {
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(e.name, e.value, e.source)}
		}
	}
	if docs && e.doc != "" {
		c.Documentation = errPtr(e.doc)
	}
	return c
}

func topicConfigEntries(t *topics.Topic) []configEntry {
	var out []configEntry
	for _, c := range topics.TopicConfigs {
		v, isDefault := t.Config(c.Name)
		src := kmsg.ConfigSourceDynamicTopicConfig
		if isDefault {
			src = kmsg.ConfigSourceDefaultConfig
		}
		out = append(out, configEntry{name: c.Name, value: v, doc: c.Doc, source: src, typ: kmsg.ConfigType(c.Type)})
	}
	return out
}

// brokerConfigEntries are this broker's configs: the dynamic ones as they
// resolve, and the static ones, sorted by name.
func (s *Server) brokerConfigEntries() []configEntry {
	out := s.staticBrokerConfigEntries()
	for _, c := range brokerDynamicConfigs {
		r := s.brokerValue(c.name)
		out = append(out, configEntry{name: c.name, value: r.value, doc: c.doc, source: r.source, typ: c.typ(), synonyms: r.synonyms})
	}
	slices.SortFunc(out, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

// isBrokerConfig says whether name is a broker config Cohort reports.
func (s *Server) isBrokerConfig(name string) bool {
	return slices.ContainsFunc(s.brokerConfigEntries(), func(e configEntry) bool { return e.name == name })
}

// groupConfigEntries are the configs of the group with internal name
// group, as they resolve.
func (s *Server) groupConfigEntries(group string) []configEntry {
	var out []configEntry
	for _, c := range groupConfigs {
		r := s.groupValue(group, c.name)
		out = append(out, configEntry{name: c.name, value: r.value, doc: c.doc, source: r.source, typ: c.typ(), synonyms: r.synonyms})
	}
	return out
}

// staticBrokerConfigEntries are the broker configs that do not change
// while Cohort runs.
func (s *Server) staticBrokerConfigEntries() []configEntry {
	static := kmsg.ConfigSourceStaticBrokerConfig
	def := kmsg.ConfigSourceDefaultConfig
	str, i32, b, l := kmsg.ConfigTypeString, kmsg.ConfigTypeInt, kmsg.ConfigTypeBoolean, kmsg.ConfigTypeLong
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	nodeID := int64(s.cluster.Self())
	sessLo, sessHi := s.sessionBounds()
	hbLo, hbHi := s.heartbeatBounds()
	// The share groups' node-wide defaults (the node's group.share.*
	// flags) and the bounds of the groups' own (dynamic_configs.go).
	share := s.shareLimits()
	shareSessLo, shareSessHi, _, _ := shareSessionBounds(s)
	shareHbLo, shareHbHi, _, _ := shareHeartbeatBounds(s)
	lockLo, lockHi, _, _ := shareLockBounds(s)
	deliveryLo, deliveryHi, _, _ := shareDeliveryBounds(s)
	locksLo, locksHi, _, _ := shareRecordLocksBounds(s)
	return []configEntry{
		{name: "advertised.listeners", value: s.advertisedListeners(), source: static, typ: str, readOnly: true},
		{name: "auto.create.topics.enable", value: strconv.FormatBool(s.cfg.AutoCreateTopics), source: static, typ: b, readOnly: true},
		{name: "broker.id", value: itoa(nodeID), source: static, typ: i32, readOnly: true},
		// KIP-368: 0 is no re-authentication (--sasl-session-lifetime).
		{name: "connections.max.reauth.ms", value: itoa(s.cfg.SessionLifetime.Milliseconds()), source: static, typ: l, readOnly: true},
		{name: "default.replication.factor", value: "1", source: def, typ: i32, readOnly: true},
		{name: "group.consumer.max.heartbeat.interval.ms", value: itoa(hbHi), source: def, typ: i32, readOnly: true},
		{name: "group.consumer.max.session.timeout.ms", value: itoa(sessHi), source: def, typ: i32, readOnly: true},
		{name: "group.consumer.min.heartbeat.interval.ms", value: itoa(hbLo), source: def, typ: i32, readOnly: true},
		{name: "group.consumer.min.session.timeout.ms", value: itoa(sessLo), source: def, typ: i32, readOnly: true},
		{name: "group.share.delivery.count.limit", value: itoa(int64(share.DeliveryLimit)), source: static, typ: i32, readOnly: true},
		{name: "group.share.heartbeat.interval.ms", value: itoa(s.cfg.ShareHeartbeatInterval.Milliseconds()), source: static, typ: i32, readOnly: true},
		{name: "group.share.max.delivery.count.limit", value: itoa(deliveryHi), source: def, typ: i32, readOnly: true},
		{name: "group.share.max.heartbeat.interval.ms", value: itoa(shareHbHi), source: def, typ: i32, readOnly: true},
		{name: "group.share.max.partition.max.record.locks", value: itoa(locksHi), source: def, typ: i32, readOnly: true},
		{name: "group.share.max.record.lock.duration.ms", value: itoa(lockHi), source: def, typ: i32, readOnly: true},
		{name: "group.share.max.session.timeout.ms", value: itoa(shareSessHi), source: def, typ: i32, readOnly: true},
		{name: "group.share.max.share.sessions", value: itoa(int64(cmp.Or(s.cfg.MaxShareSessions, DefaultMaxShareSessions))), source: static, typ: i32, readOnly: true},
		{name: "group.share.max.size", value: itoa(int64(s.cfg.ShareMaxSize)), source: static, typ: i32, readOnly: true},
		{name: "group.share.min.delivery.count.limit", value: itoa(deliveryLo), source: def, typ: i32, readOnly: true},
		{name: "group.share.min.heartbeat.interval.ms", value: itoa(shareHbLo), source: def, typ: i32, readOnly: true},
		{name: "group.share.min.partition.max.record.locks", value: itoa(locksLo), source: def, typ: i32, readOnly: true},
		{name: "group.share.min.record.lock.duration.ms", value: itoa(lockLo), source: def, typ: i32, readOnly: true},
		{name: "group.share.min.session.timeout.ms", value: itoa(shareSessLo), source: def, typ: i32, readOnly: true},
		{name: "group.share.partition.max.record.locks", value: itoa(int64(share.MaxInFlight)), source: static, typ: i32, readOnly: true},
		{name: "group.share.record.lock.duration.ms", value: itoa(share.LockDuration.Milliseconds()), source: static, typ: i32, readOnly: true},
		{name: "group.share.session.timeout.ms", value: itoa(s.cfg.ShareSessionTimeout.Milliseconds()), source: static, typ: i32, readOnly: true},
		{name: "log.retention.ms", value: topics.TopicConfigDefault("retention.ms"), source: def, typ: l, readOnly: true},
		{name: "log.segment.bytes", value: topics.TopicConfigDefault("segment.bytes"), source: def, typ: i32, readOnly: true},
		{name: "message.max.bytes", value: topics.TopicConfigDefault("max.message.bytes"), source: def, typ: i32, readOnly: true},
		{name: "min.insync.replicas", value: "1", source: def, typ: i32, readOnly: true},
		{name: "node.id", value: itoa(nodeID), source: static, typ: i32, readOnly: true},
		{name: "num.partitions", value: itoa(int64(s.cfg.DefaultPartitions)), source: static, typ: i32, readOnly: true},
		{name: "socket.request.max.bytes", value: itoa(int64(s.cfg.MaxRequestBytes)), source: static, typ: i32, readOnly: true},
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
