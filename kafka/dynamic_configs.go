package kafka

// Dynamic configs: the broker configs Cohort changes while it runs
// (KIP-226: per broker, or the cluster-wide default with an empty broker
// name), the groups' configs (KIP-848's consumer.*, and KIP-932's share.*
// for share groups) and the broker's loggers. Broker and group configs
// are records of the global unit (record.KindConfig), so they are
// durable and the same on every node: each node applies the snapshot it
// is handed (applyConfigs). A broker config resolves as Kafka's: this
// broker's own value, else the cluster default, else the node's flag.
// A group config resolves to the group's own value, else the broker's
// group.* default (Kafka's default for share.*); ConsumerGroupHeartbeat
// and ShareGroupHeartbeat carry the result to the group's shard
// (machine.Request.GroupConfig), so a change applies to each member at
// its next heartbeat.
//
// Loggers are as Kafka's: this node's, changed at once and not kept
// across a restart (--log-level is the level a node starts with).

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dynConfig is one config that can change while Cohort runs: an int
// within bounds, a string out of enum, or a string valid says is one.
type dynConfig struct {
	name, doc string
	enum      []string
	// valid, for a string that is no enum, returns Kafka's reason for
	// refusing v, "" if it is valid.
	valid func(v string) string
	// atLeast is the least value Kafka's ConfigDef takes (its
	// Range.atLeast, checked before the bounds), 0 for none.
	atLeast int64
	// bounds are the least and greatest value, and the names of the
	// broker configs that set them (for Kafka's message).
	bounds func(s *Server) (lo, hi int64, loName, hiName string)
	// boolean: true or false, in any case.
	boolean bool
}

func (c dynConfig) typ() kmsg.ConfigType {
	if c.boolean {
		return kmsg.ConfigTypeBoolean
	}
	if c.enum != nil || c.valid != nil {
		return kmsg.ConfigTypeString
	}
	return kmsg.ConfigTypeInt
}

// check returns Kafka's INVALID_CONFIG message for a value of c, "" if it
// is valid.
func (c dynConfig) check(s *Server, v string) string {
	if c.boolean {
		if b := strings.ToLower(strings.TrimSpace(v)); b != "true" && b != "false" {
			return fmt.Sprintf("Invalid value %s for configuration %s: Expected value to be either true or false", v, c.name)
		}
		return ""
	}
	if c.valid != nil {
		if why := c.valid(v); why != "" {
			return fmt.Sprintf("Invalid value %s for configuration %s: %s", v, c.name, why)
		}
		return ""
	}
	if c.enum != nil {
		if !slices.Contains(c.enum, strings.ToLower(v)) {
			return fmt.Sprintf("Invalid value %s for configuration %s: String must be one of: %s", v, c.name, strings.Join(c.enum, ", "))
		}
		return ""
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", v, c.name)
	}
	if n < c.atLeast {
		return fmt.Sprintf("Invalid value %d for configuration %s: Value must be at least %d", n, c.name, c.atLeast)
	}
	lo, hi, loName, hiName := c.bounds(s)
	switch {
	case n < lo && loName == "":
		return fmt.Sprintf("Invalid value %d for configuration %s: Value must be at least %d", n, c.name, lo)
	case n < lo:
		return fmt.Sprintf("%s must be greater than or equal to %s (%d)", c.name, loName, lo)
	case n > hi:
		return fmt.Sprintf("%s must be less than or equal to %s (%d)", c.name, hiName, hi)
	}
	return ""
}

// Kafka's bounds of the consumer and share groups' session timeouts and
// heartbeat intervals (group.consumer.min.session.timeout.ms …), widened
// to take in the node's own defaults when those are set outside them.
const (
	kafkaMinSessionMs, kafkaMaxSessionMs     = 45000, 60000
	kafkaMinHeartbeatMs, kafkaMaxHeartbeatMs = 5000, 15000
)

func (s *Server) sessionBounds() (lo, hi int64) {
	d := s.cfg.ConsumerSessionTimeout.Milliseconds()
	return min(kafkaMinSessionMs, d), max(kafkaMaxSessionMs, d)
}

func (s *Server) heartbeatBounds() (lo, hi int64) {
	d := s.cfg.ConsumerHeartbeatInterval.Milliseconds()
	return min(kafkaMinHeartbeatMs, d), max(kafkaMaxHeartbeatMs, d)
}

func consumerSession(s *Server) (int64, int64, string, string) {
	lo, hi := s.sessionBounds()
	return lo, hi, "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"
}

func consumerHeartbeat(s *Server) (int64, int64, string, string) {
	lo, hi := s.heartbeatBounds()
	return lo, hi, "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"
}

func fixed(lo, hi int64, loName, hiName string) func(*Server) (int64, int64, string, string) {
	return func(*Server) (int64, int64, string, string) { return lo, hi, loName, hiName }
}

// Kafka's bounds of the share groups' configs (GroupCoordinatorConfig's
// group.share.min/max.session.timeout.ms and
// group.share.min/max.heartbeat.interval.ms, the same as the consumer
// groups'; ShareGroupConfig's group.share.min/max.record.lock.duration.ms
// and, with KIP-1240, group.share.min/max.delivery.count.limit and
// group.share.min.partition.max.record.locks; the greatest in-flight
// limit is the share coordinator's MaxRecordLocks,
// group.share.max.partition.max.record.locks), each widened to take in
// the node's own default when that is set outside them.
const (
	kafkaMinLockMs, kafkaMaxLockMs          = 15000, 60000
	kafkaMinDeliveryLimit, kafkaMaxDelivery = 2, 10
	kafkaMinRecordLocks                     = 100
	kafkaMaxRecordLocks                     = 10000
)

// widen is the bounds lo..hi taken out to def.
func widen(lo, hi, def int64) (int64, int64) { return min(lo, def), max(hi, def) }

func shareSessionBounds(s *Server) (int64, int64, string, string) {
	lo, hi := widen(kafkaMinSessionMs, kafkaMaxSessionMs, s.cfg.ShareSessionTimeout.Milliseconds())
	return lo, hi, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"
}

func shareHeartbeatBounds(s *Server) (int64, int64, string, string) {
	lo, hi := widen(kafkaMinHeartbeatMs, kafkaMaxHeartbeatMs, s.cfg.ShareHeartbeatInterval.Milliseconds())
	return lo, hi, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"
}

func shareLockBounds(s *Server) (int64, int64, string, string) {
	lo, hi := widen(kafkaMinLockMs, kafkaMaxLockMs, s.shareLimits().LockDuration.Milliseconds())
	return lo, hi, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"
}

func shareDeliveryBounds(s *Server) (int64, int64, string, string) {
	lo, hi := widen(kafkaMinDeliveryLimit, kafkaMaxDelivery, int64(s.shareLimits().DeliveryLimit))
	return lo, hi, "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"
}

func shareRecordLocksBounds(s *Server) (int64, int64, string, string) {
	lo := min(kafkaMinRecordLocks, int64(s.shareLimits().MaxInFlight))
	return lo, int64(s.shareMaxRecordLocks()), "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"
}

// shareLimits are the share coordinator's defaults of a share group's
// limits (the node's group.share.delivery.count.limit,
// group.share.record.lock.duration.ms and
// group.share.partition.max.record.locks); Kafka's without one.
func (s *Server) shareLimits() sharestate.Limits {
	if s.cfg.Share != nil {
		return s.cfg.Share.Limits()
	}
	return sharestate.Config{}.WithDefaults().Limits
}

// shareMaxRecordLocks is the most a share group's
// share.partition.max.record.locks may be.
func (s *Server) shareMaxRecordLocks() int {
	if s.cfg.Share != nil {
		return s.cfg.Share.MaxRecordLocks()
	}
	return kafkaMaxRecordLocks
}

// brokerDynamicConfigs are the broker configs that change while Cohort
// runs, sorted by name.
var brokerDynamicConfigs = []dynConfig{
	{name: "errors.deadletterqueue.auto.create.topics.enable", boolean: true, doc: "Whether a share group's dead-letter topic (errors.deadletterqueue.topic.name) that does not exist is created, with errors.deadletterqueue.group.enable=true, when a record first goes to it (KIP-1191)."},
	{name: "errors.deadletterqueue.topic.name.prefix", valid: anyString, doc: "The prefix every share group's dead-letter topic name must have (KIP-1191); empty: any name."},
	{name: "group.consumer.heartbeat.interval.ms", bounds: consumerHeartbeat, doc: "The heartbeat interval given to consumer group members (KIP-848) whose group sets none; applies at each member's next heartbeat."},
	{name: "group.consumer.session.timeout.ms", bounds: consumerSession, doc: "How long a consumer group member (KIP-848) may go without a heartbeat, for groups that set none; applies at each member's next heartbeat."},
	{name: "max.connections", bounds: fixed(1, math.MaxInt32, "", ""), doc: "Most open Kafka connections of a node; applies to new connections."},
	{name: "max.connections.per.ip", bounds: fixed(1, math.MaxInt32, "", ""), doc: "Most open Kafka connections from one IP address; applies to new connections."},
}

// groupConfigs are the configs a group can set (Kafka's GroupConfig, 4.2;
// share.delivery.count.limit and share.partition.max.record.locks are
// KIP-1240's, Kafka 4.3), sorted by name, with the types, least values
// and bounds Kafka checks them against.
var groupConfigs = []dynConfig{
	{name: "consumer.heartbeat.interval.ms", atLeast: 1, bounds: consumerHeartbeat, doc: "The heartbeat interval given to the group's members; applies at each member's next heartbeat."},
	{name: "consumer.session.timeout.ms", atLeast: 1, bounds: consumerSession, doc: "How long a member of the group may go without a heartbeat before it is fenced; applies at each member's next heartbeat."},
	{name: "errors.deadletterqueue.copy.record.enable", boolean: true, doc: "Whether the share group's dead letters carry the key and value of the record they stand for (KIP-1191); false: headers only."},
	{name: "errors.deadletterqueue.topic.name", valid: validDLQTopic, doc: "The share group's dead-letter topic (KIP-1191): records its members reject, or that reach the delivery limit, are written there (one per record, with __dlq.errors.* headers) before they are archived; applies to records acquired from then. Empty: none."},
	{name: "share.auto.offset.reset", valid: validShareReset, doc: "Where a share group starts on a partition it has no position in: latest, earliest, or by_duration:<ISO-8601 duration> (the first record no older than that, KIP-1106); applies to partitions the group starts on from then."},
	{name: "share.delivery.count.limit", atLeast: 2, bounds: shareDeliveryBounds, doc: "How many times a record is delivered to a share group before it is archived; applies to records acquired from then."},
	{name: "share.heartbeat.interval.ms", atLeast: 1, bounds: shareHeartbeatBounds, doc: "The heartbeat interval given to a share group's members; applies at each member's next heartbeat."},
	{name: "share.isolation.level", enum: []string{"read_committed", "read_uncommitted"}, doc: "read_committed delivers transactional records only once committed (aborted ones are archived); read_uncommitted delivers every record. Applies to the group's next fetches."},
	{name: "share.partition.max.record.locks", atLeast: kafkaMinRecordLocks, bounds: shareRecordLocksBounds, doc: "Most records of a partition a share group has in flight (acquired, or available again after a delivery); applies to the group's next fetches."},
	{name: "share.record.lock.duration.ms", atLeast: 1000, bounds: shareLockBounds, doc: "How long a share group member holds the records it was given before they go to another; applies to records acquired from then."},
	{name: "share.session.timeout.ms", atLeast: 1, bounds: shareSessionBounds, doc: "How long a share group member may go without a heartbeat before it is fenced; applies at each member's next heartbeat."},
}

func anyString(string) string { return "" }

// validDLQTopic is Kafka's GroupConfig check of a dead-letter topic name:
// not an internal topic's. The other rules (the prefix, the topic's
// errors.deadletterqueue.group.enable) are checked when a record goes to
// it, as Kafka's.
func validDLQTopic(v string) string {
	if strings.HasPrefix(v, "__") {
		return "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
	}
	return ""
}

// validShareReset is Kafka's ShareGroupAutoOffsetResetStrategy.Validator
// (KIP-1106): latest, earliest, or by_duration: and a non-negative
// ISO-8601 duration.
func validShareReset(v string) string {
	if _, _, ok := parseShareReset(v); ok {
		return ""
	}
	return "Invalid value `" + v + "` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
}

// groupConfigDefault is a share group config's default, as Kafka's
// GroupConfig takes it: the node's group.share.* where Kafka's follows
// the broker's (GroupCoordinatorConfig.extractGroupConfigMap,
// ShareGroupConfig.extractShareGroupConfigMap), else Kafka's own. The
// consumer groups' are the broker's group.consumer.* values (groupValue).
func (s *Server) groupConfigDefault(name string) string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch name {
	case "errors.deadletterqueue.topic.name":
		return ""
	case "errors.deadletterqueue.copy.record.enable":
		return "false"
	case "share.auto.offset.reset":
		return "latest"
	case "share.isolation.level":
		return "read_uncommitted"
	case "share.heartbeat.interval.ms":
		return itoa(s.cfg.ShareHeartbeatInterval.Milliseconds())
	case "share.session.timeout.ms":
		return itoa(s.cfg.ShareSessionTimeout.Milliseconds())
	case "share.record.lock.duration.ms":
		return itoa(s.shareLimits().LockDuration.Milliseconds())
	case "share.delivery.count.limit":
		return itoa(int64(s.shareLimits().DeliveryLimit))
	case "share.partition.max.record.locks":
		return itoa(int64(s.shareLimits().MaxInFlight))
	}
	return ""
}

func lookupDyn(list []dynConfig, name string) (dynConfig, bool) {
	i, ok := slices.BinarySearchFunc(list, name, func(c dynConfig, n string) int { return cmp.Compare(c.name, n) })
	if !ok {
		return dynConfig{}, false
	}
	return list[i], true
}

// configError is a change Kafka refuses with INVALID_CONFIG; its text is
// Kafka's message.
type configError string

func (e configError) Error() string { return string(e) }

// dynamicConfigs is what this node applies of the unit's config records.
type dynamicConfigs struct {
	// node and cluster are this broker's own dynamic configs and the
	// cluster-wide defaults.
	node, cluster map[string]string
	// groups are the groups' configs, by internal name
	// (topics.Internal(tenant, group)).
	groups map[string]map[string]string
	// machine is what the configs change in a group's machine, resolved
	// once per snapshot rather than at every heartbeat: each group that
	// sets a config by its internal name, and every other group's.
	machine      map[string]machine.GroupConfig
	machineOther machine.GroupConfig
	// share is, likewise, what they change in a share group's ShareFetch
	// and ShareAcknowledge (share_config.go).
	share      map[string]shareGroupConfig
	shareOther shareGroupConfig
}

// applyConfigs takes a snapshot of the global unit: the configs it
// resolves to, and the connection limits at once.
func (s *Server) applyConfigs(snap *global.Snapshot) {
	d := &dynamicConfigs{groups: map[string]map[string]string{}}
	self := strconv.Itoa(int(s.cluster.Self()))
	for r, c := range snap.Configs {
		switch {
		case r.Type == record.ConfigBroker && r.Name == "":
			d.cluster = c
		case r.Type == record.ConfigBroker && r.Name == self:
			d.node = c
		case r.Type == record.ConfigGroup:
			d.groups[r.Name] = c
		}
	}
	s.dyn.Store(d)
	// What the machines get follows from the configs just published
	// (groupValue reads them): a copy with it is published next.
	withMachine := *d
	withMachine.machineOther = s.resolveGroupConfig("")
	withMachine.machine = make(map[string]machine.GroupConfig, len(d.groups))
	withMachine.shareOther = s.resolveShareConfig("")
	withMachine.share = make(map[string]shareGroupConfig, len(d.groups))
	for name := range d.groups {
		withMachine.machine[name] = s.resolveGroupConfig(name)
		withMachine.share[name] = s.resolveShareConfig(name)
	}
	s.dyn.Store(&withMachine)
	maxConns, _ := strconv.Atoi(s.brokerValue("max.connections").value)
	perIP, _ := strconv.Atoi(s.brokerValue("max.connections.per.ip").value)
	if perIP == math.MaxInt32 {
		perIP = 0 // Kafka's "no limit"
	}
	s.mu.Lock()
	s.maxConns, s.maxConnsPerIP = maxConns, perIP
	s.mu.Unlock()
}

// resolved is a config's value and where it came from.
type resolved struct {
	value  string
	source kmsg.ConfigSource
	// synonyms are the places it is set, the one in force first
	// (DescribeConfigs' synonyms).
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

func synonym(name, value string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	syn.Name, syn.Value, syn.Source = name, errPtr(value), src
	return syn
}

// brokerValue resolves a dynamic broker config on this node.
func (s *Server) brokerValue(name string) resolved {
	var r resolved
	d := s.dyn.Load()
	if v, ok := d.node[name]; ok {
		r.synonyms = append(r.synonyms, synonym(name, v, kmsg.ConfigSourceDynamicBrokerConfig))
	}
	if v, ok := d.cluster[name]; ok {
		r.synonyms = append(r.synonyms, synonym(name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig))
	}
	r.synonyms = append(r.synonyms, synonym(name, s.staticBrokerValue(name), kmsg.ConfigSourceStaticBrokerConfig))
	r.value, r.source = *r.synonyms[0].Value, r.synonyms[0].Source
	return r
}

// staticBrokerValue is a dynamic broker config's value from the node's
// own configuration.
func (s *Server) staticBrokerValue(name string) string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch name {
	case "errors.deadletterqueue.auto.create.topics.enable":
		return "false"
	case "errors.deadletterqueue.topic.name.prefix":
		return "dlq."
	case "group.consumer.heartbeat.interval.ms":
		return itoa(s.cfg.ConsumerHeartbeatInterval.Milliseconds())
	case "group.consumer.session.timeout.ms":
		return itoa(s.cfg.ConsumerSessionTimeout.Milliseconds())
	case "max.connections":
		return itoa(int64(s.cfg.MaxConnections))
	case "max.connections.per.ip":
		if s.cfg.MaxConnectionsPerIP <= 0 {
			return itoa(math.MaxInt32)
		}
		return itoa(int64(s.cfg.MaxConnectionsPerIP))
	}
	return ""
}

// groupValue resolves a group config of the group with internal name
// group.
func (s *Server) groupValue(group, name string) resolved {
	var r resolved
	if v, ok := s.dyn.Load().groups[group][name]; ok {
		r.synonyms = append(r.synonyms, synonym(name, v, kmsg.ConfigSourceGroupConfig))
	}
	if strings.HasPrefix(name, "consumer.") {
		b := s.brokerValue("group." + name)
		for _, syn := range b.synonyms {
			syn.Name = "group." + name
			r.synonyms = append(r.synonyms, syn)
		}
	} else {
		r.synonyms = append(r.synonyms, synonym(name, s.groupConfigDefault(name), kmsg.ConfigSourceDefaultConfig))
	}
	r.value, r.source = *r.synonyms[0].Value, r.synonyms[0].Source
	return r
}

// ConfigValue is a config as it resolves: its value and where that is
// set.
type ConfigValue struct {
	Name, Value string
	// Source is where Value is set: kmsg.ConfigSourceGroupConfig (the
	// group's own), DynamicBrokerConfig or DynamicDefaultBrokerConfig (a
	// group.* broker config of this broker or the cluster),
	// StaticBrokerConfig (the node's flag) or DefaultConfig (Kafka's).
	Source kmsg.ConfigSource
}

// GroupConfigs are the configs of group of tenant as DescribeConfigs
// reports them (groupConfigEntries), sorted by name: for the admin API.
// The group need not exist.
func (s *Server) GroupConfigs(tenant, group string) []ConfigValue {
	var out []ConfigValue
	for _, e := range s.groupConfigEntries(topics.Internal(tenant, group)) {
		out = append(out, ConfigValue{Name: e.name, Value: e.value, Source: e.source})
	}
	return out
}

// groupConfigFor is what a group's configs change in its machine: zero
// where neither the group nor the cluster sets one (the shard's
// defaults are the node's flags, the same as groupConfigDefault's).
func (s *Server) groupConfigFor(tenant, group string) machine.GroupConfig {
	d := s.dyn.Load()
	if len(d.machine) > 0 {
		if gc, ok := d.machine[topics.Internal(tenant, group)]; ok {
			return gc
		}
	}
	return d.machineOther
}

// resolveGroupConfig is groupConfigFor's answer for the group with
// internal name group ("": one that sets nothing), from the configs
// published.
func (s *Server) resolveGroupConfig(group string) machine.GroupConfig {
	ms := func(name string) time.Duration {
		r := s.groupValue(group, name)
		if r.source == kmsg.ConfigSourceStaticBrokerConfig || r.source == kmsg.ConfigSourceDefaultConfig {
			return 0
		}
		n, _ := strconv.ParseInt(r.value, 10, 64)
		return time.Duration(n) * time.Millisecond
	}
	return machine.GroupConfig{
		SessionTimeout:    ms("consumer.session.timeout.ms"),
		HeartbeatInterval: ms("consumer.heartbeat.interval.ms"),

		ShareSessionTimeout:    ms("share.session.timeout.ms"),
		ShareHeartbeatInterval: ms("share.heartbeat.interval.ms"),
	}
}

// validateBroker checks a broker resource's configs as they would be.
func (s *Server) validateBroker(configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		c, _ := lookupDyn(brokerDynamicConfigs, name)
		if msg := c.check(s, configs[name]); msg != "" {
			return configError(msg)
		}
	}
	return nil
}

// validateGroup checks a group's configs as they would be, each and
// together (Kafka's GroupConfig.validate): a session timeout above the
// heartbeat interval, the broker's defaults filling in what the group
// does not set.
func (s *Server) validateGroup(group string) func(map[string]string) error {
	return func(configs map[string]string) error {
		for _, name := range slices.Sorted(maps.Keys(configs)) {
			c, _ := lookupDyn(groupConfigs, name)
			if msg := c.check(s, configs[name]); msg != "" {
				return configError(msg)
			}
		}
		value := func(name string) int64 {
			v, ok := configs[name]
			if !ok {
				v = s.groupValue("", name).value // the defaults
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		for _, kind := range []string{"consumer", "share"} {
			if value(kind+".session.timeout.ms") <= value(kind+".heartbeat.interval.ms") {
				return configError(kind + ".session.timeout.ms must be greater than " + kind + ".heartbeat.interval.ms")
			}
		}
		return nil
	}
}

// Loggers: Cohort logs through one logger, Kafka's "root".

const rootLogger = "root"

// kafkaLogLevels are the levels Kafka's loggers take, and slog's for
// each.
var kafkaLogLevels = map[string]slog.Level{
	"TRACE": slog.LevelDebug, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo,
	"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError,
}

// rootLevel is the root logger's level as Kafka names it.
func (s *Server) rootLevel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logLevelName != "" {
		return s.logLevelName
	}
	switch l := s.cfg.LogLevel.Level(); {
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	}
	return "ERROR"
}

// alterLoggers applies IncrementalAlterConfigs operations to this node's
// loggers, as Kafka's: SET a known level; DELETE and list operations are
// refused for the root logger (the only one).
func (s *Server) alterLoggers(c configChange, validateOnly bool) (int16, string) {
	level := ""
	for _, o := range c.ops {
		if o.name != rootLogger {
			return kerr.InvalidConfig.Code, "Logger " + o.name + " does not exist!"
		}
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet:
			if o.value == nil {
				return kerr.InvalidRequest.Code, "Null value not supported for : " + o.name
			}
			v := strings.ToUpper(*o.value)
			if _, ok := kafkaLogLevels[v]; !ok {
				levels := slices.Sorted(maps.Keys(kafkaLogLevels))
				return kerr.InvalidConfig.Code, fmt.Sprintf("Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s", o.name, *o.value, strings.Join(levels, ", "))
			}
			level = v
		case kmsg.IncrementalAlterConfigOpDelete:
			return kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"
		default:
			return kerr.InvalidRequest.Code, fmt.Sprintf("%s operation is not allowed for the BROKER_LOGGER resource", o.op)
		}
	}
	if level == "" || validateOnly {
		return 0, ""
	}
	s.mu.Lock()
	s.logLevelName = level
	s.mu.Unlock()
	s.cfg.LogLevel.Set(kafkaLogLevels[level])
	s.logger.Warn("log level changed", "logger", rootLogger, "level", level)
	return 0, ""
}

// errConfigs maps an AlterConfigs error of the unit to Kafka's code and
// message.
func errConfigs(err error) (int16, string) {
	var ce configError
	if errors.As(err, &ce) {
		return kerr.InvalidConfig.Code, string(ce)
	}
	return errorCode(err), err.Error()
}
